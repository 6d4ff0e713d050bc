package server

import (
	"context"
	"net"
	"net/http"
	"sync"
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
	// connection closes an idle keep-alive connection, else the oldest one that
	// has not finished sending its headers, else it waits for one to close.
	// Connections of long-polls (see Waiting) do not count while they wait.
	MaxConnections int
}

// DefaultLimits are serve's limits.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxConnections:    256,
}

// HTTPServer is an http.Server for handler with lim's timeouts, and ln wrapped
// to cap its connections at lim.MaxConnections: serve with hs.Serve(limited).
func HTTPServer(handler http.Handler, ln net.Listener, lim Limits) (hs *http.Server, limited net.Listener) {
	cl := &connLimiter{Listener: ln, max: lim.MaxConnections, open: map[*limitedConn]connInfo{}}
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
// connection first makes room by closing a connection that costs a client
// nothing to reopen: an idle keep-alive one, else the oldest one that has not
// sent its request yet. So neither idle nor slow-header connections can lock
// the others out.
type connLimiter struct {
	net.Listener
	max int

	mu      sync.Mutex
	cond    *sync.Cond
	open    map[*limitedConn]connInfo
	waiting int // of open, those waiting in a long-poll: not counted
	closed  bool
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
		if victim := l.victim(); victim != nil {
			delete(l.open, victim)
			l.mu.Unlock()
			victim.Conn.Close()
			l.mu.Lock()
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

// victim is the idle connection whose last request is the oldest, else the
// oldest new one; nil when every connection is serving a request. Called with
// mu held.
func (l *connLimiter) victim() *limitedConn {
	var idle, fresh *limitedConn
	var idleAt, freshAt time.Time
	for c, info := range l.open {
		switch info.state {
		case http.StateIdle:
			if idle == nil || info.since.Before(idleAt) {
				idle, idleAt = c, info.since
			}
		case http.StateNew:
			if fresh == nil || info.since.Before(freshAt) {
				fresh, freshAt = c, info.since
			}
		}
	}
	if idle != nil {
		return idle
	}
	return fresh
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
	l    *connLimiter
	once sync.Once
}

func (c *limitedConn) release() {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c].waiting {
			c.l.waiting--
		}
		delete(c.l.open, c)
		c.l.cond.Broadcast()
		c.l.mu.Unlock()
	})
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
