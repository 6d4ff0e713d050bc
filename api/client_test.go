package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// serveOnce is a serve on loopback that answers every request with code and
// body, and records the last request's method, path, body and token.
type serveOnce struct {
	method, path, body, auth string
}

func (s *serveOnce) client(t *testing.T, code int, body, token string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		s.method, s.path, s.body, s.auth = r.Method, r.URL.Path, string(data), r.Header.Get("Authorization")
		if code/100 == 3 {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return &Client{Base: u, Token: token}
}

// TestApprove: an approval without a revision sends no body (serve approves
// whichever plan awaits), with one {"revision": REV}; the answer is the plan
// approved, its summary as serve wrote it.
func TestApprove(t *testing.T) {
	for _, tc := range []struct {
		revision, wantBody string
	}{
		{"", ""},
		{"abc1234", `{"revision":"abc1234"}`},
	} {
		var s serveOnce
		c := s.client(t, 202, `{"approved": true, "cluster": "demo", "digest": "d1", "revision": "r1", "summary": {"add": 1}}`, "tok")
		a, err := c.Approve(context.Background(), "de mo", tc.revision)
		if err != nil {
			t.Fatal(err)
		}
		if s.method != http.MethodPost || s.path != "/api/v1/clusters/de mo/approve" || s.body != tc.wantBody || s.auth != "Bearer tok" {
			t.Errorf("revision %q: sent %s %s %q (%s), want POST .../approve %q", tc.revision, s.method, s.path, s.body, s.auth, tc.wantBody)
		}
		if !a.Approved || a.Cluster != "demo" || a.Digest != "d1" || a.Revision != "r1" || string(a.Summary) != `{"add": 1}` {
			t.Errorf("answer %+v", a)
		}
	}
}

// TestClientErrors: an answer outside 2xx is a StatusError with the first
// line of its body, control characters blanked; a redirect is not followed;
// the token is in no error.
func TestClientErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		body string
		want string
	}{
		{"conflict", 409, "cannot approve: newer\nsecond line", "409 Conflict: cannot approve: newer"},
		{"escape", 500, "::error::boom \x1b[2J\nmore", "500 Internal Server Error: ::error::boom  [2J"},
		{"token echoed", 401, "bad token s3cret-token", "401 Unauthorized: bad token <token>"},
		{"redirect", 302, "", "302 Found: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s serveOnce
			c := s.client(t, tc.code, tc.body, "s3cret-token")
			var lines []map[string]any
			err := c.Clusters(context.Background(), &lines)
			if err == nil || err.Error() != tc.want || Code(err) != tc.code {
				t.Fatalf("error %v (code %d), want %q", err, Code(err), tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the token in the error: %v", err)
			}
			if s.path != ClustersPath {
				t.Errorf("asked %s, want %s", s.path, ClustersPath)
			}
		})
	}
}
