package etcdstate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// One candidate leads at a time; when the leader stops reaching etcd (its
// client closed: no more keep-alives, no revoke), the next candidate wins
// within the lease TTL; a resignation leaves no leader.
func TestEtcdElection(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const ttl = 2 * time.Second
	a := etcdWorkdir(t, c, "elect", ttl, 5*time.Second).Backend.(state.Coordinator)
	b := etcdWorkdir(t, c, "elect", ttl, 5*time.Second).Backend.(state.Coordinator)
	ctx := context.Background()
	if _, err := b.Leader(ctx); !errors.Is(err, state.ErrNoLeader) {
		t.Fatalf("leader before any campaign: %v", err)
	}
	if _, err := a.Campaign(ctx, "replica-a"); err != nil {
		t.Fatal(err)
	}
	if id, err := b.Leader(ctx); err != nil || id != "replica-a" {
		t.Fatalf("leader: %q, %v; want replica-a", id, err)
	}
	won := make(chan state.Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx, "replica-b")
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	select {
	case <-won:
		t.Fatal("a second leader while the first lives")
	case <-time.After(time.Second):
	}
	a.Close() // the leader is gone
	gone := time.Now()
	var lb state.Leadership
	select {
	case lb = <-won:
		t.Logf("replica-b leads %s after replica-a was gone (lease TTL %s)", time.Since(gone).Round(time.Millisecond), ttl)
	case <-time.After(ttl + 2*time.Second):
		t.Fatalf("no new leader %s after the first was gone (lease TTL %s)", ttl+2*time.Second, ttl)
	}
	if id, err := b.Leader(ctx); err != nil || id != "replica-b" {
		t.Fatalf("leader: %q, %v; want replica-b", id, err)
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Leader(ctx); !errors.Is(err, state.ErrNoLeader) {
		t.Fatalf("leader after the resignation: %v", err)
	}
}

// WatchSerial sends the serial now and after each commit.
func TestEtcdWatchSerial(t *testing.T) {
	c := etcdtest.Start(t, 1)
	e := etcdWorkdir(t, c, "watch", 5*time.Second, 5*time.Second).Backend.(state.Coordinator)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := e.WatchSerial(ctx)
	next := func() int64 {
		t.Helper()
		select {
		case n := <-ch:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no serial from the watch in 10s")
			return -1
		}
	}
	if n := next(); n != 0 {
		t.Fatalf("first serial %d; want 0", n)
	}
	for serial := int64(1); serial <= 3; serial++ {
		st := state.Empty()
		st.Lineage, st.Serial = "w", serial
		if err := e.Commit(ctx, serial-1, st); err != nil {
			t.Fatal(err)
		}
		if n := next(); n != serial {
			t.Fatalf("the watch sent %d after the commit of serial %d", n, serial)
		}
	}
	cancel()
	for range ch { // closed when ctx ends
	}
}
