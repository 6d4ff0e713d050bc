package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestObjects: Client.Objects gives the objects asked in order, checked
// against their digests and bounded, and stops at the first answer that
// breaks a rule.
func TestObjects(t *testing.T) {
	a, b := "alpha\n", "bravo bravo\n"
	sa, sb := sumOf(a), sumOf(b)
	obj := func(sum, data string) string { return fmt.Sprintf("%s %d\n%s", sum, len(data), data) }
	for _, tc := range []struct {
		name   string
		code   int
		answer string
		max    int64
		fail   bool // each refuses the second object
		want   []string
		err    string
	}{
		{name: "both, in order", answer: obj(sa, a) + obj(sb, b), want: []string{a, b}},
		{name: "not 200", code: http.StatusNotFound, answer: "this replica lacks some of these objects\n", err: "404 Not Found: this replica lacks some"},
		{name: "stops before one", answer: obj(sa, a), want: []string{a}, err: "the answer stops before the file " + sb},
		{name: "stops within one", answer: obj(sa, a) + obj(sb, b)[:70], want: []string{a}, err: "the answer stops within the file " + sb},
		{name: "another digest", answer: obj(sb, b) + obj(sa, a), err: "where the file " + sa + " is due"},
		{name: "no size", answer: sa + "\n" + a, err: "where the file " + sa + " is due"},
		{name: "a negative size", answer: sa + " -1\n", err: "where the file " + sa + " is due"},
		{name: "a byte over the bound", answer: obj(sa, a) + obj(sb, b), max: int64(len(b) - 1), want: []string{a}, err: fmt.Sprintf("the file %s is %d bytes, over the bound of %d", sb, len(b), len(b)-1)},
		{name: "at the bound", answer: obj(sa, a) + obj(sb, b), max: int64(len(b)), want: []string{a, b}},
		{name: "bytes of another digest", answer: obj(sa, a) + fmt.Sprintf("%s %d\n%s", sb, len(b), strings.ToUpper(b)), want: []string{a}, err: "does not match the committed digest, refused"},
		{name: "each refuses", answer: obj(sa, a) + obj(sb, b), fail: true, want: []string{a, b}, err: "refused by each"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked, auth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				asked, auth = r.Method+" "+r.URL.Path+" "+string(body), r.Header.Get("Authorization")
				if tc.code != 0 {
					http.Error(w, tc.answer, tc.code)
					return
				}
				io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL + "/")
			c := &Client{Base: u, Token: "s3cret"}
			max := tc.max
			if max == 0 {
				max = 1 << 20
			}
			var got []string
			err := c.Objects(context.Background(), []string{sa, sb}, max, time.Minute, func(sum string, data []byte) error {
				got = append(got, string(data))
				if tc.fail && sum == sb {
					return fmt.Errorf("refused by each")
				}
				return nil
			})
			if want := "POST /api/v1/objects " + sa + "\n" + sb + "\n"; asked != want || auth != "Bearer s3cret" {
				t.Errorf("asked %q with %q; want %q with the token", asked, auth, want)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one with %q", err, tc.err)
			case err != nil && strings.Contains(err.Error(), "s3cret"):
				t.Errorf("the error has the token: %v", err)
			}
		})
	}
	if err := (&Client{}).Objects(context.Background(), []string{sa}, 1, time.Second, nil); err == nil {
		t.Error("no server URL: no error")
	}
}
