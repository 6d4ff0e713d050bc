package etcdstate

// Shards (serve --shard; controller/shard.go): the replicas share the
// clusters instead of electing one leader.
//
//	<ns>/members/<id>       a live replica (JSON: id, since), on its lease
//	<ns>/owners/<cluster>   the owner of a cluster: the member's id, on the
//	                        member's lease (so it goes with the member)
//
// A commit of a shard (CommitShard) is optimistic: it writes the parts of
// its state that the header it read does not name (its own clusters' and the
// rest: units.go), then one transaction puts the header and the serial only if the
// serial is still the one read and the committer's lease still holds the
// owner key of every cluster it changes. When another owner committed
// meanwhile, the stored state is read again, the committer's clusters are
// put into it (state.MergeShard), and the merge is committed at the next
// serial, until it lands. No owner waits on a lock, and none overwrites
// another's clusters.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fuelsync/fuelsync/state"
)

var _ state.Sharder = (*Etcd)(nil)

// member is a state.Membership on etcd: a session whose lease holds the
// member key and the owner keys.
type member struct {
	id      string
	session *concurrency.Session
}

func (m *member) ID() string              { return m.id }
func (m *member) Done() <-chan struct{}   { return m.session.Done() }
func (m *member) lease() clientv3.LeaseID { return m.session.Lease() }

// Leave revokes the member's lease: its member key and owner keys go at once.
func (m *member) Leave(ctx context.Context) error { return m.session.Close() }

// maxMemberID bounds a replica's identity, which is a key segment.
const maxMemberID = 128

// checkSegment refuses a name that is not a key segment: empty, too long, a
// slash, a space or a control character.
func checkSegment(what, s string) error {
	if s == "" || len(s) > maxMemberID || strings.ContainsFunc(s, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("the %s %q is not 1 to %d bytes without a slash, a space or a control character", what, s, maxMemberID)
	}
	return nil
}

// Join implements state.Sharder: the member key <ns>/members/<id> on a new
// lease of LockTTL, kept alive while ctx lives. An id another live member
// has is refused.
func (e *Etcd) Join(ctx context.Context, id, url string) (state.Membership, error) {
	if err := checkSegment("replica id", id); err != nil {
		return nil, err
	}
	session, err := e.session(ctx, context.WithoutCancel(ctx), "joining the shards of")
	if err != nil {
		return nil, err
	}
	info := map[string]string{"id": id, "since": time.Now().UTC().Format(time.RFC3339)}
	if url != "" {
		info["url"] = url
	}
	data, _ := json.Marshal(info)
	k := e.key("members/" + id)
	var resp *clientv3.TxnResponse
	err = e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(data), clientv3.WithLease(session.Lease()))).Else(clientv3.OpGet(k)).Commit()
		return err
	})
	if err != nil {
		session.Close()
		return nil, e.wrap("joining the shards of", err)
	}
	if !resp.Succeeded {
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != session.Lease() {
			session.Close()
			return nil, fmt.Errorf("joining the shards of %s: another live replica has the id %q; give each replica its own --replica-id", e, id)
		}
	}
	return &member{id: id, session: session}, nil
}

// Members implements state.Sharder.
func (e *Etcd) Members(ctx context.Context) ([]string, error) {
	if err := e.reach(ctx, "reading the shards of"); err != nil {
		return nil, err
	}
	var resp *clientv3.GetResponse
	within := e.budget(ctx)
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Get(ctx, e.key("members/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, e.wrapWithin("reading the shards of", within, err)
	}
	return e.memberIDs(resp.Kvs), nil
}

// MemberURLs implements state.Sharder.
func (e *Etcd) MemberURLs(ctx context.Context) (map[string]string, error) {
	if err := e.reach(ctx, "reading the shards of"); err != nil {
		return nil, err
	}
	var resp *clientv3.GetResponse
	within := e.budget(ctx)
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Get(ctx, e.key("members/"), clientv3.WithPrefix())
		return err
	})
	if err != nil {
		return nil, e.wrapWithin("reading the shards of", within, err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		var info struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(kv.Value, &info) == nil && info.URL != "" {
			out[strings.TrimPrefix(string(kv.Key), e.key("members/"))] = info.URL
		}
	}
	return out, nil
}

func (e *Etcd) memberIDs(kvs []*mvccpb.KeyValue) []string {
	out := []string{}
	for _, kv := range kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), e.key("members/")))
	}
	slices.Sort(out)
	return out
}

// WatchMembers implements state.Sharder: the members now, and again after
// every change (a replica joined, left, or its lease expired).
func (e *Etcd) WatchMembers(ctx context.Context) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			gctx, cancel := e.ctx(ctx)
			resp, err := e.client.Get(gctx, e.key("members/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
			cancel()
			if err != nil {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				continue
			}
			select {
			case out <- e.memberIDs(resp.Kvs):
			case <-ctx.Done():
				return
			}
			wctx, wcancel := context.WithCancel(ctx)
			wch := e.client.Watch(clientv3.WithRequireLeader(wctx), e.key("members/"), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
			for wr := range wch {
				if wr.Err() != nil || len(wr.Events) > 0 {
					break // read the list again
				}
			}
			wcancel()
		}
	}()
	return out
}

func asMember(m state.Membership) (*member, error) {
	mm, ok := m.(*member)
	if !ok || mm == nil {
		return nil, errors.New("not a membership of the state on etcd")
	}
	return mm, nil
}

// Claim implements state.Sharder: <ns>/owners/<cluster> is put with m's
// lease when no live member holds it.
func (e *Etcd) Claim(ctx context.Context, m state.Membership, cluster string) (string, error) {
	mm, err := asMember(m)
	if err != nil {
		return "", err
	}
	if err := checkSegment("cluster name", cluster); err != nil {
		return "", err
	}
	k := e.key("owners/" + cluster)
	var resp *clientv3.TxnResponse
	err = e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, mm.id, clientv3.WithLease(mm.lease()))).Else(clientv3.OpGet(k)).Commit()
		return err
	})
	if err != nil {
		return "", e.wrap("claiming cluster "+cluster+" in", err)
	}
	if resp.Succeeded {
		return mm.id, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return "", nil // released meanwhile: claimed at the next try
	}
	if clientv3.LeaseID(kvs[0].Lease) == mm.lease() {
		return mm.id, nil
	}
	return string(kvs[0].Value), nil
}

// Release implements state.Sharder.
func (e *Etcd) Release(ctx context.Context, m state.Membership, clusters []string) error {
	mm, err := asMember(m)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		k := e.key("owners/" + c)
		err := e.retry(ctx, func(ctx context.Context) error {
			_, err := e.client.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(k), "=", mm.lease())).Then(clientv3.OpDelete(k)).Commit()
			return err
		})
		if err != nil {
			return e.wrap("releasing cluster "+c+" in", err)
		}
	}
	return nil
}

// SetBusy implements state.Sharder: <ns>/busy/<id> is put on m's lease
// while m reconciles, and deleted after.
func (e *Etcd) SetBusy(ctx context.Context, m state.Membership, busy bool) error {
	mm, err := asMember(m)
	if err != nil {
		return err
	}
	k := e.key("busy/" + mm.id)
	err = e.retry(ctx, func(ctx context.Context) (err error) {
		if busy {
			_, err = e.client.Put(ctx, k, "", clientv3.WithLease(mm.lease()))
		} else {
			_, err = e.client.Delete(ctx, k)
		}
		return err
	})
	if err != nil {
		return e.wrap("marking replica "+mm.id+" busy in", err)
	}
	return nil
}

// Busy implements state.Sharder.
func (e *Etcd) Busy(ctx context.Context) ([]string, error) {
	var resp *clientv3.GetResponse
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Get(ctx, e.key("busy/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, e.wrap("reading the shards of", err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), e.key("busy/")))
	}
	return out, nil
}

// Owners implements state.Sharder.
func (e *Etcd) Owners(ctx context.Context) (map[string]string, error) {
	if err := e.reach(ctx, "reading the owners of"); err != nil {
		return nil, err
	}
	var resp *clientv3.GetResponse
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = e.client.Get(ctx, e.key("owners/"), clientv3.WithPrefix())
		return err
	})
	if err != nil {
		return nil, e.wrap("reading the owners of", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), e.key("owners/"))] = string(kv.Value)
	}
	return out, nil
}

// maxShardAttempts bounds the merges of one commit: each needs another
// owner's commit between its read and its transaction.
const maxShardAttempts = 20

// CommitShard implements state.Sharder.
func (e *Etcd) CommitShard(ctx context.Context, m state.Membership, clusters []string, prev int64, next *state.State, merge func(cur *state.State) (*state.State, error)) (*state.State, bool, error) {
	mm, err := asMember(m)
	if err != nil {
		return nil, false, err
	}
	if err := e.reach(ctx, "committing the state to"); err != nil {
		return nil, false, err
	}
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	st, merged := next, false
	for attempt := 0; ; attempt++ {
		// The parts the header at prev does not name (after a refusal,
		// the state read again is the one merged into, and its header the
		// one relied on).
		p, err := e.writeState(ctx, prev, st, false)
		if err != nil {
			return nil, false, err
		}
		cmps := []clientv3.Cmp{e.serialIs(prev)}
		for _, c := range clusters {
			cmps = append(cmps, clientv3.Compare(clientv3.LeaseValue(e.key("owners/"+c)), "=", mm.lease()))
		}
		cmps = append(cmps, p.compares(e, len(cmps))...)
		resp, err := e.client.Txn(ctx).If(cmps...).Then(
			clientv3.OpPut(e.key("state"), string(p.header)),
			clientv3.OpPut(e.key("serial"), strconv.FormatInt(st.Serial, 10)),
		).Commit()
		if err != nil {
			return nil, false, e.wrap("committing the state to", err)
		}
		if resp.Succeeded {
			// Parts no header names any more go (a reader at an older
			// revision still reads them there).
			e.committed(ctx, p, resp.Header.Revision)
			return st, merged, nil
		}
		e.dropParts(ctx, p.put)
		// Refused: the owner keys first (a lost cluster is never written),
		// then the state another owner committed, merged.
		if err := e.owns(ctx, mm, clusters); err != nil {
			return nil, false, err
		}
		if attempt+1 >= maxShardAttempts {
			return nil, false, fmt.Errorf("committing to %s: the state moved %d times while this replica merged its clusters into it; nothing was committed, retrying at the next reconcile", e, maxShardAttempts)
		}
		cur, err := e.readState(ctx)
		if err != nil {
			return nil, false, err
		}
		if cur.Lineage != "" && next.Lineage != "" && cur.Lineage != next.Lineage && prev > 0 {
			return nil, false, fmt.Errorf("committing to %s: the state there has lineage %s, not %s (was it replaced by a push?); nothing was committed", e, cur.Lineage, next.Lineage)
		}
		if _, err := state.NextSerial(cur.Serial); err != nil {
			return nil, false, err // a merge would wrap the serial
		}
		if st, err = merge(cur); err != nil {
			return nil, false, err
		}
		prev, merged = cur.Serial, true
	}
}

// owns checks that mm holds the owner key of every one of clusters (a
// *state.ShardLostError names the first it does not).
func (e *Etcd) owns(ctx context.Context, mm *member, clusters []string) error {
	for _, c := range clusters {
		resp, err := e.client.Get(ctx, e.key("owners/"+c))
		if err != nil {
			return e.wrap("reading the owner of cluster "+c+" in", err)
		}
		if len(resp.Kvs) == 0 || clientv3.LeaseID(resp.Kvs[0].Lease) != mm.lease() {
			lost := &state.ShardLostError{Backend: e.String(), Replica: mm.id, Cluster: c}
			if len(resp.Kvs) > 0 {
				lost.Holder = string(resp.Kvs[0].Value)
			}
			return lost
		}
	}
	return nil
}
