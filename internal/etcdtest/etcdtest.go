// Package etcdtest starts real etcd servers (the etcd binary, Debian's
// etcd-server package) for tests: one member or a cluster on loopback ports the
// test picks, with data directories in t.TempDir(), stopped when the test ends.
// A test skips, saying so, when the etcd binary is missing (and fails instead
// when CI=true, see testenv, or FUELSYNC_REQUIRE_ETCD is set, as make test-etcd
// does).
package etcdtest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// Member is one etcd server.
type Member struct {
	Name      string
	ClientURL string
	PeerURL   string
	dir       string
	log       string
	args      []string
	cmd       *exec.Cmd
	done      chan struct{}
}

// Cluster is a set of etcd members started together.
type Cluster struct {
	t       testing.TB
	Members []*Member
	certs   *Certs
}

// Binary returns the etcd binary's path, skipping t when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FUELSYNC_ETCD"); p != "" {
		return p
	}
	p, err := exec.LookPath("etcd")
	if err != nil && os.Getenv("FUELSYNC_REQUIRE_ETCD") != "" {
		t.Fatal("etcd is not installed, and FUELSYNC_REQUIRE_ETCD is set (make test-etcd): apt-get install etcd-server")
	}
	if err != nil {
		testenv.Unavailable(t, "etcd is not installed (Debian: apt-get install etcd-server; or set FUELSYNC_ETCD to its path): skipping the test that needs a real etcd")
	}
	return p
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts an n-member cluster and waits until it has a leader.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return start(t, n, nil)
}

// StartWith starts an n-member cluster whose members take the flags args
// besides the test's own (e.g. "--quota-backend-bytes", "33554432"), and
// waits until it has a leader.
func StartWith(t testing.TB, n int, args ...string) *Cluster {
	t.Helper()
	return start(t, n, nil, args...)
}

// StartTLS starts one member that serves clients over TLS only, with
// certificates of certs, and requires a client certificate signed by its CA.
func StartTLS(t testing.TB, certs Certs) *Cluster {
	t.Helper()
	return start(t, 1, &certs)
}

// start makes up to three attempts: the ports are free when picked, but
// another process on the machine may take one before etcd binds it.
func start(t testing.TB, n int, certs *Certs, args ...string) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c := startOnce(t, n, certs, args)
		if c.waitHealthy(20 * time.Second) {
			return c
		}
		c.logTails()
		for _, m := range c.Members {
			c.kill(m, syscall.SIGKILL)
		}
		if attempt == 3 {
			t.Fatalf("no healthy %d-member etcd cluster after %d attempts", n, attempt)
		}
		t.Logf("etcd cluster not healthy after 20s (attempt %d): starting another on other ports", attempt)
	}
}

func startOnce(t testing.TB, n int, certs *Certs, args []string) *Cluster {
	t.Helper()
	scheme := "http"
	if certs != nil {
		scheme = "https"
	}
	bin := Binary(t)
	c := &Cluster{t: t}
	base := t.TempDir()
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, freePort(t)),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			dir:       filepath.Join(base, fmt.Sprintf("m%d", i)),
			log:       filepath.Join(base, fmt.Sprintf("m%d.log", i)),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.args = []string{bin,
			"--name", m.Name,
			"--data-dir", m.dir,
			"--listen-client-urls", m.ClientURL,
			"--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL,
			"--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(base),
			// Fast elections: tests kill members.
			"--heartbeat-interval", "50",
			"--election-timeout", "500",
		}
		if certs != nil {
			m.args = append(m.args, "--cert-file", certs.ServerCert, "--key-file", certs.ServerKey,
				"--trusted-ca-file", certs.CA, "--client-cert-auth")
		}
		m.args = append(m.args, args...)
		c.start(m)
	}
	c.certs = certs
	t.Cleanup(func() {
		for _, m := range c.Members {
			c.kill(m, syscall.SIGKILL)
		}
	})
	return c
}

func (c *Cluster) start(m *Member) {
	c.t.Helper()
	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = os.Environ()
	if arch := goarch(); arch != "" {
		cmd.Env = append(cmd.Env, "ETCD_UNSUPPORTED_ARCH="+arch) // etcd 3.4 refuses arm64 without it
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("starting etcd %s: %v", m.Name, err)
	}
	m.cmd = cmd
	m.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(m.done)
	}()
}

func goarch() string {
	out, err := exec.Command("uname", "-m").Output()
	if err == nil && strings.TrimSpace(string(out)) == "aarch64" {
		return "arm64"
	}
	return ""
}

func (c *Cluster) kill(m *Member, sig syscall.Signal) {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
}

// Kill stops member i with SIGKILL.
func (c *Cluster) Kill(i int) { c.kill(c.Members[i], syscall.SIGKILL) }

// Stop stops member i with SIGTERM.
func (c *Cluster) Stop(i int) { c.kill(c.Members[i], syscall.SIGTERM) }

// Restart starts a stopped member i again on its data directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	m := c.Members[i]
	if m.cmd != nil {
		return
	}
	args := make([]string, len(m.args))
	copy(args, m.args)
	for j := range args {
		if args[j] == "new" && args[j-1] == "--initial-cluster-state" {
			args[j] = "existing"
		}
	}
	m.args = args
	c.start(m)
}

// Endpoints are the members' client addresses, host:port.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(m.ClientURL, "http://"), "https://"))
	}
	return out
}

// URL is the --state value for prefix ("etcd://h:p,h:p/prefix").
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints(), ",") + "/" + strings.TrimPrefix(prefix, "/")
}

// Healthy says whether member i answers /health with a quorum.
func (c *Cluster) Healthy(i int) bool {
	m := c.Members[i]
	if m.cmd == nil {
		return false
	}
	client := http.Client{Timeout: 2 * time.Second}
	if c.certs != nil {
		pair, err := tls.LoadX509KeyPair(c.certs.ClientCert, c.certs.ClientKey)
		if err != nil {
			c.t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pem, _ := os.ReadFile(c.certs.CA)
		pool.AppendCertsFromPEM(pem)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}
	}
	resp, err := client.Get(m.ClientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var buf [256]byte
	n, _ := resp.Body.Read(buf[:])
	return resp.StatusCode == 200 && strings.Contains(string(buf[:n]), `"true"`)
}

// WaitHealthy waits until every running member is healthy, failing the test
// (with the members' logs) after d.
func (c *Cluster) WaitHealthy(d time.Duration) {
	c.t.Helper()
	if !c.waitHealthy(d) {
		c.logTails()
		c.t.Fatalf("etcd cluster not healthy after %s", d)
	}
}

func (c *Cluster) waitHealthy(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		ok := true
		for i, m := range c.Members {
			if m.cmd == nil {
				continue
			}
			select {
			case <-m.done: // exited: a port taken, or worse
				return false
			default:
			}
			if !c.Healthy(i) {
				ok = false
			}
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logTails logs the end of every member's log.
func (c *Cluster) logTails() {
	for _, m := range c.Members {
		data, _ := os.ReadFile(m.log)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		c.t.Logf("etcd %s log (end):\n%s", m.Name, data)
	}
}
