package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
)

// serveLimited serves a Server (its loop never run) on loopback with lim, and
// returns its address and its connection limiter.
func serveLimited(t *testing.T, secret []byte, lim Limits) (string, *connLimiter) {
	t.Helper()
	_, addr, cl := serveLimitedServer(t, secret, lim)
	return addr, cl
}

// serveLimitedServer is serveLimited with the server it serves.
func serveLimitedServer(t *testing.T, secret []byte, lim Limits) (*Server, string, *connLimiter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(&controller.Loop{}, secret)
	hs, limited := HTTPServer(srv.Handler(), ln, lim)
	go hs.Serve(limited)
	t.Cleanup(func() { hs.Close() })
	return srv, ln.Addr().String(), limited.(*connLimiter)
}

func (l *connLimiter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// rawRequest writes req on a new connection and returns the connection and a
// reader of its responses.
func rawRequest(t *testing.T, addr, req string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// signalListener tells accepted of each connection its listener accepted:
// the connection limiter then takes it, or waits for room with it.
type signalListener struct {
	net.Listener
	accepted chan struct{}
}

func (l signalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- struct{}{}
	}
	return c, err
}

// listenSignalling listens on loopback; the channel is told of each
// connection accepted.
func listenSignalling(t *testing.T) (signalListener, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 10)
	return signalListener{Listener: ln, accepted: accepted}, accepted
}

// waitAccepted waits up to 2 s for accepted to tell of a connection.
func waitAccepted(t *testing.T, accepted <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-accepted:
	case <-time.After(2 * time.Second):
		t.Fatalf("%s: not accepted within 2 s", what)
	}
}

// closedWithin reports whether the server closes c within d (reading whatever
// it sends first).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

// TestConnectionCapIdleFlood: 64 keep-alive connections left idle after a
// request, against a cap of 8: the server never holds more than 8 (each new
// connection closes an idle one), and /healthz answers at once afterwards. The
// old server kept every idle connection open (20,000 exhausted its file
// descriptors).
func TestConnectionCapIdleFlood(t *testing.T) {
	lim := DefaultLimits
	lim.MaxConnections = 8
	addr, cl := serveLimited(t, []byte("s"), lim)
	var conns []net.Conn
	for i := range 64 {
		c, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conns = append(conns, c) // left open, idle
		if n := cl.count(); n > 8 {
			t.Fatalf("after %d idle connections the server holds %d, cap 8", i+1, n)
		}
	}
	// The server holds 8: the 56 others were closed by it (mostly the oldest;
	// a connection whose idle hook runs late may outlive a newer one).
	var closed sync.WaitGroup
	var n atomic.Int64
	for _, c := range conns {
		closed.Go(func() {
			if closedWithin(c, time.Second) {
				n.Add(1)
			}
		})
	}
	closed.Wait()
	if n.Load() != 56 {
		t.Errorf("%d of the 64 idle connections closed by the server, want 56", n.Load())
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz after the flood: %v", err)
	}
	resp.Body.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("/healthz took %v", d)
	}
}

// TestSlowClientsTimedOut: a client that never finishes its headers, one that
// trickles a signed webhook body and one that stays idle are disconnected by the
// read-header, read and idle timeouts; at the connection cap, a new connection
// refuses the oldest that has not sent its headers yet (SlowHeaders is 0 here):
// it is answered 429 with Retry-After, then closed.
func TestSlowClientsTimedOut(t *testing.T) {
	lim := Limits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond, WriteTimeout: time.Second,
		IdleTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4096, MaxConnections: 4}
	addr, cl := serveLimited(t, []byte("s3cret"), lim)
	header, _ := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	body, _ := rawRequest(t, addr, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 1000000\r\n\r\n{")
	go func() { // one byte every 100 ms
		for range 30 {
			time.Sleep(100 * time.Millisecond)
			if _, err := body.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	idle, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the idle connection's request: %v", err)
	}
	for name, c := range map[string]net.Conn{"unfinished headers": header, "trickled body": body, "idle": idle} {
		if !closedWithin(c, 2*time.Second) {
			t.Errorf("%s: still open after 2 s", name)
		}
	}
	// At the cap (4), every connection without a finished request: a new one
	// closes the oldest. Each is accepted before the next is opened.
	gittest.WaitFor(t, "the connections above closed", func() bool { return cl.count() == 0 })
	var pending []net.Conn
	for i := range 4 {
		c, _ := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\n")
		pending = append(pending, c)
		gittest.WaitFor(t, fmt.Sprintf("%d connections open", i+1), func() bool { return cl.count() == i+1 })
	}
	start := time.Now()
	c, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz at the cap: %v", err)
	}
	pending[0].SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if resp, err := http.ReadResponse(bufio.NewReader(pending[0]), nil); err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the oldest unfinished connection, refused: %v, want 429 with Retry-After", err)
	} else if !closedWithin(pending[0], 100*time.Millisecond) {
		t.Error("the oldest unfinished connection is still open after its 429")
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("/healthz at the cap took %v (it waited for a timeout)", d)
	}
}

// TestWebhookRefusedBeforeBody: a delivery without its signature header, with an
// over-long delivery id, or (generic) without a timestamp in the replay window
// is answered before its body is sent; beyond MaxBodyReads bodies being read at
// once, a delivery is answered 503 at once.
func TestWebhookRefusedBeforeBody(t *testing.T) {
	srv, addr, _ := serveLimitedServer(t, []byte("s3cret"), DefaultLimits)
	old := strconv.FormatInt(time.Now().Add(-ReplayWindow-time.Minute).Unix(), 10)
	future := strconv.FormatInt(time.Now().Add(ReplayWindow+time.Minute).Unix(), 10)
	for _, tc := range []struct {
		name, path, headers string
		code                int
	}{
		{"github, no signature", "/hooks/github", "", 401},
		{"gitea, no signature", "/hooks/gitea", "", 401},
		{"gitlab, no token", "/hooks/gitlab", "", 401},
		{"generic, no signature", "/hooks/generic", "X-Fuelsync-Timestamp: 1\r\n", 401},
		{"generic, no timestamp", "/hooks/generic", "X-Fuelsync-Signature: sha256=00\r\n", 401},
		{"generic, old timestamp", "/hooks/generic", "X-Fuelsync-Signature: sha256=00\r\nX-Fuelsync-Timestamp: " + old + "\r\n", 401},
		{"generic, future timestamp", "/hooks/generic", "X-Fuelsync-Signature: sha256=00\r\nX-Fuelsync-Timestamp: " + future + "\r\n", 401},
		{"github, 129-byte delivery id", "/hooks/github", "X-Hub-Signature-256: sha256=00\r\nX-GitHub-Delivery: " + strings.Repeat("d", MaxDeliveryID+1) + "\r\n", 400},
	} {
		c, r := rawRequest(t, addr, "POST "+tc.path+" HTTP/1.1\r\nHost: x\r\n"+tc.headers+"Content-Length: 1000000\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Errorf("%s: no answer before the body: %v", tc.name, err)
			continue
		}
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.code)
		}
	}
	// Headers over MaxHeaderBytes (64 KiB) are refused by the server itself.
	c, r := rawRequest(t, addr, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Delivery: "+strings.Repeat("d", 200<<10)+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 431 {
		t.Errorf("a 200 KB header: %v %v, want 431", resp, err)
	}

	// MaxBodyReads signed deliveries trickling their bodies; one more is 503.
	var slow []net.Conn
	for i := range MaxBodyReads {
		c, _ := rawRequest(t, addr, fmt.Sprintf("POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nX-GitHub-Delivery: slow-%d\r\nContent-Length: 100\r\n\r\n{", i))
		slow = append(slow, c)
	}
	gittest.WaitFor(t, "all reading their bodies", func() bool { return len(srv.reads) == MaxBodyReads })
	c, r = rawRequest(t, addr, "POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 2\r\n\r\n{}")
	c.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a delivery beyond %d bodies being read: %v %v, want 503 with Retry-After", MaxBodyReads, resp, err)
	}
	var wg sync.WaitGroup
	for _, c := range slow { // finished: each refused for its signature
		wg.Go(func() {
			io.WriteString(c, strings.Repeat(" ", 98)+"}")
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 401 {
				t.Errorf("a slow delivery finished: %v %v, want 401", resp, err)
			}
		})
	}
	wg.Wait()
}

// TestCloseWhileFull: closing the server while a connection waits for room (every
// connection serving a request) returns at once.
func TestCloseWhileFull(t *testing.T) {
	ln, accepted := listenSignalling(t)
	block := make(chan struct{})
	defer close(block)
	lim := DefaultLimits
	lim.MaxConnections = 1
	hs, limited := HTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }), ln, lim)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(limited) }()
	busy, _ := rawRequest(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	waitAccepted(t, accepted, "the first connection")
	gittest.WaitFor(t, "the first request being served", func() bool { return limited.(*connLimiter).count() == 1 })
	rawRequest(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // waits for room
	waitAccepted(t, accepted, "the second connection")
	if err := limited.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err == nil {
			t.Error("Serve returned no error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Serve still waiting for room 2 s after the listener closed")
	}
	busy.Close()
}

// TestWaitingConnectionTakesIdleOne: at the cap with every connection serving a
// request, a new connection waits; when one of them turns idle, it is closed
// for the newcomer at once (not after the idle timeout).
func TestWaitingConnectionTakesIdleOne(t *testing.T) {
	ln, accepted := listenSignalling(t)
	release, entered := make(chan struct{}), make(chan struct{})
	lim := DefaultLimits
	lim.MaxConnections = 1
	hs, limited := HTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "ok\n")
	}), ln, lim)
	go hs.Serve(limited)
	t.Cleanup(func() { hs.Close() })
	busy, busyR := rawRequest(t, ln.Addr().String(), "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	waitAccepted(t, accepted, "the slow request's connection")
	c, r := rawRequest(t, ln.Addr().String(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	// The limiter waits for room with it.
	waitAccepted(t, accepted, "the waiting connection")
	close(release) // the slow request ends; its connection turns idle
	if resp, err := http.ReadResponse(busyR, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the slow request: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the waiting connection, 2 s after the other turned idle: %v", err)
	}
	if !closedWithin(busy, time.Second) {
		t.Error("the idle connection was not closed for the newcomer")
	}
}

// TestSlowHeadersGrace: at the connection cap, a connection still sending its
// headers is refused only once it has taken SlowHeaders: until then the
// newcomer waits (in a burst, every connection is new for a moment, and is
// read in turn). Then the oldest is answered 429 with Retry-After, the other
// one, which finishes its headers later, is served.
func TestSlowHeadersGrace(t *testing.T) {
	lim := DefaultLimits
	lim.MaxConnections, lim.SlowHeaders = 2, 400*time.Millisecond
	addr, cl := serveLimited(t, []byte("s"), lim)
	p1, r1 := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\n")
	gittest.WaitFor(t, "the first connection open", func() bool { return cl.count() == 1 })
	p2, r2 := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\n")
	gittest.WaitFor(t, "2 connections open", func() bool { return cl.count() == 2 })
	start := time.Now()
	c, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	took := time.Since(start)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz at the cap: %v", err)
	}
	if took < 250*time.Millisecond || took > 2*time.Second {
		t.Errorf("/healthz at the cap answered after %v, want after the 400 ms grace of the oldest connection", took)
	}
	p1.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(r1, nil); err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the oldest unfinished connection: %v, want 429 with Retry-After", err)
	}
	io.WriteString(p2, "Host: x\r\n\r\n")
	p2.SetReadDeadline(time.Now().Add(time.Second))
	if resp, err := http.ReadResponse(r2, nil); err != nil || resp.StatusCode != 200 {
		t.Errorf("the younger unfinished connection, finished: %v, want 200", err)
	}
}
