package etcdstate

// For replicas (serve with several processes on one etcd state, replica.go):
// a leader election on <prefix>/leader and a watch of the committed serial.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fuelsync/fuelsync/state"
)

// leadership is a won election (a state.Leadership): it lasts while the
// lease lives (this process alive and reaching etcd); Done is closed when it
// is lost.
type leadership struct {
	session  *concurrency.Session
	election *concurrency.Election
}

// Done is closed when the leadership is lost (the lease expired or was
// revoked).
func (l *leadership) Done() <-chan struct{} { return l.session.Done() }

// Resign gives the leadership up; another candidate wins the election.
func (l *leadership) Resign(ctx context.Context) error {
	err := l.election.Resign(ctx)
	if cerr := l.session.Close(); err == nil {
		err = cerr
	}
	return err
}

// Campaign waits until this process, named id (shown as the leader's
// identity), leads the replicas of the state, or ctx ends. A leader that dies
// loses the election when its lease expires (LockTTL).
func (e *Etcd) Campaign(ctx context.Context, id string) (state.Leadership, error) {
	session, err := e.session(ctx, context.WithoutCancel(ctx), "campaigning on")
	if err != nil {
		return nil, err
	}
	el := concurrency.NewElection(session, e.key("leader"))
	if err := el.Campaign(ctx, id); err != nil {
		session.Close()
		return nil, e.wrap("campaigning on", err)
	}
	// Campaign returns once the older candidates' keys are gone, even when
	// this candidate's own key went with its lease meanwhile (etcd out of
	// reach longer than the TTL): such a win is no leadership.
	lost := func() error {
		session.Close()
		return fmt.Errorf("campaigning on %s: the campaign's lease expired while it waited (etcd out of reach for the lease TTL %s?)", e, e.cfg.LockTTL)
	}
	select {
	case <-session.Done():
		return nil, lost()
	default:
	}
	var resp *clientv3.GetResponse
	err = e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Get(ctx, e.key("leader/"), clientv3.WithFirstCreate()...)
		return err
	})
	if err != nil {
		session.Close()
		return nil, e.wrap("campaigning on", err)
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Key) != el.Key() {
		return nil, lost()
	}
	return &leadership{session: session, election: el}, nil
}

// Leader returns the identity of the current leader (state.ErrNoLeader
// when none).
func (e *Etcd) Leader(ctx context.Context) (string, error) {
	if err := e.reach(ctx, "reading the leader from"); err != nil {
		return "", err
	}
	within := e.budget(ctx)
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	resp, err := e.client.Get(ctx, e.key("leader/"), clientv3.WithFirstCreate()...)
	if err != nil {
		return "", e.wrapWithin("reading the leader from", within, err)
	}
	if len(resp.Kvs) == 0 {
		return "", state.ErrNoLeader
	}
	return string(resp.Kvs[0].Value), nil
}

// WatchSerial sends the committed serial now and after every commit, until
// ctx ends (then the channel is closed). Serials may be skipped, never
// reordered.
func (e *Etcd) WatchSerial(ctx context.Context) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		defer close(out)
		send := func(v []byte) bool {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			select {
			case out <- n:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for ctx.Err() == nil {
			gctx, cancel := e.ctx(ctx)
			resp, err := e.client.Get(gctx, e.key("serial"))
			cancel()
			if err != nil {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				continue
			}
			var v []byte
			if len(resp.Kvs) > 0 {
				v = resp.Kvs[0].Value
			}
			if !send(v) {
				return
			}
			wch := e.client.Watch(clientv3.WithRequireLeader(ctx), e.key("serial"), clientv3.WithRev(resp.Header.Revision+1))
			for wr := range wch {
				if wr.Err() != nil {
					break // compacted or no leader: read again
				}
				for _, ev := range wr.Events {
					if !send(ev.Kv.Value) {
						return
					}
				}
			}
		}
	}()
	return out
}
