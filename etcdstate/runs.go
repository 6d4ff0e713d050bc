package etcdstate

// The deployment runs on etcd, in the prefix's namespace (<ns> is
// <prefix>/.fuelsync):
//
//	<ns>/runs-active/<cluster>                  the id of the cluster's run that has not ended
//	<ns>/runs/<cluster>/last                    the id of the cluster's newest run
//	<ns>/runs/<cluster>/run/<id>/head           what it was asked (the header, gzipped JSON)
//	<ns>/runs/<cluster>/run/<id>/len            how many events its log holds
//	<ns>/runs/<cluster>/run/<id>/log/<n>        a batch of events, the first the log's nth
//	<ns>/runs/<cluster>/run/<id>/summary        once it ended
//	<ns>/runs/<cluster>/run/<id>/output/<task>  a failed task's output
//	<ns>/runs/<cluster>/snap/<sha256>/<i>       the graph snapshot, in parts of at most 1 MiB
//
// (<id>, <n> in 16 digits, <i> in 4). A batch is appended by one
// transaction that compares the log's length with the one its writer read,
// so that two writers (a leader that lost its lease, and the new one) never
// interleave: the second reads the log again. A run is created by one
// transaction that compares the cluster's active key's absence and its last
// id; it ends by one that writes the summary and removes the active key.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/runs"
)

// Runs is where the deployment runs are kept beside this state: etcd.
func (e *Etcd) Runs() runs.Store { return &etcdRuns{e: e} }

type etcdRuns struct{ e *Etcd }

// snapPart bounds a part of a snapshot (etcd's requests are at most 1.5 MiB
// by default).
const snapPart = 1 << 20

func (r *etcdRuns) String() string { return r.e.String() }

func (r *etcdRuns) key(cluster string, parts ...string) string {
	return r.e.key("runs/" + cluster + "/" + strings.Join(parts, "/"))
}

func (r *etcdRuns) runKey(cluster, id string, parts ...string) (string, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
		return "", fmt.Errorf("run id %q is not a positive number", id)
	}
	return r.key(cluster, append([]string{"run", fmt.Sprintf("%016d", n)}, parts...)...), nil
}

func (r *etcdRuns) activeKey(cluster string) string { return r.e.key("runs-active/" + cluster) }

// get reads one key: its value and mod revision (nil, 0 when absent).
func (r *etcdRuns) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var resp *clientv3.GetResponse
	err := r.e.retry(ctx, func(ctx context.Context) error {
		var err error
		resp, err = r.e.client.Get(ctx, key, opts...)
		return err
	})
	return resp, err
}

func (r *etcdRuns) txn(ctx context.Context, cmps []clientv3.Cmp, ops ...clientv3.Op) (bool, error) {
	tctx, cancel := context.WithTimeout(ctx, r.e.cfg.Timeout)
	defer cancel()
	resp, err := r.e.client.Txn(tctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func gz(v any) (string, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(js)
	if err := zw.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func gunzip(data []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	js, err := io.ReadAll(io.LimitReader(zr, 256<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(js, v)
}

// Create implements runs.Store.
func (r *etcdRuns) Create(ctx context.Context, h *runs.Header, snapshot []byte) (string, error) {
	if err := checkNames(h.Cluster); err != nil {
		return "", err
	}
	if err := r.e.reach(ctx, "storing a run in"); err != nil {
		return "", err
	}
	if err := r.putSnapshot(ctx, h.Cluster, h.Snapshot, snapshot); err != nil {
		return "", r.e.wrap("storing a run's graph in", err)
	}
	lastKey, active := r.key(h.Cluster, "last"), r.activeKey(h.Cluster)
	for range 10 {
		resp, err := r.get(ctx, lastKey)
		if err != nil {
			return "", r.e.wrap("reading the runs of", err)
		}
		var last, lastRev int64
		if len(resp.Kvs) > 0 {
			last, lastRev = parseInt(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
		}
		h.ID = strconv.FormatInt(last+1, 10)
		head, err := gz(h)
		if err != nil {
			return "", err
		}
		hk, _ := r.runKey(h.Cluster, h.ID, "head")
		lk, _ := r.runKey(h.Cluster, h.ID, "len")
		ops := []clientv3.Op{clientv3.OpPut(active, h.ID), clientv3.OpPut(lastKey, h.ID), clientv3.OpPut(hk, head), clientv3.OpPut(lk, "0")}
		if drop := last + 1 - runs.Keep; drop >= 1 {
			from := r.key(h.Cluster, "run") + "/"
			ops = append(ops, clientv3.OpDelete(from, clientv3.WithRange(from+fmt.Sprintf("%016d", drop+1))))
		}
		ok, err := r.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(active), "=", 0),
			clientv3.Compare(clientv3.ModRevision(lastKey), "=", lastRev)}, ops...)
		if err != nil {
			return "", r.e.wrap("storing a run in", err)
		}
		if ok {
			return h.ID, nil
		}
		if ar, err := r.get(ctx, active); err == nil && len(ar.Kvs) > 0 {
			return "", runs.ErrBusy
		}
	}
	return "", fmt.Errorf("storing a run of %s in %s: its runs kept changing (10 attempts)", h.Cluster, r.e)
}

// putSnapshot writes a snapshot's parts, unless it is there already.
func (r *etcdRuns) putSnapshot(ctx context.Context, cluster, sum string, data []byte) error {
	base := r.key(cluster, "snap", sum)
	if resp, err := r.get(ctx, base+"/n"); err != nil {
		return err
	} else if len(resp.Kvs) > 0 {
		return nil
	}
	n := 0
	for off := 0; off < len(data); off += snapPart {
		part := data[off:min(off+snapPart, len(data))]
		if err := r.e.retry(ctx, func(ctx context.Context) error {
			_, err := r.e.client.Put(ctx, fmt.Sprintf("%s/%04d", base, n), string(part))
			return err
		}); err != nil {
			return err
		}
		n++
	}
	return r.e.retry(ctx, func(ctx context.Context) error {
		_, err := r.e.client.Put(ctx, base+"/n", strconv.Itoa(n))
		return err
	})
}

func parseInt(b []byte) int64 {
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

// Append implements runs.Store.
func (r *etcdRuns) Append(ctx context.Context, cluster, id string, n int, events []runs.Event) error {
	lk, err := r.runKey(cluster, id, "len")
	if err != nil {
		return err
	}
	// Batches of at most half a MiB: each its own transaction.
	for len(events) > 0 {
		var buf bytes.Buffer
		k := 0
		for k < len(events) && (buf.Len() < 512<<10 || k == 0) {
			line, err := json.Marshal(events[k])
			if err != nil {
				return err
			}
			buf.Write(line)
			buf.WriteByte('\n')
			k++
		}
		bk, _ := r.runKey(cluster, id, "log", fmt.Sprintf("%016d", n))
		ok, err := r.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.Value(lk), "=", strconv.Itoa(n))},
			clientv3.OpPut(lk, strconv.Itoa(n+k)), clientv3.OpPut(bk, buf.String()))
		if err != nil {
			return r.e.wrap("appending to a run's log in", err)
		}
		if !ok {
			return runs.ErrConflict
		}
		n, events = n+k, events[k:]
	}
	return nil
}

// End implements runs.Store.
func (r *etcdRuns) End(ctx context.Context, cluster, id string, sum *runs.Summary) error {
	sk, err := r.runKey(cluster, id, "summary")
	if err != nil {
		return err
	}
	data, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	active := r.activeKey(cluster)
	_, err = r.txn(ctx, nil, clientv3.OpPut(sk, string(data)),
		clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(active), "=", id)}, []clientv3.Op{clientv3.OpDelete(active)}, nil))
	if err != nil {
		return r.e.wrap("ending a run in", err)
	}
	return nil
}

// Read implements runs.Store.
func (r *etcdRuns) Read(ctx context.Context, cluster, id string) (*runs.Record, error) {
	prefix, err := r.runKey(cluster, id)
	if err != nil {
		return nil, err
	}
	// head, len, log/… and summary; the outputs (…/output/) apart.
	resp, err := r.get(ctx, prefix+"/", clientv3.WithRange(prefix+"/m"), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, r.e.wrap("reading a run from", err)
	}
	sresp, err := r.get(ctx, prefix+"/summary")
	if err != nil {
		return nil, r.e.wrap("reading a run from", err)
	}
	resp.Kvs = append(resp.Kvs, sresp.Kvs...)
	rec := &runs.Record{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), prefix+"/")
		switch {
		case rest == "head":
			rec.Header = &runs.Header{}
			if err := gunzip(kv.Value, rec.Header); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
		case rest == "summary":
			rec.Summary = &runs.Summary{}
			if err := json.Unmarshal(kv.Value, rec.Summary); err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
		case strings.HasPrefix(rest, "log/"):
			for _, line := range bytes.Split(bytes.TrimSuffix(kv.Value, []byte("\n")), []byte("\n")) {
				var ev runs.Event
				if err := json.Unmarshal(line, &ev); err != nil {
					return nil, fmt.Errorf("%s: %w", kv.Key, err)
				}
				rec.Events = append(rec.Events, ev)
			}
		}
	}
	if rec.Header == nil {
		return nil, runs.ErrNotFound
	}
	if rec.Snapshot, err = r.snapshot(ctx, cluster, rec.Header.Snapshot); err != nil {
		return nil, err
	}
	return rec, nil
}

func (r *etcdRuns) snapshot(ctx context.Context, cluster, sum string) ([]byte, error) {
	base := r.key(cluster, "snap", sum)
	resp, err := r.get(ctx, base+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, r.e.wrap("reading a run's graph from", err)
	}
	var buf bytes.Buffer
	parts := -1
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/n") {
			parts = int(parseInt(kv.Value))
			continue
		}
		buf.Write(kv.Value)
	}
	if parts < 0 || len(resp.Kvs) != parts+1 {
		return nil, fmt.Errorf("the graph %s of a run of %s is not whole in %s", sum, cluster, r.e)
	}
	return buf.Bytes(), nil
}

// List implements runs.Store.
func (r *etcdRuns) List(ctx context.Context, cluster string) ([]*runs.Listed, error) {
	resp, err := r.get(ctx, r.key(cluster, "last"))
	if err != nil {
		return nil, r.e.wrap("reading the runs of", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var out []*runs.Listed
	for n := parseInt(resp.Kvs[0].Value); n >= 1 && len(out) < runs.Keep; n-- {
		id := strconv.FormatInt(n, 10)
		hk, _ := r.runKey(cluster, id, "head")
		sk, _ := r.runKey(cluster, id, "summary")
		hr, err := r.get(ctx, hk)
		if err != nil {
			return nil, r.e.wrap("reading the runs of", err)
		}
		if len(hr.Kvs) == 0 {
			break // pruned
		}
		l := &runs.Listed{Header: &runs.Header{}}
		if err := gunzip(hr.Kvs[0].Value, l.Header); err != nil {
			return nil, fmt.Errorf("%s: %w", hk, err)
		}
		if sr, err := r.get(ctx, sk); err == nil && len(sr.Kvs) > 0 {
			l.Summary = &runs.Summary{}
			if err := json.Unmarshal(sr.Kvs[0].Value, l.Summary); err != nil {
				return nil, fmt.Errorf("%s: %w", sk, err)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// Active implements runs.Store.
func (r *etcdRuns) Active(ctx context.Context) (map[string]string, error) {
	prefix := r.e.key("runs-active/")
	resp, err := r.get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, r.e.wrap("reading the active runs of", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		cluster := strings.TrimPrefix(string(kv.Key), prefix)
		if checkNames(cluster) == nil {
			out[cluster] = string(kv.Value)
		}
	}
	return out, nil
}

// PutOutput implements runs.Store.
func (r *etcdRuns) PutOutput(ctx context.Context, cluster, id string, task int32, out []byte) error {
	k, err := r.runKey(cluster, id, "output", strconv.Itoa(int(task)))
	if err != nil {
		return err
	}
	if len(out) > runs.MaxOutput {
		out = out[len(out)-runs.MaxOutput:]
	}
	return r.e.retry(ctx, func(ctx context.Context) error {
		_, err := r.e.client.Put(ctx, k, string(out))
		return err
	})
}

// Output implements runs.Store.
func (r *etcdRuns) Output(ctx context.Context, cluster, id string, task int32) ([]byte, error) {
	k, err := r.runKey(cluster, id, "output", strconv.Itoa(int(task)))
	if err != nil {
		return nil, err
	}
	resp, err := r.get(ctx, k)
	if err != nil {
		return nil, r.e.wrap("reading a task's output from", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0].Value, nil
}
