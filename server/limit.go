package server

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound the time and the connections one client can take from serve.
type Limits struct {
	// ReadHeaderTimeout is the time to send a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is the time to send a whole request, its body included.
	ReadTimeout time.Duration
	// WriteTimeout is the time from the end of the request's headers to the end
	// of the response.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection waits for its next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxConnections caps the connections open at once. At the cap, a new
	// connection closes an idle keep-alive connection from which nothing of
	// a next request has been read (one whose request arrives as it is
	// closed is answered 503 with Connection: close, not served), else
	// refuses the oldest one that has not finished sending its headers
	// within SlowHeaders (it is answered 429 with Retry-After, never closed
	// without an answer), else it waits, in the kernel's accept queue, for
	// one to close or to wait.
	// Connections of long-polls (see Waiting) do not count while they wait.
	MaxConnections int
	// SlowHeaders is how long a connection may take to send its headers
	// before it may be refused to make room at the connection cap. Younger
	// ones are waited for: in a burst of agents they are read in turn.
	SlowHeaders time.Duration
}

// DefaultLimits are serve's limits.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxConnections:    256,
	SlowHeaders:       time.Second,
}

// The Retry-After of a request refused for capacity (429), in seconds: a
// random whole number in [RetryAfterMin, RetryAfterMax], so that a crowd
// refused at the same moment does not come back at the same moment.
const (
	RetryAfterMin = 5
	RetryAfterMax = 15
)

// retryAfter is a Retry-After value for a 429 (RetryAfterMin..RetryAfterMax).
func retryAfter() string {
	return strconv.Itoa(RetryAfterMin + rand.IntN(RetryAfterMax-RetryAfterMin+1))
}

// tooMany answers w 429 with a random Retry-After and msg.
func tooMany(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", retryAfter())
	http.Error(w, msg, http.StatusTooManyRequests)
}

// HTTPServer is an http.Server for handler with lim's timeouts, and ln wrapped
// to cap its connections at lim.MaxConnections: serve with hs.Serve(limited).
func HTTPServer(handler http.Handler, ln net.Listener, lim Limits) (hs *http.Server, limited net.Listener) {
	cl := &connLimiter{Listener: ln, max: lim.MaxConnections, slow: lim.SlowHeaders, open: map[*limitedConn]connInfo{}}
	cl.cond = sync.NewCond(&cl.mu)
	hs = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ConnState:         cl.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok {
				return context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
	}
	if lim.MaxConnections <= 0 {
		return hs, ln
	}
	return hs, cl
}

type connInfo struct {
	state   http.ConnState
	since   time.Time // accepted, or its last request started
	waiting bool      // its request is a long-poll, waiting (see Waiting)
}

type connKey struct{}

// Waiting takes the connection of the request whose context is ctx out of the
// connection cap until done is called: a long-poll that waits for a change
// would otherwise hold a place of MaxConnections for minutes, and enough of
// them would lock out probes and webhooks. The caller bounds the waiting
// connections itself (the artifact API's --max-waiting). A waiting connection
// is serving a request, so it is never closed to make room. Without a
// connection cap, done does nothing.
func Waiting(ctx context.Context) (done func()) {
	lc, ok := ctx.Value(connKey{}).(*limitedConn)
	if !ok {
		return func() {}
	}
	l := lc.l
	set := func(w bool) {
		l.mu.Lock()
		if info, ok := l.open[lc]; ok && info.waiting != w {
			info.waiting = w
			l.open[lc] = info
			if w {
				l.waiting++
			} else {
				l.waiting--
			}
			l.cond.Broadcast()
		}
		l.mu.Unlock()
	}
	set(true)
	var once sync.Once
	return func() { once.Do(func() { set(false) }) }
}

// connLimiter is a listener with at most max connections open, like
// golang.org/x/net/netutil.LimitListener, except that when it is full a new
// connection first makes room: it closes an idle keep-alive connection (which
// costs its client nothing to reopen) from which nothing has been read since
// its last answer (see limitedConn.phase), else it refuses (429, Retry-After) the
// oldest connection that has not sent its headers within slow. So neither idle
// nor slow-header connections can lock the others out, and no connection that
// may carry a request is closed without an answer. Connections younger than
// slow are waited for: a burst of thousands of agents stays in the kernel's
// accept queue and is read in turn, max at a time.
type connLimiter struct {
	net.Listener
	max  int
	slow time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	open    map[*limitedConn]connInfo
	waiting int // of open, those waiting in a long-poll: not counted
	// refusing counts the connections refused (429) or closed (idle) to
	// make room and not yet closed; they are no longer in open. At most max.
	refusing int
	closed   bool
}

// Close closes the listener and wakes an Accept waiting for room.
func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for len(l.open)-l.waiting >= l.max && !l.closed {
		idle, slow, next := l.victim(time.Now())
		if idle != nil {
			// Its place is the newcomer's unless a request has come on it
			// meanwhile (then it is busy: look again).
			if idle.phase.CompareAndSwap(phaseIdle, phaseClosing) {
				delete(l.open, idle)
				l.refusing++
				// Wake the server's wait for its next request: it reads
				// nothing more (Read), and closes it.
				idle.Conn.SetReadDeadline(time.Now())
			}
			continue
		}
		if slow != nil {
			// Its place is the newcomer's; it is counted apart until it
			// closes (within refuseLinger), at most max of them.
			delete(l.open, slow)
			l.refusing++
			slow.refused.Store(true)
			l.mu.Unlock()
			slow.refuse(fmt.Sprintf("too many connections (%d open); retry later\n", l.max))
			l.mu.Lock()
			continue
		}
		if next > 0 { // wake when the oldest new one may be refused
			t := time.AfterFunc(next, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
			l.cond.Wait()
			t.Stop()
			continue
		}
		l.cond.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	lc := &limitedConn{Conn: c, l: l}
	l.open[lc] = connInfo{state: http.StateNew, since: time.Now()}
	l.mu.Unlock()
	return lc, nil
}

// victim is what makes room at the cap: the idle connection whose last
// request is the oldest and from which nothing has been read since, to close;
// else the oldest new one that has not sent its headers within l.slow, to
// refuse; else, when a new one may be refused later, how long until then.
// None while max connections are being refused or closed. Called with mu
// held.
func (l *connLimiter) victim(now time.Time) (idle, slow *limitedConn, next time.Duration) {
	if l.refusing >= l.max {
		return nil, nil, 0
	}
	var fresh *limitedConn
	var idleAt, freshAt time.Time
	for c, info := range l.open {
		switch {
		case info.state == http.StateIdle && c.phase.Load() == phaseIdle:
			if idle == nil || info.since.Before(idleAt) {
				idle, idleAt = c, info.since
			}
		case info.state == http.StateNew:
			if fresh == nil || info.since.Before(freshAt) {
				fresh, freshAt = c, info.since
			}
		}
	}
	if idle != nil || fresh == nil {
		return idle, nil, 0
	}
	if age := now.Sub(freshAt); age >= l.slow {
		return nil, fresh, 0
	}
	return nil, nil, l.slow - now.Sub(freshAt)
}

func (l *connLimiter) connState(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		lc.release()
		return
	case http.StateIdle:
		lc.phase.CompareAndSwap(phaseBusy, phaseIdle)
	case http.StateActive:
		lc.phase.CompareAndSwap(phaseIdle, phaseBusy)
	}
	l.mu.Lock()
	if info, ok := l.open[lc]; ok {
		info.state = state
		if state == http.StateActive {
			// An idle connection's age counts from its last request's start: the
			// StateIdle hook may run late, after the client has moved on.
			info.since = time.Now()
		}
		l.open[lc] = info
		if state == http.StateIdle {
			l.cond.Broadcast() // an Accept waiting for room may close it
		}
	}
	l.mu.Unlock()
}

// limitedConn frees its place in the limiter when it closes.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	once    sync.Once
	refused atomic.Bool // answered by refuse: the server reads nothing more, writes nothing more
	// phase says whether the connection may be closed to make room:
	// phaseIdle from its answer (the server's idle hook) until anything is
	// read from it; phaseClosing once chosen to make room.
	phase atomic.Int32
}

// The phases of a limitedConn.
const (
	phaseBusy    = iota // new, or a request read or being served
	phaseIdle           // answered, and nothing read since
	phaseClosing        // closed to make room: its next request is not served
)

// The linger of a refused connection: after its 429, it is read (and what is
// read thrown away) for at most refuseLinger or refuseDrain bytes before it is
// closed, so that closing it with its request unread does not reset the
// connection and lose the answer on the client's side.
const (
	refuseLinger = time.Second
	refuseDrain  = 64 << 10
)

// refuse answers c 429 with Retry-After and msg in place of the server, ends
// its writing side, and lets the server's reading of it drain what the client
// sent (see Read) until it closes. c has not sent its headers yet; its
// request, if it completes meanwhile, is not served.
func (c *limitedConn) refuse(msg string) {
	c.answer("429 Too Many Requests", retryAfter(), msg)
}

// answer writes a whole answer (status, Retry-After and msg, with
// Connection: close and the security headers) on c in place of the server,
// marks c refused, ends its writing side and sets its linger.
func (c *limitedConn) answer(status, retry, msg string) {
	c.refused.Store(true)
	c.Conn.SetWriteDeadline(time.Now().Add(refuseLinger))
	var head strings.Builder
	for _, kv := range SecurityHeaders {
		head.WriteString(kv[0] + ": " + kv[1] + "\r\n")
	}
	fmt.Fprintf(c.Conn, "HTTP/1.1 %s\r\nRetry-After: %s\r\nContent-Type: text/plain; charset=utf-8\r\n%s"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", status, retry, head.String(), len(msg), msg)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.Conn.SetReadDeadline(time.Now().Add(refuseLinger))
}

// Read reads the request, unless the connection was refused: then it reads
// and throws away what the client sends, until the client closes, the linger
// ends or refuseDrain bytes, and returns io.EOF (the server then closes the
// connection without a word). A connection closed to make room reads
// nothing more: io.EOF at once, or, when a request comes as it is closed, an
// answer 503 with Connection: close in place of the server, and the drain.
func (c *limitedConn) Read(p []byte) (int, error) {
	if !c.refused.Load() {
		n, err := c.Conn.Read(p)
		if n > 0 && !c.phase.CompareAndSwap(phaseIdle, phaseBusy) && c.phase.Load() == phaseClosing && !c.refused.Load() {
			c.answer("503 Service Unavailable", "1", fmt.Sprintf("too many connections (%d open); this one was closed to make room as this request came: it was not served, send it again\n", c.l.max))
		}
		if !c.refused.Load() {
			if c.phase.Load() == phaseClosing && n == 0 {
				return 0, io.EOF
			}
			return n, err
		}
	}
	var buf [4096]byte
	for drained := 0; drained < refuseDrain; {
		n, err := c.Conn.Read(buf[:])
		drained += n
		if err != nil {
			break
		}
	}
	return 0, io.EOF
}

// Write writes, unless the connection was refused: its answer is written.
func (c *limitedConn) Write(p []byte) (int, error) {
	if c.refused.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

// SetReadDeadline sets the read deadline, unless the connection was refused
// (it keeps its linger) or closed to make room (it keeps its deadline, past).
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if c.refused.Load() || c.phase.Load() == phaseClosing {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the deadlines, unless the connection was refused or
// closed to make room.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if c.refused.Load() || c.phase.Load() == phaseClosing {
		return nil
	}
	return c.Conn.SetDeadline(t)
}

func (c *limitedConn) release() {
	c.once.Do(func() {
		c.l.mu.Lock()
		if info, ok := c.l.open[c]; ok {
			if info.waiting {
				c.l.waiting--
			}
			delete(c.l.open, c)
		} else if c.refused.Load() || c.phase.Load() == phaseClosing {
			c.l.refusing--
		}
		c.l.cond.Broadcast()
		c.l.mu.Unlock()
	})
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
