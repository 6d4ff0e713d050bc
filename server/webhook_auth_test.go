package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWebhookAuthentication sends each provider's deliveries over real HTTP on
// 127.0.0.1: a correctly signed one is accepted (202) and triggers a
// reconcile; one with the header missing, a wrong signature or token, a
// signature over another body, with another secret, or in another provider's
// form is refused with 401 and triggers nothing. A server without a secret
// refuses them all.
func TestWebhookAuthentication(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"ref":"refs/heads/main","after":"0123456789abcdef0123456789abcdef01234567"}`)
	other := []byte(`{"ref":"refs/heads/main","after":"fedcba9876543210fedcba9876543210fedcba98"}`)
	hexMAC := func(key, data []byte) string {
		mac := hmac.New(sha256.New, key)
		mac.Write(data)
		return hex.EncodeToString(mac.Sum(nil))
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-ReplayWindow-time.Minute).Unix(), 10)
	soon := strconv.FormatInt(time.Now().Add(ReplayWindow+time.Minute).Unix(), 10)
	type delivery struct {
		name   string
		header map[string]string
		body   []byte // nil: body
		want   int
		// why a 401 says: "" for "no <header> header" (checked before the
		// body is read) when the header is missing, else "bad signature".
		why string
	}
	big := bytes.Repeat([]byte(" "), MaxWebhookBody+1)
	cases := map[string][]delivery{
		"github": {
			{"signed", map[string]string{"X-Hub-Signature-256": "sha256=" + hexMAC(secret, body)}, nil, 202, ""},
			{"no signature header", map[string]string{}, nil, 401, ""},
			{"no signature header, and a body over the limit", map[string]string{}, big, 401, ""},
			{"an empty signature header", map[string]string{"X-Hub-Signature-256": ""}, nil, 401, ""},
			{"another secret", map[string]string{"X-Hub-Signature-256": "sha256=" + hexMAC([]byte("wrong"), body)}, nil, 401, ""},
			{"the signature of another body", map[string]string{"X-Hub-Signature-256": "sha256=" + hexMAC(secret, other)}, nil, 401, ""},
			{"without sha256=", map[string]string{"X-Hub-Signature-256": hexMAC(secret, body)}, nil, 401, ""},
			{"the SHA-1 header only", map[string]string{"X-Hub-Signature": "sha1=" + hexMAC(secret, body)}, nil, 401, ""},
			{"GitLab's token", map[string]string{"X-Gitlab-Token": string(secret)}, nil, 401, ""},
		},
		"gitlab": {
			{"the token", map[string]string{"X-Gitlab-Token": string(secret)}, nil, 202, ""},
			{"no token header", map[string]string{}, nil, 401, ""},
			{"no token header, and a body over the limit", map[string]string{}, big, 401, ""},
			{"a wrong token", map[string]string{"X-Gitlab-Token": "wrong"}, nil, 401, ""},
			{"the token with a suffix", map[string]string{"X-Gitlab-Token": string(secret) + "x"}, nil, 401, ""},
			{"a prefix of the token", map[string]string{"X-Gitlab-Token": string(secret[:len(secret)-1])}, nil, 401, ""},
			{"the token in another case", map[string]string{"X-Gitlab-Token": strings.ToUpper(string(secret))}, nil, 401, ""},
			{"GitHub's signature", map[string]string{"X-Hub-Signature-256": "sha256=" + hexMAC(secret, body)}, nil, 401, ""},
		},
		"gitea": {
			{"signed", map[string]string{"X-Gitea-Signature": hexMAC(secret, body)}, nil, 202, ""},
			{"no signature header", map[string]string{}, nil, 401, ""},
			{"no signature header, and a body over the limit", map[string]string{}, big, 401, ""},
			{"another secret", map[string]string{"X-Gitea-Signature": hexMAC([]byte("wrong"), body)}, nil, 401, ""},
			{"the signature of another body", map[string]string{"X-Gitea-Signature": hexMAC(secret, other)}, nil, 401, ""},
			{"GitHub's form (sha256=)", map[string]string{"X-Gitea-Signature": "sha256=" + hexMAC(secret, body)}, nil, 401, ""},
			{"the secret as a token", map[string]string{"X-Gitea-Signature": string(secret)}, nil, 401, ""},
		},
		"generic": {
			{"signed", map[string]string{"X-Fuelsync-Timestamp": now, "X-Fuelsync-Signature": api.Sign(secret, now, body)}, nil, 202, ""},
			{"no signature header", map[string]string{"X-Fuelsync-Timestamp": now}, nil, 401, ""},
			{"no signature header, and a body over the limit", map[string]string{"X-Fuelsync-Timestamp": now}, big, 401, ""},
			{"no timestamp", map[string]string{"X-Fuelsync-Signature": api.Sign(secret, now, body)}, nil, 401, "X-Fuelsync-Timestamp"},
			{"another secret", map[string]string{"X-Fuelsync-Timestamp": now, "X-Fuelsync-Signature": api.Sign([]byte("wrong"), now, body)}, nil, 401, ""},
			{"the signature of another body", map[string]string{"X-Fuelsync-Timestamp": now, "X-Fuelsync-Signature": api.Sign(secret, now, other)}, nil, 401, ""},
			{"the body signed without the timestamp", map[string]string{"X-Fuelsync-Timestamp": now, "X-Fuelsync-Signature": "sha256=" + hexMAC(secret, body)}, nil, 401, ""},
			{"another timestamp than the signed one", map[string]string{"X-Fuelsync-Timestamp": strconv.FormatInt(time.Now().Unix()-1, 10), "X-Fuelsync-Signature": api.Sign(secret, now, body)}, nil, 401, ""},
			{"signed, before the replay window", map[string]string{"X-Fuelsync-Timestamp": old, "X-Fuelsync-Signature": api.Sign(secret, old, body)}, nil, 401, "X-Fuelsync-Timestamp"},
			{"signed, after the replay window", map[string]string{"X-Fuelsync-Timestamp": soon, "X-Fuelsync-Signature": api.Sign(secret, soon, body)}, nil, 401, "X-Fuelsync-Timestamp"},
			{"a timestamp that is not a number", map[string]string{"X-Fuelsync-Timestamp": "now", "X-Fuelsync-Signature": api.Sign(secret, "now", body)}, nil, 401, "X-Fuelsync-Timestamp"},
		},
	}

	for _, tc := range []struct {
		name   string
		secret []byte
	}{{"with a secret", secret}, {"without a secret", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&controller.Loop{}, tc.secret)
			triggers := make(chan struct{}, 1)
			s.trigger = func() {
				select {
				case triggers <- struct{}{}:
				default:
				}
			}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
				t.Fatalf("the server is not on 127.0.0.1: %s", srv.URL)
			}
			for provider, deliveries := range cases {
				for _, d := range deliveries {
					b := body
					if d.body != nil {
						b = d.body
					}
					req, err := http.NewRequest(http.MethodPost, srv.URL+"/hooks/"+provider, bytes.NewReader(b))
					if err != nil {
						t.Fatal(err)
					}
					for k, v := range d.header {
						req.Header.Set(k, v)
					}
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					want := d.want
					if tc.secret == nil {
						want = http.StatusUnauthorized
					}
					triggered := false
					select {
					case <-triggers:
						triggered = true
					default:
					}
					if resp.StatusCode != want || triggered != (want == http.StatusAccepted) {
						t.Errorf("%s, %s: %d (%s), a reconcile triggered: %t; want %d", provider, d.name, resp.StatusCode, bytes.TrimSpace(msg), triggered, want)
						continue
					}
					why := d.why
					switch {
					case tc.secret == nil:
						why = "no webhook secret is configured"
					case d.header[signatureHeader(provider)] == "":
						why = "no " + signatureHeader(provider) + " header"
					case why == "":
						why = "bad signature"
					}
					if want == http.StatusUnauthorized && !bytes.Contains(msg, []byte(why)) {
						t.Errorf("%s, %s: 401 says %q, want %q", provider, d.name, bytes.TrimSpace(msg), why)
					}
				}
			}
		})
	}
}
