package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/state"
)

// TestServeProcess runs `fuelsync serve` as a process on a loopback port chosen by
// the kernel: it becomes ready (the quickstart applied), serves its status page
// with the cluster and node names, and SIGTERM stops it cleanly (exit 0).
func TestServeProcess(t *testing.T) {
	repo := quickstartRepo(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fuelsyncCmd("--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve",
		"--listen", "127.0.0.1:0", "--webhook-secret-file", secret, "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	base := "http://" + serveAddr(t, stderr, 10*time.Second, nil, nil)
	get := func(path string) (int, string) { return httpGet(base + path) }
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := get("/readyz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, page := get("/"); code != 200 || !strings.Contains(page, "<h3>demo</h3>") || !strings.Contains(page, "<td>node-6</td>") {
		t.Errorf("status page: %d\n%s", code, page)
	}
	stopServe(t, cmd)
}

// TestWatchProcess runs `fuelsync watch` on a local repository with an hour's
// interval: a new commit is reconciled at once (fsnotify on the refs), and
// SIGTERM stops it.
func TestWatchProcess(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	cmd := fuelsyncCmd("--repo", repo, "--workdir", wd, "watch", "--interval", "1h", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	applied, reconciled := make(chan string, 10), make(chan struct{}, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`"msg":"reconcile","outcome":"applied","revision":"([0-9a-f]+)"`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				applied <- m[1]
			}
			if strings.Contains(sc.Text(), reconcileLine) {
				reconciled <- struct{}{}
			}
		}
	}()
	wait := func(what string) string {
		select {
		case rev := <-applied:
			return rev
		case <-time.After(10 * time.Second):
			t.Fatalf("no applied reconcile within 10 s: %s", what)
		}
		return ""
	}
	wait("the first commit")
	<-reconciled // the first commit's
	waitWatched(t, repo, reconciled)
	unassignRabbitmq(t, repo)
	h, err := gitCommit(repo, "node-2 without rabbitmq")
	if err != nil {
		t.Fatal(err)
	}
	if got := wait("the new commit"); got != h.String() {
		t.Errorf("applied %s, want %s", got, h)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGTERM: %v", err)
	}
}

// waitWatched returns once the watch on repo's .git directory is set up: a
// file written there (again every second) makes the loop reconcile (the
// interval is an hour), which the log tells reconciled of.
func waitWatched(t *testing.T, repo string, reconciled <-chan struct{}) {
	t.Helper()
	probe := filepath.Join(repo, ".git", "fuelsync-watch-probe")
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := os.WriteFile(probe, []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case <-reconciled:
			return
		case <-time.After(time.Second):
		}
	}
	t.Fatal("a change in the .git directory did not reach the loop within 10 s")
}

// TestUnsafeStartRefused: watch and serve refuse to start when they would publish
// the artifacts onto the branch they follow (its sources replaced, every node
// deleted by the next reconcile), and serve and trigger refuse an empty or
// whitespace-only webhook secret file (anyone could sign a delivery), and serve
// an empty API token file (anyone could read).
func TestUnsafeStartRefused(t *testing.T) {
	repo := quickstartRepo(t) // on branch main
	empty := filepath.Join(t.TempDir(), "empty")
	blank := filepath.Join(t.TempDir(), "blank")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blank, []byte(" \n\t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "wd")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"watch publishing onto HEAD's branch", []string{"--repo", repo, "--workdir", wd, "watch", "--publish", "git", "--publish-branch", "main"}, "--publish-branch: the publish branch main is the branch followed"},
		{"watch publishing onto --branch", []string{"--repo", repo, "--workdir", wd, "watch", "--branch", "main", "--publish", "git", "--publish-branch", "refs/heads/main"}, "the publish branch main is the branch followed"},
		{"serve publishing onto HEAD's branch", []string{"--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--publish", "git", "--publish-branch", "main"}, "the publish branch main is the branch followed"},
		{"serve with an empty secret", []string{"--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--webhook-secret-file", empty}, "the webhook secret file " + empty + " is empty"},
		{"serve with a blank secret", []string{"--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--webhook-secret-file", blank}, "the webhook secret file " + blank + " is empty"},
		{"serve with an empty API token", []string{"--repo", repo, "--workdir", wd, "serve", "--listen", "127.0.0.1:0", "--api-token-file", blank}, "the API token file " + blank + " is empty"},
		{"trigger with an empty secret", []string{"trigger", "--url", "http://127.0.0.1:9", "--webhook-secret-file", blank}, "the webhook secret file " + blank + " is empty"},
	} {
		var stdout, stderr strings.Builder
		code := run(append([]string{"fuelsync"}, tc.args...), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q", tc.name, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(filepath.Join(wd, "state.json")); err == nil {
			t.Fatalf("%s: applied before refusing", tc.name)
		}
	}
}

// startServe starts `fuelsync serve` on a loopback port the kernel chooses and
// returns its base URL and a function that stops it with SIGTERM and returns
// everything it logged.
func startServe(t *testing.T, args ...string) (base string, stop func() string) {
	t.Helper()
	args = append(args, "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd := fuelsyncCmd(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var log strings.Builder
	var mu sync.Mutex
	scanned := make(chan struct{})
	base = "http://" + serveAddr(t, stderr, 10*time.Second, func(l string) {
		mu.Lock()
		log.WriteString(l + "\n")
		mu.Unlock()
	}, func() { close(scanned) })
	return base, func() string {
		stopServe(t, cmd)
		<-scanned
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
}

// TestServeRedactsCredentials: serve follows a remote given as
// http://user:TOKEN@127.0.0.1:port/repo.git whose server fails every request. The
// token appears on no output surface: the log (the start lines, every reconcile
// error), /api/v1/status, the status page, the components endpoint, /metrics,
// /readyz and /healthz; the errors are there, with the URL redacted.
func TestServeRedactsCredentials(t *testing.T) {
	const token = "ghp_S3cretT0kenValue"
	var requests atomic.Int64
	git := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer git.Close()
	remote := strings.Replace(git.URL, "http://", "http://fuelsync:"+token+"@", 1) + "/repo.git"
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := startServe(t, "--repo", remote, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve", "--branch", "main", "--webhook-secret-file", secret)
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("GET %s: %d\n%s", path, resp.StatusCode, b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get("/api/v1/status"), `"outcome": "error"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed reconcile within 10 s:\n%s", get("/api/v1/status"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var surfaces []string
	for _, p := range []string{"/api/v1/status", "/", "/api/v1/releases/quickstart-1.0/components", "/metrics", "/readyz", "/healthz"} {
		surfaces = append(surfaces, get(p))
	}
	surfaces = append(surfaces, "the log:\n"+stop())
	all := strings.Join(surfaces, "\n")
	for _, s := range surfaces {
		if strings.Contains(s, token) {
			t.Errorf("the token leaks:\n%s", s)
		}
	}
	for _, want := range []string{"fuelsync:xxxxx@127.0.0.1", `"msg":"watching"`, `"msg":"reconcile problem"`, "cloning http://fuelsync:xxxxx@127.0.0.1"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q on any surface:\n%s", want, all)
		}
	}
	if requests.Load() == 0 {
		t.Error("the git server was never asked")
	}
}

// exitsWithin starts cmd and waits at most d for it to exit: whether it
// exited (killed, and waited for, when it did not), and its error.
func exitsWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) (bool, error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return false, nil
	}
}

// startJSONLog starts cmd (a watch or serve with --log-format json) and
// returns its log lines, decoded, until it ends; a line that is not JSON
// fails the test. The process is killed when the test ends.
func startJSONLog(t *testing.T, cmd *exec.Cmd) <-chan map[string]any {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan map[string]any, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("a log line that is not JSON: %s", sc.Text())
				continue
			}
			lines <- m
		}
	}()
	return lines
}

// TestWatchLogs runs `fuelsync watch --repo file://<repository with a working
// tree>` as a process and reads its JSON log: at start, what it follows (the
// repository, the branch, the interval, the work directory); each reconcile
// with one word for its outcome and, when it applies, the plan's summary line
// and one line per cluster changed with its node counts; an interval that
// finds the commit reconciled, skipped with the reason; at SIGTERM, that it
// stopped.
func TestWatchLogs(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	cmd := fuelsyncCmd("--repo", "file://"+repo, "--workdir", wd, "watch", "--interval", "200ms", "--log-format", "json")
	lines := startJSONLog(t, cmd)
	var log []map[string]any
	next := func(what string, match func(m map[string]any) bool) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("the log ended before %s", what)
				}
				log = append(log, m)
				if match(m) {
					return m
				}
			case <-timeout:
				t.Fatalf("no %s within 10 s; log: %v", what, log)
			}
		}
	}
	msg := func(s string) func(map[string]any) bool { return func(m map[string]any) bool { return m["msg"] == s } }
	w := next("watching line", msg("watching"))
	if w["repo"] != "file://"+repo || w["branch"] != "HEAD of the remote" || w["interval"] != "200ms" || w["workdir"] != wd {
		t.Errorf("the watching line: %v", w)
	}
	r := next("first reconcile", func(m map[string]any) bool { return m["msg"] == "reconcile" && m["outcome"] != "skipped" })
	if r["outcome"] != "applied" || r["plan"] != "Plan: 12 nodes to deploy, 12 to provision, 0 to delete; 54 tasks added, 0 removed, 0 changed." {
		t.Errorf("the first reconcile: %v", r)
	}
	clusters := map[string]map[string]any{}
	for len(clusters) < 2 {
		c := next("a cluster changed line", msg("cluster changed"))
		clusters[c["cluster"].(string)] = c
	}
	if c := clusters["demo"]; c == nil || c["nodes_added"] != 6.0 || c["nodes_changed"] != 0.0 || c["nodes_removed"] != 0.0 {
		t.Errorf("cluster demo: %v", c)
	}
	unassignRabbitmq(t, repo)
	if _, err := gitCommit(repo, "node-2 without rabbitmq"); err != nil {
		t.Fatal(err)
	}
	// Skipped reconciles (every interval) are logged too: the commit's is the
	// next one that is not.
	r = next("the commit's reconcile", func(m map[string]any) bool { return m["msg"] == "reconcile" && m["outcome"] != "skipped" })
	if r["outcome"] != "applied" || !strings.HasPrefix(r["plan"].(string), "Plan: 1 node to deploy, 0 to provision, 0 to delete; 0 tasks added, 1 removed") {
		t.Errorf("the commit's reconcile: %v", r)
	}
	if c := next("a cluster changed line", msg("cluster changed")); c["cluster"] != "demo" || c["nodes_changed"] != 1.0 {
		t.Errorf("the commit's cluster change: %v", c)
	}
	// Two intervals: nothing new, skipped with the reason.
	for range 2 {
		next("a skipped reconcile", func(m map[string]any) bool { return m["msg"] == "reconcile" && m["outcome"] == "skipped" })
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next("stopped line", msg("stopped"))
	for m := range lines {
		log = append(log, m)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGTERM: %v", err)
	}
	one := regexp.MustCompile(`^[a-z]+$`)
	reconciles, skipped := 0, 0
	for _, m := range log {
		if m["msg"] != "reconcile" {
			continue
		}
		o, _ := m["outcome"].(string)
		if !one.MatchString(o) {
			t.Errorf("outcome %q is not one word", o)
		}
		if o != "skipped" {
			reconciles++
			continue
		}
		skipped++
		if m["level"] != "INFO" || m["reason"] != "this commit was reconciled already (applied) and nothing was approved since" {
			t.Errorf("a skipped reconcile's line: %v", m)
		}
	}
	if reconciles != 2 || skipped == 0 {
		t.Errorf("%d reconcile lines and %d skipped; want 2, and the intervals that found the commit reconciled (at info level, with the reason)", reconciles, skipped)
	}
}

// TestServeArtifactAPIFlags runs serve with --api-token-file, --max-wait and
// --max-waiting: the artifact API needs the token (the probes do not), a wait
// is cut to --max-wait and answered 304, and a second wait beyond
// --max-waiting 1 is answered 429 with Retry-After.
func TestServeArtifactAPIFlags(t *testing.T) {
	repo := quickstartRepo(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := startServe(t, "--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve",
		"--api-token-file", tokenFile, "--max-wait", "2s", "--max-waiting", "1")
	defer stop()
	const graph = "/api/v1/clusters/demo/nodes/node-1/graphs/default"
	get := func(path, token, etag string) (*http.Response, time.Duration) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, time.Since(start)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, _ := get("/readyz", "", ""); resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, _ := get(graph, "", ""); resp.StatusCode != 401 {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	resp, _ := get(graph, "t0ken", "")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || len(etag) != 66 {
		t.Fatalf("with the token: %d, ETag %q", resp.StatusCode, etag)
	}
	first := make(chan time.Duration, 1)
	go func() {
		resp, took := get(graph+"?wait=1m", "t0ken", etag)
		if resp.StatusCode != 304 {
			t.Errorf("wait=1m with --max-wait 2s: %d", resp.StatusCode)
		}
		first <- took
	}()
	for waiting, until := "", time.Now().Add(5*time.Second); waiting != "fuelsync_api_waiting 1"; {
		if time.Now().After(until) {
			t.Fatalf("after 5 s, /metrics says %q, want one request waiting", waiting)
		}
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		waiting = regexp.MustCompile(`(?m)^fuelsync_api_waiting \d+`).FindString(string(b))
	}
	if resp, took := get(graph+"?wait=1m", "t0ken", etag); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || took > time.Second {
		t.Errorf("a second wait with --max-waiting 1: %d Retry-After %q after %v", resp.StatusCode, resp.Header.Get("Retry-After"), took)
	}
	if took := <-first; took < 2*time.Second || took > 3*time.Second {
		t.Errorf("wait=1m with --max-wait 2s answered after %v", took)
	}
}

// httpGet returns the status and body of a GET of url (status 0 and the error
// when the request fails).
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stopServe sends SIGTERM to a running serve process and waits up to 10 s for
// it to exit, which must be with status 0.
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of SIGTERM")
	}
}

// TestWatchLoadBudget: watch and serve load every revision within the budget
// of FUELSYNC_MAX_FILE_SIZE and FUELSYNC_MAX_REPO_SIZE, as the other commands
// do: a file over the limit makes the commit invalid, with the file named in
// the log; a budget that is not a size stops them before they start.
func TestWatchLoadBudget(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	cmd := fuelsyncCmd("--repo", repo, "--workdir", wd, "watch", "--interval", "1h", "--log-format", "json")
	cmd.Env = append(cmd.Env, "FUELSYNC_MAX_FILE_SIZE=512")
	lines := startJSONLog(t, cmd)
	var outcome string
	var problems []string
	timeout := time.After(10 * time.Second)
	// The reconcile's line, then (when invalid) its problems.
	for outcome == "" || (outcome == "invalid" && len(problems) == 0) {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("the log ended before the first reconcile")
			}
			switch m["msg"] {
			case "reconcile":
				outcome, _ = m["outcome"].(string)
			case "reconcile problem":
				p, _ := m["problem"].(string)
				problems = append(problems, p)
			}
		case <-timeout:
			t.Fatalf("no reconcile and problem within 10 s (outcome %q, problems %q)", outcome, problems)
		}
	}
	if outcome != "invalid" || !regexp.MustCompile(`^plugins/\S+: error: file \S+ is \d+ bytes, over the 512 bytes limit`).MatchString(problems[0]) {
		t.Errorf("the first reconcile: %s, problems %q; want invalid, a file over the 512 bytes limit", outcome, problems)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGTERM: %v", err)
	}
	// Its clusters are recorded as held, without artifacts.
	st, err := state.Open(wd).ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Artifacts) > 1 {
		t.Errorf("a revision over the budget was applied: %d files", len(st.Artifacts))
	}

	for _, args := range [][]string{{"watch"}, {"serve", "--listen", "127.0.0.1:0"}} {
		cmd := fuelsyncCmd(append([]string{"--repo", repo, "--workdir", wd}, args...)...)
		cmd.Env = append(cmd.Env, "FUELSYNC_MAX_REPO_SIZE=lots")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		exited, err := exitsWithin(t, cmd, 10*time.Second)
		want := `FUELSYNC_MAX_REPO_SIZE="lots": want a positive size`
		switch {
		case !exited:
			t.Errorf("%s with a budget that is not a size still runs after 10 s", args[0])
		case cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), want):
			t.Errorf("%s with a budget that is not a size: %v (exit %d), stderr:\n%s\nwant exit 1 and %q", args[0], err, cmd.ProcessState.ExitCode(), stderr.String(), want)
		}
	}
}
