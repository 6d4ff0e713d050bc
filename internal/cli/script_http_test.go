package cli

import (
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/rogpeppe/go-internal/testscript"
)

// Commands of the scripts that run serve in the background and talk to it
// over HTTP on loopback.

// cmdFreePort: free-port VAR sets VAR to a TCP port free on 127.0.0.1.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: free-port VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ts.Check(ln.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdHeadSHA: head-sha DIR VAR sets VAR to the commit HEAD of the repository
// DIR names.
func cmdHeadSHA(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: head-sha DIR VAR")
	}
	repo, err := git.PlainOpen(ts.MkAbs(args[0]))
	ts.Check(err)
	head, err := repo.Head()
	ts.Check(err)
	ts.Setenv(args[1], head.Hash().String())
}

// cmdHTTPWait: http-wait [-token FILE] [-timeout D] URL REGEXP... GETs URL
// until its body matches every REGEXP (multi-line mode), for at most D (30s).
// The last body is written to stdout.
func cmdHTTPWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! http-wait")
	}
	fl := flag.NewFlagSet("http-wait", flag.ContinueOnError)
	token := fl.String("token", "", "bearer token file")
	timeout := fl.Duration("timeout", 30*time.Second, "how long to wait")
	if err := fl.Parse(args); err != nil || fl.NArg() < 2 {
		ts.Fatalf("usage: http-wait [-token FILE] [-timeout D] URL REGEXP...")
	}
	var res []*regexp.Regexp
	for _, r := range fl.Args()[1:] {
		re, err := regexp.Compile("(?m)" + r)
		ts.Check(err)
		res = append(res, re)
	}
	deadline := time.Now().Add(*timeout)
	var body string
	for {
		code, b, err := httpDo(ts, http.MethodGet, fl.Arg(0), *token)
		body = b
		if err == nil && code == http.StatusOK {
			ok := true
			for _, re := range res {
				ok = ok && re.MatchString(body)
			}
			if ok {
				ts.Stdout().Write([]byte(body))
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("http-wait %s: after %v, status %d, error %v, body:\n%s", fl.Arg(0), *timeout, code, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cmdHTTPPost: http-post [-token FILE] [-body TEXT] URL CODE POSTs TEXT (by
// default nothing) to URL and fails unless the answer's status is CODE; the
// answer's body is written to stdout.
func cmdHTTPPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! http-post")
	}
	fl := flag.NewFlagSet("http-post", flag.ContinueOnError)
	token := fl.String("token", "", "bearer token file")
	send := fl.String("body", "", "the request's body")
	if err := fl.Parse(args); err != nil || fl.NArg() != 2 {
		ts.Fatalf("usage: http-post [-token FILE] [-body TEXT] URL CODE")
	}
	code, body, err := httpSend(ts, http.MethodPost, fl.Arg(0), *token, *send)
	ts.Check(err)
	ts.Stdout().Write([]byte(body))
	if strconv.Itoa(code) != fl.Arg(1) {
		ts.Fatalf("http-post %s: status %d, want %s: %s", fl.Arg(0), code, fl.Arg(1), body)
	}
}

func httpDo(ts *testscript.TestScript, method, url, tokenFile string) (int, string, error) {
	return httpSend(ts, method, url, tokenFile, "")
}

// httpSend is httpDo with body as the request's body.
func httpSend(ts *testscript.TestScript, method, url, tokenFile, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if tokenFile != "" {
		data, err := os.ReadFile(ts.MkAbs(tokenFile))
		ts.Check(err)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(data)))
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b), err
}

// cmdHTTPServe: http-serve VAR CODE FILE serves, on a free port of
// 127.0.0.1, every request with status CODE and FILE's bytes as a JSON body,
// until the script ends; VAR is set to its URL. It stands for a serve that
// answers what it should not (a hostile or broken one).
func cmdHTTPServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: http-serve VAR CODE FILE")
	}
	code, err := strconv.Atoi(args[1])
	ts.Check(err)
	body, err := os.ReadFile(ts.MkAbs(args[2]))
	ts.Check(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(body)
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv(args[0], "http://"+ln.Addr().String())
}
