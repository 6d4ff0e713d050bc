package etcdstate

// What a replica (controller.Replica) needs of the state on etcd besides the
// election (elect.go): the committed serial and the reconcile requests a
// follower hands to the leader through <prefix>/trigger.

import (
	"context"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CommittedSerial reads the serial committed on etcd (0 when none).
func (e *Etcd) CommittedSerial(ctx context.Context) (int64, error) {
	if err := e.reach(ctx, "reading the serial from"); err != nil {
		return 0, err
	}
	within := e.budget(ctx)
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	resp, err := e.client.Get(ctx, e.key("serial"))
	if err != nil {
		return 0, e.wrapWithin("reading the serial from", within, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
}

// RequestReconcile asks the leader of the replicas for a reconcile: a write
// to <prefix>/trigger, which the leader watches; from names the asker.
func (e *Etcd) RequestReconcile(ctx context.Context, from string) error {
	if err := e.reach(ctx, "asking the leader for a reconcile through"); err != nil {
		return err
	}
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	if _, err := e.client.Put(ctx, e.key("trigger"), from+" "+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return e.wrap("asking the leader for a reconcile through", err)
	}
	return nil
}

// WatchRequests sends one value for every RequestReconcile made after it
// started, until ctx ends (then the channel is closed). Requests that arrive
// while one is pending are coalesced.
func (e *Etcd) WatchRequests(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			wch := e.client.Watch(clientv3.WithRequireLeader(ctx), e.key("trigger"))
			for wr := range wch {
				if wr.Err() != nil {
					break
				}
				if len(wr.Events) > 0 {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
	}()
	return out
}
