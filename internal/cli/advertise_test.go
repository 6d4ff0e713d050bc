package cli

import (
	"net"
	"testing"
)

// The advertised URL of a shard: the flag's when set (refused when it is no
// http(s) URL or carries credentials), else http:// and --listen's host with
// the port listened on, and none for a wildcard host.
func TestAdvertiseURL(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	for _, tc := range []struct {
		flag, listen, want string
		bad                bool
	}{
		{listen: "127.0.0.1:0", want: "http://127.0.0.1:4242"},
		{listen: "fuelsync-1.example:8080", want: "http://fuelsync-1.example:4242"},
		{listen: ":8080"},
		{listen: "0.0.0.0:8080"},
		{listen: "[::]:8080"},
		{flag: "https://fs-1.example/", listen: ":8080", want: "https://fs-1.example"},
		{flag: "https://user:pw@fs-1.example", listen: ":8080", bad: true},
		{flag: "ftp://fs-1.example", listen: ":8080", bad: true},
		{flag: "fs-1.example:8080", listen: ":8080", bad: true},
	} {
		got, err := advertiseURL(tc.flag, tc.listen, addr)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("advertiseURL(%q, %q) = %q, %v; want %q (error: %v)", tc.flag, tc.listen, got, err, tc.want, tc.bad)
		}
	}
}
