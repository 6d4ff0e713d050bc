package redact

import (
	"net/url"
	"regexp"
	"sync"
)

// URL is rawURL without its credentials, fit for a log, a status or an
// error: url.URL.Redacted replaces a password with xxxxx; a user name without a
// password over HTTP(S) is a token too (https://TOKEN@host/repo.git) and is
// replaced the same way. An ssh user name (git@host:path) is kept. A string that
// does not parse as a URL is returned with every userinfo replaced.
func URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return Text(rawURL)
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		r := *u
		r.User = url.User("xxxxx")
		return r.String()
	}
	return u.String()
}

// userinfo matches the credentials of a URL within any text: scheme://, then
// user[:password]@. An ssh URL's bare user name is kept by URL.
var userinfo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s@"'<>]+@[^\s"'<>]*`) })

// Text replaces the credentials of every URL within text (an error message
// that quotes a remote) as URL does.
func Text(text string) string {
	return userinfo().ReplaceAllStringFunc(text, func(m string) string {
		u, err := url.Parse(m)
		if err != nil || u.User == nil {
			// Not a URL after all: drop everything up to the @.
			i := regexp.MustCompile(`://[^/\s@]+@`).FindStringIndex(m)
			if i == nil {
				return m
			}
			return m[:i[0]] + "://xxxxx@" + m[i[1]:]
		}
		return URL(m)
	})
}
