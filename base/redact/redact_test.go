package redact

import "testing"

// TestRedactURL: credentials never survive, in a URL or in text quoting one; a
// token given as the user name of an HTTP(S) URL is a credential too, an ssh user
// name is not.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:TOKEN@host/repo.git":  "http://user:xxxxx@host/repo.git",
		"https://TOKEN@github.com/o/r.git": "https://xxxxx@github.com/o/r.git",
		"https://github.com/o/r.git":       "https://github.com/o/r.git",
		"ssh://git@host:22/r.git":          "ssh://git@host:22/r.git",
		"ssh://git:TOKEN@host/r.git":       "ssh://git:xxxxx@host/r.git",
		"git@github.com:o/r.git":           "git@github.com:o/r.git",
		"file:///srv/git/r.git":            "file:///srv/git/r.git",
		"/srv/git/r.git":                   "/srv/git/r.git",
		"http://user:TOK%zzEN@host/":       "http://xxxxx@host/",
		"http://a:TOKEN@host/x":            "http://a:xxxxx@host/x",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`cloning https://u:TOKEN@h/r.git: requesting "https://u:TOKEN@h/r.git/info/refs" failed`: `cloning https://u:xxxxx@h/r.git: requesting "https://u:xxxxx@h/r.git/info/refs" failed`,
		"fetch https://TOKEN@h/r.git (twice: https://TOKEN@h/r.git)":                             "fetch https://xxxxx@h/r.git (twice: https://xxxxx@h/r.git)",
		"no URL here, user@host only": "no URL here, user@host only",
	} {
		if got := Text(in); got != want {
			t.Errorf("Redact(%q) =\n%q, want\n%q", in, got, want)
		}
	}
}
