package etcdstate

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// closedPort is a loopback address nothing listens at.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// checkRefused runs each request on e and wants each to fail within 3 s
// (the request timeout is 10 s), saying the connection was refused, not
// asking whether a quorum is up.
func checkRefused(t *testing.T, e *Etcd, addr string) {
	t.Helper()
	requests := map[string]func(context.Context) error{
		"ReadState": func(ctx context.Context) error { _, err := e.ReadState(ctx); return err },
		"Lock": func(ctx context.Context) error {
			unlock, err := e.Lock(ctx, "test", 0)
			if err == nil {
				unlock()
			}
			return err
		},
		"Commit":           func(ctx context.Context) error { return e.Commit(ctx, 0, state.Empty()) },
		"Leader":           func(ctx context.Context) error { _, err := e.Leader(ctx); return err },
		"Campaign":         func(ctx context.Context) error { _, err := e.Campaign(ctx, "r"); return err },
		"CommittedSerial":  func(ctx context.Context) error { _, err := e.CommittedSerial(ctx); return err },
		"RequestReconcile": func(ctx context.Context) error { return e.RequestReconcile(ctx, "r") },
	}
	for name, req := range requests {
		start := time.Now()
		err := req(context.Background())
		d := time.Since(start)
		var un *UnreachableError
		switch {
		case err == nil:
			t.Errorf("%s: no error from %s", name, addr)
		case d > 3*time.Second:
			t.Errorf("%s: failed after %s; want under 3s: %v", name, d.Round(time.Millisecond), err)
		case !strings.Contains(err.Error(), "connection refused at "+addr) || strings.Contains(err.Error(), "quorum"):
			t.Errorf("%s: %v; want it to say the connection to %s was refused", name, err, addr)
		case !errors.As(err, &un) || !un.Refused:
			t.Errorf("%s: %v is not an *UnreachableError of refused connections", name, err)
		}
	}
}

// Issue 28, item 7: an etcd nobody listens at failed after the 10 s request
// timeout, asking "is a quorum of its members up?". Every request now fails
// in a few milliseconds, saying the connection was refused.
func TestEtcdRefusedFailsFast(t *testing.T) {
	addr := closedPort(t)
	cfg, err := state.ParseURL("etcd://" + addr + "/refused")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(*cfg) // the default request timeout: 10 s
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkRefused(t, e, addr)

	// With credentials the client authenticates as it opens: said at once too.
	cfg.User, cfg.Password = "u", "p"
	start := time.Now()
	if _, err := Open(*cfg); err == nil || !strings.Contains(err.Error(), "connection refused at "+addr) || time.Since(start) > 3*time.Second {
		t.Errorf("Open with credentials: %v after %s; want connection refused at once", err, time.Since(start).Round(time.Millisecond))
	}
}

// A member that stops while the client is connected: the next requests say
// the connection is refused, in a few seconds, and once it is back they
// succeed again.
func TestEtcdRefusedAfterStop(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cfg, err := state.ParseURL(c.URL("stopped"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.ReadState(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	checkRefused(t, e, cfg.Endpoints[0])
	c.Restart(0)
	c.WaitHealthy(30 * time.Second)
	if _, err := e.ReadState(context.Background()); err != nil {
		t.Errorf("ReadState once etcd is back: %v", err)
	}
}
