package state

import (
	"slices"
	"testing"
)

// FuzzParseStateURL: any --state value parses or is refused with an error, never
// a panic; what parses names at least one host:port endpoint and a key prefix
// other than the root, and its URL form parses back to the same config.
func FuzzParseStateURL(f *testing.F) {
	for _, s := range []string{
		"etcd://127.0.0.1:2379/fuelsync",
		"etcd://h1:2379,h2:2379,h3:2379/fuelsync/prod/",
		"etcd://h1:2379",
		"etcd://,,/x",
		"etcd://[::1]:2379/x",
		"http://h:1/x",
		"etcd://h/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseURL(s)
		if err != nil {
			return
		}
		if len(c.Endpoints) == 0 || c.Prefix == "/" || c.Prefix == "" || c.Prefix[0] != '/' {
			t.Fatalf("%q parsed to %+v", s, c)
		}
		again, err := ParseURL(c.URL())
		if err != nil || !slices.Equal(again.Endpoints, c.Endpoints) || again.Prefix != c.Prefix {
			t.Fatalf("%q: its URL %q parses to %+v, %v", s, c.URL(), again, err)
		}
	})
}
