package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Commands of the scripts that receive serve's notifications.

// cmdHTTPReceive: http-receive VAR FILE serves, on a free port of
// 127.0.0.1, until the script ends: each request is answered 200, and its
// X-Fuelsync-Event and X-Fuelsync-Signature headers (or "-") and its body
// (at most 64 KiB) are appended to FILE as one line. VAR is set to its URL.
func cmdHTTPReceive(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: http-receive VAR FILE")
	}
	f, err := os.OpenFile(ts.MkAbs(args[1]), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	ts.Check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var mu sync.Mutex
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		or := func(s string) string {
			if s == "" {
				return "-"
			}
			return s
		}
		mu.Lock()
		fmt.Fprintf(f, "%s %s %s\n", or(r.Header.Get("X-Fuelsync-Event")), or(r.Header.Get("X-Fuelsync-Signature")), body)
		mu.Unlock()
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close(); f.Close() })
	ts.Setenv(args[0], "http://"+ln.Addr().String())
}

// cmdFileWait: file-wait FILE REGEXP... waits (at most 30 s) until FILE
// matches every REGEXP (multi-line mode), then prints it.
func cmdFileWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: file-wait FILE REGEXP...")
	}
	var res []*regexp.Regexp
	for _, r := range args[1:] {
		re, err := regexp.Compile("(?m)" + r)
		ts.Check(err)
		res = append(res, re)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(ts.MkAbs(args[0]))
		ok := true
		for _, re := range res {
			ok = ok && re.Match(data)
		}
		if ok {
			ts.Stdout().Write(data)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s does not match %q after 30s:\n%s", args[0], args[1:], data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
