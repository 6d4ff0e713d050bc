//go:build linux

package cli

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/server"
)

var (
	burst       = flag.Bool("burst", false, "run the agent bursts against serve with its default limits and report figures (make burst)")
	burstAgents = flag.String("burst-agents", "5000,10000", "the sizes of the bursts of -burst, comma-separated")
)

// TestBurstAgents: thousands of agents come back at once (after an apply or a
// restart), each opening a long-poll (If-None-Match and ?wait=60s) at the same
// moment, against one `fuelsync serve` with its default limits (256
// connections, 10,000 waiting requests). It runs only with -burst (make burst),
// once for each size of -burst-agents (5,000 and 10,000), on a new serve each
// time.
//
// Every agent must be answered: it waits (then a commit changes every node's
// default graph, and each waiting agent must be answered 200 with its new
// graph), or it is answered 429 with a Retry-After of 5 to 15 seconds. None
// may be closed without an answer. It reports, for each size: held, 429,
// dropped (closed without an answer), other answers, the time until every
// agent waited or was answered, serve's resident memory before and with every
// agent waiting (and per waiting agent), its descriptors, and the p50/p99 of
// the wake-up after the apply.
//
// FUELSYNC_BURST_BIN=path runs another build of fuelsync-server (the version
// before the fix closed 4,744 of 5,000 agents without an answer).
func TestBurstAgents(t *testing.T) {
	if !*burst {
		t.Skip("run with -burst (make burst)")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Logf("raising RLIMIT_NOFILE to %d: %v", lim.Max, err)
	}
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	for _, f := range strings.Split(*burstAgents, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("-burst-agents %q: not a list of positive numbers", *burstAgents)
		}
		if int(lim.Cur) < n+200 {
			t.Fatalf("RLIMIT_NOFILE is %d (hard limit %d): too low for %d agents (raise the hard limit: ulimit -Hn)", lim.Cur, lim.Max, n)
		}
		t.Run(fmt.Sprintf("agents=%d", n), func(t *testing.T) { burstRun(t, n) })
	}
}

// burstResult is what one agent of the burst got.
type burstResult struct {
	code       int
	retryAfter string
	at         time.Time // when the answer came
	err        error     // the connection ended without an answer
}

func burstRun(t *testing.T, agents int) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	s := &soakServer{t: t, repo: repo, wd: wd}
	args := []string{"--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--interval", "1h"}
	if bin := os.Getenv("FUELSYNC_BURST_BIN"); bin != "" {
		s.cmd = exec.Command(bin, args...)
	} else {
		s.cmd = fuelsyncCmd(args...)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	s.addr = serveAddr(t, stderr, 30*time.Second, nil, nil)
	s.base = "http://" + s.addr
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get(s.base + path)
		if err != nil {
			return nil, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	waitUntil := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after %v: %s", d, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("serve ready", 60*time.Second, func() bool { r, _ := get("/readyz"); return r != nil && r.StatusCode == 200 })
	waiting := func() int {
		_, b := get("/metrics")
		m := regexp.MustCompile(`(?m)^fuelsync_api_waiting (\d+)`).FindStringSubmatch(b)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	var paths, etags []string
	for _, c := range []string{"demo", "demo-hcl"} {
		for i := 1; i <= 6; i++ {
			p := fmt.Sprintf("/api/v1/clusters/%s/nodes/node-%d/graphs/default", c, i)
			r, _ := get(p)
			if r == nil || r.StatusCode != 200 || r.Header.Get("ETag") == "" {
				t.Fatalf("GET %s: %v", p, r)
			}
			paths, etags = append(paths, p), append(etags, r.Header.Get("ETag"))
		}
	}
	rssBefore, _ := s.memory()

	// The burst: every agent dials and sends its long-poll at the same moment.
	results := make([]burstResult, agents)
	var mu sync.Mutex
	nAnswered := 0
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			once := sync.OnceFunc(func() { mu.Lock(); nAnswered++; mu.Unlock() })
			defer once()
			<-start
			res := &results[i]
			c, err := net.DialTimeout("tcp", s.addr, 2*time.Minute)
			if err != nil {
				res.err = err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Minute))
			if _, err := fmt.Fprintf(c, "GET %s?wait=60s HTTP/1.1\r\nHost: agent\r\nIf-None-Match: %s\r\n\r\n", paths[i%len(paths)], etags[i%len(etags)]); err != nil {
				res.err = err
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				res.err = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			res.code, res.retryAfter, res.at = resp.StatusCode, resp.Header.Get("Retry-After"), time.Now()
		})
	}
	t0 := time.Now()
	close(start)
	// Settled: every agent waits or has its answer (a 429, or a drop).
	held := 0
	waitUntil("every agent waiting or answered", 50*time.Second, func() bool {
		mu.Lock()
		done := nAnswered
		mu.Unlock()
		held = waiting()
		return held >= 0 && held+done == agents
	})
	settled := time.Since(t0)
	rssHeld, _ := s.memory()
	fds := s.openFiles()

	// The change: the hiera task of every node's default graph.
	commitHieraTimeout(t, repo)
	// serve watches a local repository's commits: no webhook needed.
	current := filepath.Join(wd, "artifacts", "current")
	waitUntil("the commit applied", 60*time.Second, func() bool { l, _ := os.Readlink(current); return l == "2" })
	fi, err := os.Lstat(current)
	if err != nil {
		t.Fatal(err)
	}
	committed := fi.ModTime()
	wg.Wait()

	var woken, deadline, refused, dropped, other int
	var lat []time.Duration
	var firstDrop, firstOther string
	for i, r := range results {
		switch {
		case r.err != nil:
			dropped++
			if firstDrop == "" {
				firstDrop = fmt.Sprintf("agent %d: %v", i, r.err)
			}
		case r.code == 200:
			woken++
			lat = append(lat, r.at.Sub(committed))
		case r.code == 304:
			deadline++
		case r.code == 429:
			refused++
			if sec, err := strconv.Atoi(r.retryAfter); err != nil || sec < server.RetryAfterMin || sec > server.RetryAfterMax {
				other++
				if firstOther == "" {
					firstOther = fmt.Sprintf("agent %d: 429 with Retry-After %q", i, r.retryAfter)
				}
			}
		default:
			other++
			if firstOther == "" {
				firstOther = fmt.Sprintf("agent %d: %d", i, r.code)
			}
		}
	}
	p50, p99 := percentiles(lat)
	perHeld := 0.0
	if held > 0 {
		perHeld = (rssHeld - rssBefore) * 1024 / float64(held)
	}
	t.Logf("BURST %d agents at once: %d held (%d woken by the apply, %d answered 304), %d answered 429, %d closed without an answer, %d other; "+
		"settled in %v; serve RSS %.0f → %.0f MB (%.1f KB per held agent), %d descriptors; apply → answer p50 %v, p99 %v",
		agents, held, woken, deadline, refused, dropped, other, settled.Round(time.Millisecond), rssBefore, rssHeld, perHeld, fds,
		p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	if dropped > 0 {
		t.Errorf("%d agents closed without an answer; the first: %s", dropped, firstDrop)
	}
	if other > 0 {
		t.Errorf("%d agents got something else than a wait or a 429 with Retry-After; the first: %s", other, firstOther)
	}
	if woken+deadline != held {
		t.Errorf("%d agents held, but %d answered after their wait", held, woken+deadline)
	}
	if agents <= server.DefaultMaxWaiting && held != agents {
		t.Errorf("%d of %d agents held with a capacity of %d waiting requests", held, agents, server.DefaultMaxWaiting)
	}
}
