package cli

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/server"
	"github.com/fuelsync/fuelsync/state"
)

// The soak tests attack `fuelsync serve` on loopback and report figures (the
// server's resident memory, latencies); they run only with -soak:
//
//	go test ./internal/cli -run '^TestSoak' -soak -v -timeout 30m   (or: make soak)
//
// FUELSYNC_SOAK_BIN names another fuelsync binary to attack (an older build, to
// compare); by default the test binary runs the CLI of this tree.
var soak = flag.Bool("soak", false, "run the serve abuse cases (slow bodies, idle connections, component GETs, a webhook flood) and report figures")

// The bounds the soak tests assert (docs/safety-serve.md quotes them). Each is
// well above what was measured on a 2-core machine shared with other work, and
// far below what the attacks did before serve had its limits: the test fails on
// a regression, not on a slow machine.
const (
	soakMaxRSSGrowthMB   = 100                    // resident memory an attack may add (measured: 14–21 MB; before the limits: 330–820 MB)
	soakMaxHealthzP99    = 2 * time.Second        // /healthz during an attack (measured: 10–140 ms; before: 5 s timeouts)
	soakMaxComponentsP99 = 250 * time.Millisecond // GET components (measured: 3.4 ms; before: 4.4 s)
)

// soakMaxServeFDs bounds serve's descriptors under a connection flood: its
// connection cap and 100 (measured: 267; before: all 4,096).
var soakMaxServeFDs = server.DefaultLimits.MaxConnections + 100

// soakServer is a serve process on a git repository of examples/fuel-mitaka.
type soakServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	addr   string
	repo   string
	wd     string
	secret []byte
}

func startSoakServer(t *testing.T, nofile int) *soakServer {
	t.Helper()
	repo := t.TempDir()
	files, err := mapfs.Read("../../examples/fuel-mitaka")
	if err != nil {
		t.Fatal(err)
	}
	if err := repogen.WriteDir(files, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := gitCommit(repo, "fuel-mitaka"); err != nil {
		t.Fatal(err)
	}
	s := &soakServer{t: t, repo: repo, wd: filepath.Join(t.TempDir(), "wd"), secret: []byte("s3cret")}
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, s.secret, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--repo", repo, "--workdir", s.wd, "serve", "--listen", "127.0.0.1:0", "--webhook-secret-file", secretFile,
		"--log-format", "json", "--interval", "1h"}
	if bin := os.Getenv("FUELSYNC_SOAK_BIN"); bin != "" {
		s.cmd = exec.Command(bin, args...)
	} else {
		s.cmd = fuelsyncCmd(args...)
	}
	if nofile > 0 { // a file descriptor limit the server cannot raise
		prlimit := testenv.Tool(t, "prlimit", "to limit the server's file descriptors: apt-get install util-linux")
		s.cmd = exec.Command(prlimit, append([]string{fmt.Sprintf("--nofile=%d:%d", nofile, nofile), s.cmd.Path}, s.cmd.Args[1:]...)...)
		s.cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1")
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
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// memory is the server's resident set and its peak, in MB (from /proc).
func (s *soakServer) memory() (rss, peak float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	field := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+) kB`).FindSubmatch(data)
		if m == nil {
			return 0
		}
		kb, _ := strconv.ParseFloat(string(m[1]), 64)
		return kb / 1024
	}
	return field("VmRSS"), field("VmHWM")
}

// openFiles is the number of the server's open file descriptors.
func (s *soakServer) openFiles() int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	return len(fds)
}

// probe GETs /healthz every 100 ms on a new connection until stop is closed,
// and returns the latencies (a failure counts as its timeout, 5 s) and the
// failures.
func (s *soakServer) probe(stop <-chan struct{}) func() ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			start := time.Now()
			resp, err := client.Get(s.base + "/healthz")
			d := time.Since(start)
			mu.Lock()
			if err != nil || resp.StatusCode != 200 {
				failed++
				d = 5 * time.Second
			}
			lat = append(lat, d)
			mu.Unlock()
			if err == nil {
				resp.Body.Close()
			}
		}
	}()
	return func() ([]time.Duration, int) { <-done; mu.Lock(); defer mu.Unlock(); return lat, failed }
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// report logs an attack's figures and asserts that /healthz answered every
// probe, within soakMaxHealthzP99 at the 99th percentile.
func (s *soakServer) report(name string, lat []time.Duration, failed int, extra string) {
	rss, peak := s.memory()
	p50, p99 := percentiles(lat)
	s.t.Logf("SOAK %-16s RSS %6.0f MB (peak %6.0f MB); /healthz p50 %v p99 %v, %d/%d failed; %s",
		name, rss, peak, p50.Round(time.Millisecond), p99.Round(time.Millisecond), failed, len(lat), extra)
	if len(lat) == 0 || failed > 0 || p99 > soakMaxHealthzP99 {
		s.t.Errorf("%s: /healthz failed %d of %d probes, p99 %v; want none failed and p99 within %v", name, failed, len(lat), p99, soakMaxHealthzP99)
	}
}

// checkGrowth asserts that the server's resident memory grew by at most
// soakMaxRSSGrowthMB from before (MB) to after.
func (s *soakServer) checkGrowth(what string, before, after float64) {
	if after-before > soakMaxRSSGrowthMB {
		s.t.Errorf("%s: serve's RSS grew from %.0f MB to %.0f MB, more than %d MB", what, before, after, soakMaxRSSGrowthMB)
	}
}

func signGitHub(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// TestSoakSlowBodies: 500 connections each send a signed GitHub delivery's
// headers and all of a 1 MiB body but its last byte, then wait.
func TestSoakSlowBodies(t *testing.T) {
	if !*soak {
		t.Skip("run with -soak")
	}
	s := startSoakServer(t, 0)
	rss0, _ := s.memory()
	stop := make(chan struct{})
	result := s.probe(stop)
	const n = 500
	body := bytes.Repeat([]byte(" "), server.MaxWebhookBody)
	var conns []net.Conn
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", s.addr)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			fmt.Fprintf(c, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nX-GitHub-Delivery: slow-%d\r\nContent-Length: %d\r\n\r\n", i, len(body))
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			c.Write(body[:len(body)-1])
		})
	}
	wg.Wait()
	time.Sleep(2 * time.Second)
	rss1, peak1 := s.memory()
	open1 := s.openFiles()
	time.Sleep(35 * time.Second) // past the read timeout
	close(stop)
	lat, failed := result()
	still := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				still++
			}
		}
		c.Close()
	}
	s.report("slow bodies", lat, failed, fmt.Sprintf("RSS %0.f MB before, %0.f MB (peak %0.f) 2 s into the attack; %d fds open then; %d of %d connections still open after 37 s",
		rss0, rss1, peak1, open1, still, len(conns)))
	s.checkGrowth("slow bodies", rss0, peak1)
	rss2, peak2 := s.memory()
	s.checkGrowth("slow bodies, after 37 s", rss0, max(rss2, peak2))
	if still > 0 {
		t.Errorf("slow bodies: %d of %d connections still open after 37 s, past the 30 s read timeout", still, len(conns))
	}
	if open1 > soakMaxServeFDs {
		t.Errorf("slow bodies: serve had %d descriptors open, more than %d", open1, soakMaxServeFDs)
	}
}

// TestSoakIdleConnections: the server limited to 4,096 file descriptors, 5,000
// keep-alive connections each make one request and stay idle; meanwhile a
// commit is pushed and announced by a signed webhook.
func TestSoakIdleConnections(t *testing.T) {
	if !*soak {
		t.Skip("run with -soak")
	}
	s := startSoakServer(t, 4096)
	stop := make(chan struct{})
	result := s.probe(stop)
	const n = 5000
	var conns []net.Conn
	var opened, served atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	start := time.Now()
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
			if err != nil {
				return
			}
			opened.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				served.Add(1)
			}
		})
	}
	wg.Wait()
	flood := time.Since(start)
	fds := s.openFiles()
	// A commit and its webhook, during the flood.
	editMitaka(t, s.repo)
	h, err := gitCommit(s.repo, "during the flood")
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"ref":"refs/heads/main"}`)
	req, _ := http.NewRequest(http.MethodPost, s.base+"/hooks/github", bytes.NewReader(payload))
	req.Header.Set("X-Hub-Signature-256", signGitHub(s.secret, payload))
	hookCode := 0
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
		hookCode = resp.StatusCode
		resp.Body.Close()
	}
	applied := "not applied within 30 s"
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := state.Open(s.wd).ReadState(); err == nil && st.Revision == h.String() {
			applied = "applied"
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	lat, failed := result()
	for _, c := range conns {
		c.Close()
	}
	s.report("idle conns", lat, failed, fmt.Sprintf("%d/%d connections opened, %d served, in %v; the server's fds then: %d; webhook during the flood: %d, its commit %s",
		opened.Load(), n, served.Load(), flood.Round(time.Millisecond), fds, hookCode, applied))
	if fds > soakMaxServeFDs {
		t.Errorf("idle conns: serve had %d descriptors open, more than %d", fds, soakMaxServeFDs)
	}
	if hookCode != http.StatusAccepted || applied != "applied" {
		t.Errorf("idle conns: the webhook during the flood got %d (want 202), its commit %s", hookCode, applied)
	}
}

// editMitaka makes a change to the fuel-mitaka cluster (node-3 renamed).
func editMitaka(t *testing.T, repo string) {
	t.Helper()
	p := filepath.Join(repo, "clusters", "mitaka.yaml")
	data, err := os.ReadFile(p)
	const node = "  node-3: {id: 3, roles: [controller]}"
	if err != nil || !bytes.Contains(data, []byte(node)) {
		t.Fatalf("clusters/mitaka.yaml has no %q (%v)", node, err)
	}
	data = bytes.Replace(data, []byte(node), []byte("  node-3x: {id: 3, roles: [controller]}"), 1)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSoakComponentGETs: 2,000 GETs of the fuel-mitaka release's component
// registry from 8 clients.
func TestSoakComponentGETs(t *testing.T) {
	if !*soak {
		t.Skip("run with -soak")
	}
	s := startSoakServer(t, 0)
	rss0, _ := s.memory()
	const n = 2000
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				resp, err := client.Get(s.base + "/api/v1/releases/mitaka-9.0/components")
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	p50, p99 := percentiles(lat)
	rss, peak := s.memory()
	t.Logf("SOAK %-16s RSS %6.0f MB (peak %6.0f MB), %0.f MB before; GET components p50 %v p99 %v, %d/%d failed, %v in all",
		"component GETs", rss, peak, rss0, p50.Round(time.Microsecond), p99.Round(time.Microsecond), failed.Load(), n, elapsed.Round(time.Millisecond))
	if failed.Load() > 0 || p99 > soakMaxComponentsP99 {
		t.Errorf("component GETs: %d of %d failed, p99 %v; want none failed and p99 within %v", failed.Load(), n, p99, soakMaxComponentsP99)
	}
	s.checkGrowth("component GETs", rss0, peak)
}

// TestSoakWebhookFlood: 1,000 signed GitHub deliveries, each with its own 200 KB
// delivery id, from 16 connections.
func TestSoakWebhookFlood(t *testing.T) {
	if !*soak {
		t.Skip("run with -soak")
	}
	s := startSoakServer(t, 0)
	rss0, _ := s.memory()
	stop := make(chan struct{})
	result := s.probe(stop)
	const n = 1000
	payload := []byte(`{"ref":"refs/heads/main"}`)
	sig := signGitHub(s.secret, payload)
	codes := map[int]int{}
	var mu sync.Mutex
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id := fmt.Sprintf("%08d", i) + strings.Repeat("d", 200<<10)
				req, _ := http.NewRequest(http.MethodPost, s.base+"/hooks/github", bytes.NewReader(payload))
				req.Header.Set("X-Hub-Signature-256", sig)
				req.Header.Set("X-GitHub-Delivery", id)
				t0 := time.Now()
				code := -1
				if resp, err := client.Do(req); err == nil {
					code = resp.StatusCode
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				lat[i] = time.Since(t0)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(time.Second)
	close(stop)
	hl, failed := result()
	p50, p99 := percentiles(lat)
	s.report("webhook flood", hl, failed, fmt.Sprintf("RSS %0.f MB before; deliveries p50 %v p99 %v, %v in all, answers %v",
		rss0, p50.Round(time.Microsecond), p99.Round(time.Microsecond), elapsed.Round(time.Millisecond), codes))
	if codes[http.StatusRequestHeaderFieldsTooLarge] != n {
		t.Errorf("webhook flood: answers %v, want %d × 431 (headers over 64 KiB)", codes, n)
	}
	_, peak := s.memory()
	s.checkGrowth("webhook flood", rss0, peak)
}
