package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSign: the signature is sha256= and the hex HMAC-SHA256 of the
// timestamp, a dot and the body, as the docs tell a receiver to check it.
func TestSign(t *testing.T) {
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte(`1700000000.{"ref":"main"}`))
	if got, want := Sign([]byte("s3cret"), "1700000000", []byte(`{"ref":"main"}`)), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	a := Sign([]byte("s3cret"), "1700000000", []byte("body"))
	for _, other := range []string{
		Sign([]byte("other"), "1700000000", []byte("body")),
		Sign([]byte("s3cret"), "1700000001", []byte("body")),
		Sign([]byte("s3cret"), "1700000000", []byte("body2")),
		Sign([]byte("s3cret"), "1700000000.", []byte("ody")), // the dot separates
	} {
		if other == a {
			t.Errorf("two different deliveries sign alike: %s", a)
		}
	}
}

// TestTrigger: Client.Trigger posts a signed, stamped delivery with its id
// to /hooks/generic under the base's path, and gives serve's answer: a
// refusal is a Delivery not accepted, its first line printable and bounded;
// a redirect is not followed.
func TestTrigger(t *testing.T) {
	secret := []byte("s3cret")
	for _, tc := range []struct {
		name     string
		code     int
		answer   string
		redirect bool
		accepted bool
		response string
	}{
		{name: "accepted", code: http.StatusAccepted, answer: "reconcile requested\n", accepted: true, response: "reconcile requested"},
		{name: "200 is accepted too", code: http.StatusOK, answer: "ok", accepted: true, response: "ok"},
		{name: "refused", code: http.StatusUnauthorized, answer: "bad signature\nsecond line", response: "bad signature"},
		{name: "control characters blanked", code: http.StatusBadRequest, answer: "a\x1b[31mb\u00ad", response: "a [31mb"},
		{name: "a long answer cut", code: http.StatusBadRequest, answer: strings.Repeat("x", 10000), response: strings.Repeat("x", 300)},
		{name: "a redirect not followed", code: http.StatusFound, redirect: true, response: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *http.Request
			var body string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					t.Error("the redirect was followed")
				}
				b, _ := io.ReadAll(r.Body)
				got, body = r, string(b)
				if tc.redirect {
					http.Redirect(w, r, "/elsewhere", tc.code)
					return
				}
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			base, _ := url.Parse(srv.URL + "/serve/")
			d, err := (&Client{Base: base}).Trigger(context.Background(), secret, "refs/heads/main")
			if err != nil {
				t.Fatal(err)
			}
			if d.Accepted() != tc.accepted || d.Code != tc.code || !strings.HasPrefix(d.Response, strings.TrimSpace(tc.response)) || len(d.Response) > 300+len("…") {
				t.Errorf("delivery %+v, want accepted %t, code %d, response %q", d, tc.accepted, tc.code, tc.response)
			}
			if got.Method != http.MethodPost || got.URL.Path != "/serve/hooks/generic" || body != `{"ref":"refs/heads/main"}` {
				t.Errorf("asked %s %s %s", got.Method, got.URL.Path, body)
			}
			stamp := got.Header.Get("X-Fuelsync-Timestamp")
			if n, err := strconv.ParseInt(stamp, 10, 64); err != nil || time.Since(time.Unix(n, 0)).Abs() > time.Minute {
				t.Errorf("timestamp %q", stamp)
			}
			if sig := got.Header.Get("X-Fuelsync-Signature"); sig != Sign(secret, stamp, []byte(body)) {
				t.Errorf("signature %q, want %q", sig, Sign(secret, stamp, []byte(body)))
			}
			if id := got.Header.Get("X-Fuelsync-Delivery"); id != d.ID || len(id) != 16 {
				t.Errorf("delivery id %q, the Delivery says %q", id, d.ID)
			}
		})
	}
	// serve not answering: an error, not a Delivery.
	base, _ := url.Parse("http://127.0.0.1:1")
	if _, err := (&Client{Base: base}).Trigger(context.Background(), secret, ""); err == nil {
		t.Error("a delivery to no server: no error")
	}
}
