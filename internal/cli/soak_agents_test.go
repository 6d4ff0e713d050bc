//go:build linux

package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestSoakArtifactAgents: simulated node agents long-poll their node's graph on
// one `fuelsync serve` process, on loopback. With -soak (make soak) there are
// 10,000 of them; without, 200 (make test). Each agent reads its graph (200, the
// ETag), then waits for a change with If-None-Match and ?wait=. Half read the
// default graph, half the provision graph. A commit then changes the hiera task
// of the default graph (every node's default graph changes, no provision graph
// does), and serve applies it.
//
// It checks that every default-graph agent is answered 200 with the new graph,
// and every provision-graph agent 304 at its deadline (no wake-up for an
// unrelated change). It reports the server's memory per waiting agent (resident
// memory with every agent waiting, less before), the p50/p99 latency from the
// apply's commit point (the mtime of the new artifacts/current link) to each
// answer, and the requests per second of 304 revalidations (If-None-Match,
// no wait) from 32 keep-alive connections.
//
// Each agent holds a socket in the test process and one in serve: the test
// raises its RLIMIT_NOFILE to the hard limit (serve's Go runtime does the same
// for itself) and scales the agents down, saying so, when that is too low.
func TestSoakArtifactAgents(t *testing.T) {
	agents, wait, revalidate := 200, 15*time.Second, 2*time.Second
	if *soak {
		agents, wait, revalidate = 10000, 90*time.Second, 10*time.Second
	}
	if testing.Short() && !*soak {
		t.Skip("a serve process and 200 agents")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Logf("raising RLIMIT_NOFILE to %d: %v", lim.Max, err)
		}
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if room := int(lim.Cur) - 600; room < agents { // the revalidators, the server's own, the test's files
		if room < 10 {
			testenv.Unavailable(t, "RLIMIT_NOFILE is %d: too low for agents", lim.Cur)
		}
		t.Logf("RLIMIT_NOFILE is %d (hard limit %d): %d agents instead of %d", lim.Cur, lim.Max, room, agents)
		agents = room
	}

	// serve on a git repository of examples/quickstart.
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	s := &soakServer{t: t, repo: repo, wd: wd}
	s.cmd = fuelsyncCmd("--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--interval", "1h",
		"--max-waiting", strconv.Itoa(agents), "--max-wait", wait.String(), "--max-connections", "512")
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
	waiting := func() int {
		resp, err := http.Get(s.base + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^fuelsync_api_waiting (\d+)`).FindSubmatch(b)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	waitUntil := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after %v: %s (serve says %d waiting)", d, what, waiting())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	getCode := func(path string) int {
		resp, err := http.Get(s.base + path)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	waitUntil("serve ready", 60*time.Second, func() bool { return getCode("/readyz") == 200 })
	var nodes []string // cluster/node
	for _, c := range []string{"demo", "demo-hcl"} {
		for i := 1; i <= 6; i++ {
			nodes = append(nodes, fmt.Sprintf("%s/nodes/node-%d", c, i))
		}
	}
	rssBefore, _ := s.memory()

	// The agents: read, then wait.
	answers := make([]agentAnswer, agents)
	ready := make(chan struct{}, agents)
	var wg sync.WaitGroup
	var reconnects atomic.Int64
	dial := make(chan struct{}, 64) // connections being opened at once
	start := time.Now()
	for i := range agents {
		graph := "default"
		if i%2 == 1 {
			graph = "provision"
		}
		path := fmt.Sprintf("/api/v1/clusters/%s/graphs/%s", nodes[i%len(nodes)], graph)
		wg.Go(func() {
			once := sync.OnceFunc(func() { ready <- struct{}{} })
			defer once()
			var err error
			for attempt := range 10 {
				if attempt > 0 {
					// Closed to make room (the connection cap closes idle and
					// new connections first): an agent reconnects.
					reconnects.Add(1)
					time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
				}
				var a agentAnswer
				if a, err = agentRound(s.addr, path, wait, dial, once); err == nil {
					answers[i] = a
					return
				}
			}
			answers[i].err = err
		})
	}
	for range agents {
		<-ready
	}
	var refused []string
	for i, a := range answers {
		if a.err != nil {
			refused = append(refused, fmt.Sprintf("agent %d: %v", i, a.err))
		}
	}
	if len(refused) > 0 {
		t.Fatalf("%d of %d agents failed before waiting, the first: %s", len(refused), agents, refused[0])
	}
	waitUntil(fmt.Sprintf("%d agents waiting", agents), wait/2, func() bool { return waiting() == agents })
	connected := time.Since(start)
	rssWaiting, _ := s.memory()
	fds := s.openFiles()

	// The change: the hiera task (every node's default graph) times out later.
	commitHieraTimeout(t, repo)
	current := filepath.Join(wd, "artifacts", "current")
	waitUntil("the commit applied", wait/2, func() bool { l, _ := os.Readlink(current); return l == "2" })
	fi, err := os.Lstat(current)
	if err != nil {
		t.Fatal(err)
	}
	committed := fi.ModTime() // the new link, made just before its rename (the commit point)

	// Revalidation: 304s from 32 keep-alive connections, while the
	// provision-graph agents still wait.
	var revalidated, wrong atomic.Int64
	var rwg sync.WaitGroup
	stopAt := time.Now().Add(revalidate)
	for k := range 32 {
		rwg.Go(func() {
			path := fmt.Sprintf("/api/v1/clusters/%s/graphs/provision", nodes[k%len(nodes)])
			c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
			if err != nil {
				wrong.Add(1)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: agent\r\n\r\n", path)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				wrong.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: agent\r\nIf-None-Match: %s\r\n\r\n", path, resp.Header.Get("ETag"))
			for time.Now().Before(stopAt) {
				io.WriteString(c, req)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					wrong.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 304 {
					wrong.Add(1)
					return
				}
				revalidated.Add(1)
			}
		})
	}
	rwg.Wait()
	rps := float64(revalidated.Load()) / revalidate.Seconds()
	if wrong.Load() > 0 {
		t.Errorf("%d revalidating connections got something else than 304", wrong.Load())
	}

	wg.Wait()
	var lat []time.Duration
	var failed, unchanged int
	for i, a := range answers {
		switch {
		case a.err != nil:
			failed++
			if failed <= 5 {
				t.Errorf("agent %d: %v", i, a.err)
			}
		case i%2 == 0 && a.code == 200:
			lat = append(lat, a.at.Sub(committed))
		case i%2 == 1 && a.code == 304:
			unchanged++
		default:
			failed++
			if failed <= 5 {
				t.Errorf("agent %d (%s graph): %d, want 200 with the new graph for a default graph, 304 at the deadline for a provision graph",
					i, map[bool]string{true: "default", false: "provision"}[i%2 == 0], a.code)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d agents failed", failed, agents)
	}
	p50, p99 := percentiles(lat)
	perAgent := (rssWaiting - rssBefore) * 1024 / float64(agents)
	t.Logf("SOAK %-16s %d agents waiting (connected in %v, %d reconnects; serve's fds %d): RSS %.0f → %.0f MB, %.1f KB per waiting agent; "+
		"apply → answer p50 %v, p99 %v over %d woken agents; %d agents of unchanged graphs answered 304 at their deadline; "+
		"304 revalidation %.0f requests/s (32 keep-alive connections, %v)",
		"artifact agents", agents, connected.Round(time.Millisecond), reconnects.Load(), fds, rssBefore, rssWaiting, perAgent,
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(lat), unchanged, rps, revalidate)
	// The bounds (docs/artifact-api.md, docs/safety-serve.md): measured with
	// 10,000 agents 26 KB a waiting agent, p99 353 ms, 10,012 descriptors,
	// 23,800 revalidations/s.
	if p99 > 5*time.Second {
		t.Errorf("p99 of the wake-up after the apply is %v, more than 5 s", p99)
	}
	if limit := 16 + float64(agents)*48/1024; rssWaiting-rssBefore > limit {
		t.Errorf("serve's RSS grew by %.0f MB with %d agents waiting (%.1f KB each), more than %.0f MB (16 MB and 48 KB an agent)",
			rssWaiting-rssBefore, agents, perAgent, limit)
	}
	if fds > agents+100 {
		t.Errorf("serve had %d descriptors open with %d agents waiting, more than one an agent and 100", fds, agents)
	}
	if rps < 500 {
		t.Errorf("304 revalidations: %.0f requests/s, fewer than 500", rps)
	}
}

type agentAnswer struct {
	code int
	at   time.Time
	etag string
	err  error
}

// agentRound is one agent's round on one connection: GET its graph, then wait
// for a change with its ETag (waiting is called once the wait is sent), and the
// answer. dial is a semaphore on connections being opened.
func agentRound(addr, path string, wait time.Duration, dial chan struct{}, waiting func()) (agentAnswer, error) {
	dial <- struct{}{}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	<-dial
	if err != nil {
		return agentAnswer{}, err
	}
	defer c.Close()
	br := bufio.NewReader(c)
	c.SetDeadline(time.Now().Add(wait + time.Minute))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: agent\r\n\r\n", path)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return agentAnswer{}, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag == "" {
		return agentAnswer{}, fmt.Errorf("GET %s: %d", path, resp.StatusCode)
	}
	fmt.Fprintf(c, "GET %s?wait=%s HTTP/1.1\r\nHost: agent\r\nIf-None-Match: %s\r\n\r\n", path, wait, etag)
	waiting()
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		return agentAnswer{}, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	a := agentAnswer{code: resp.StatusCode, at: time.Now(), etag: resp.Header.Get("ETag")}
	if a.etag == etag && a.code == 200 {
		return agentAnswer{}, fmt.Errorf("GET %s?wait: 200 with the same ETag", path)
	}
	return a, nil
}

// commitHieraTimeout commits, in the quickstart repository repo, a change of
// the hiera task's timeout (120 to 121): every node's default graph changes.
func commitHieraTimeout(t *testing.T, repo string) {
	t.Helper()
	p := filepath.Join(repo, "plugins", "quickstart", "graphs", "deployment.yaml")
	data, err := os.ReadFile(p)
	const hiera = "modular/hiera/hiera.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 120\n"
	if err != nil || !strings.Contains(string(data), hiera) {
		t.Fatalf("%s has no hiera task's timeout (%v)", p, err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), hiera, strings.Replace(hiera, "120", "121", 1), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gitCommit(repo, "hiera: timeout 121"); err != nil {
		t.Fatal(err)
	}
}
