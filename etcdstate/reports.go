package etcdstate

// The nodes' reports on etcd, in the prefix's namespace (<ns> is
// <prefix>/.fuelsync):
//
//	<ns>/reports/last/<cluster>/<node>              the node's last report, without its tasks (their counts, the failed ones)
//	<ns>/reports/history/<cluster>/<node>/<seq>     the node's reports, summarized as last/ (<seq>: 16 digits)
//	<ns>/reports/whole/<cluster>/<node>             the node's last report, whole (with its tasks)
//	<ns>/reports/reconciles/<cluster>/<seq>         the cluster's reconciles
//
// What one node keeps is bounded: its history's summaries and one report
// whole (the history kept whole reports before: a node's 20 reports of up to
// 1 MiB each, and every one of them again in etcd's revisions until a
// compaction). A report is stored by one transaction that puts the three
// keys of the node and removes its reports beyond the history's bound, if the node's last report
// is still the one read (another replica may take a report of the same node
// meanwhile: read again, and number it after). Every replica takes reports;
// each follows the others' through a watch on <ns>/reports/last/.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
)

// Reports is where the reports are kept beside this state: etcd.
func (e *Etcd) Reports() reports.Backend { return &etcdReports{e: e} }

type etcdReports struct {
	e *Etcd
	// rev is the etcd revision of the last Last, where Watch starts.
	rev int64
}

func (r *etcdReports) String() string { return r.e.String() }

func (r *etcdReports) key(parts ...string) string {
	return r.e.key("reports/" + strings.Join(parts, "/"))
}

func checkNames(names ...string) error {
	for _, n := range names {
		if !loader.IsName(n) {
			return fmt.Errorf("%q is not a name", n)
		}
	}
	return nil
}

// Put implements reports.Backend.
func (r *etcdReports) Put(ctx context.Context, rep *reports.Report, keep int) error {
	if err := checkNames(rep.Cluster, rep.Node); err != nil {
		return err
	}
	if err := r.e.reach(ctx, "storing a report in"); err != nil {
		return err
	}
	last := r.key("last", rep.Cluster, rep.Node)
	hist := r.key("history", rep.Cluster, rep.Node) + "/"
	for attempt := 0; attempt < 10; attempt++ {
		var prev *reports.Report
		var modRev int64
		err := r.e.retry(ctx, func(ctx context.Context) error {
			resp, err := r.e.client.Get(ctx, last)
			if err != nil {
				return err
			}
			prev, modRev = nil, 0
			if len(resp.Kvs) > 0 {
				modRev = resp.Kvs[0].ModRevision
				prev, err = reports.UnmarshalSummary(resp.Kvs[0].Value)
				if err != nil {
					return fmt.Errorf("%s does not parse: %w", last, err)
				}
			}
			return nil
		})
		if err != nil {
			return r.e.wrap("reading a node's last report from", err)
		}
		if attempt > 0 && prev != nil && prev.ETag == rep.ETag && prev.Status == rep.Status && prev.ReceivedAt.Equal(rep.ReceivedAt) {
			rep.Seq = prev.Seq // an attempt that got no answer happened
			return nil
		}
		rep.Seq = 1
		if prev != nil {
			rep.Seq = prev.Seq + 1
			if reports.SameRun(prev, rep) {
				rep.Seq = prev.Seq
			}
		}
		whole, err := reports.MarshalWhole(rep)
		if err != nil {
			return err
		}
		summary, err := reports.MarshalSummary(rep)
		if err != nil {
			return err
		}
		ops := []clientv3.Op{clientv3.OpPut(last, string(summary)), clientv3.OpPut(hist+reports.SeqKey(rep.Seq), string(summary)),
			clientv3.OpPut(r.key("whole", rep.Cluster, rep.Node), string(whole))}
		if drop := rep.Seq - int64(keep); drop >= 1 {
			ops = append(ops, clientv3.OpDelete(hist, clientv3.WithRange(hist+reports.SeqKey(drop+1))))
		}
		tctx, cancel := context.WithTimeout(ctx, r.e.cfg.Timeout)
		resp, err := r.e.client.Txn(tctx).If(clientv3.Compare(clientv3.ModRevision(last), "=", modRev)).Then(ops...).Commit()
		cancel()
		if err != nil {
			if transient(err) {
				continue // it may have happened: read again
			}
			return r.e.wrap("storing a report in", err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("storing a report of node %s of cluster %s in %s: its last report kept changing (10 attempts)", rep.Node, rep.Cluster, r.e)
}

// Last implements reports.Backend.
func (r *etcdReports) Last(ctx context.Context) ([]*reports.Report, error) {
	if err := r.e.reach(ctx, "reading the reports from"); err != nil {
		return nil, err
	}
	prefix := r.key("last") + "/"
	var out []*reports.Report
	err := r.e.retry(ctx, func(ctx context.Context) error {
		resp, err := r.e.client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			return err
		}
		out = out[:0]
		for _, kv := range resp.Kvs {
			rep, err := r.lastOf(prefix, kv.Key, kv.Value)
			if err != nil {
				return err
			}
			if rep != nil {
				out = append(out, rep)
			}
		}
		r.rev = resp.Header.Revision
		return nil
	})
	if err != nil {
		return nil, r.e.wrap("reading the reports from", err)
	}
	return out, nil
}

// lastOf decodes a last report's key and value (nil for a key of another
// shape).
func (r *etcdReports) lastOf(prefix string, key, value []byte) (*reports.Report, error) {
	cluster, node, ok := strings.Cut(strings.TrimPrefix(string(key), prefix), "/")
	if !ok || checkNames(cluster, node) != nil {
		return nil, nil
	}
	rep, err := reports.UnmarshalSummary(value)
	if err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", key, err)
	}
	rep.Cluster, rep.Node = cluster, node
	return rep, nil
}

// Watch implements reports.Watcher: the last reports every replica stores,
// from the revision of the last Last.
func (r *etcdReports) Watch(ctx context.Context, put func(*reports.Report), remove func(cluster, node string)) error {
	prefix := r.key("last") + "/"
	for ctx.Err() == nil {
		wch := r.e.client.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(r.rev+1))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				break // compacted, or no leader: watch again (after a full read when compacted)
			}
			for _, ev := range resp.Events {
				switch ev.Type {
				case clientv3.EventTypePut:
					if rep, err := r.lastOf(prefix, ev.Kv.Key, ev.Kv.Value); err == nil && rep != nil {
						put(rep)
					}
				case clientv3.EventTypeDelete:
					cluster, node, ok := strings.Cut(strings.TrimPrefix(string(ev.Kv.Key), prefix), "/")
					if ok && checkNames(cluster, node) == nil {
						remove(cluster, node)
					}
				}
			}
			r.rev = resp.Header.Revision
		}
		if ctx.Err() != nil {
			break
		}
		// The watch ended (compacted, a lost leader): read everything again,
		// then watch from there.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		if all, err := r.Last(ctx); err == nil {
			for _, rep := range all {
				put(rep)
			}
		}
	}
	return nil
}

// History implements reports.Backend.
func (r *etcdReports) History(ctx context.Context, cluster, node string) ([]*reports.Report, error) {
	if err := checkNames(cluster, node); err != nil {
		return nil, err
	}
	var out []*reports.Report
	err := r.e.retry(ctx, func(ctx context.Context) error {
		resp, err := r.e.client.Get(ctx, r.key("history", cluster, node)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			return err
		}
		out = out[:0]
		for _, kv := range resp.Kvs {
			rep, err := decodeReport(kv.Value, reports.UnmarshalSummary)
			if err != nil {
				return fmt.Errorf("%s does not parse: %w", kv.Key, err)
			}
			rep.Cluster, rep.Node = cluster, node
			out = append(out, rep)
		}
		return nil
	})
	if err != nil {
		return nil, r.e.wrap("reading a node's reports from", err)
	}
	return out, nil
}

// Whole implements reports.Backend: the node's whole/ key, or, for a node
// that has reported only before it was kept, its history's newest entry
// (kept whole then).
func (r *etcdReports) Whole(ctx context.Context, cluster, node string) (*reports.Report, error) {
	if err := checkNames(cluster, node); err != nil {
		return nil, err
	}
	var out *reports.Report
	err := r.e.retry(ctx, func(ctx context.Context) error {
		resp, err := r.e.client.Get(ctx, r.key("whole", cluster, node))
		if err == nil && len(resp.Kvs) == 0 {
			resp, err = r.e.client.Get(ctx, r.key("history", cluster, node)+"/", clientv3.WithLastKey()...)
		}
		if err != nil {
			return err
		}
		out = nil
		if len(resp.Kvs) > 0 {
			if out, err = decodeReport(resp.Kvs[0].Value, reports.UnmarshalWhole); err != nil {
				return fmt.Errorf("%s does not parse: %w", resp.Kvs[0].Key, err)
			}
			out.Cluster, out.Node = cluster, node
		}
		return nil
	})
	if err != nil {
		return nil, r.e.wrap("reading a node's last report from", err)
	}
	return out, nil
}

// PutReconcile implements reports.Backend.
func (r *etcdReports) PutReconcile(ctx context.Context, rec *reports.Reconcile, keep int) error {
	if err := checkNames(rec.Cluster); err != nil {
		return err
	}
	prefix := r.key("reconciles", rec.Cluster) + "/"
	for attempt := 0; attempt < 10; attempt++ {
		var newest int64
		err := r.e.retry(ctx, func(ctx context.Context) error {
			resp, err := r.e.client.Get(ctx, prefix, clientv3.WithLastKey()...)
			if err != nil {
				return err
			}
			newest = 0
			if len(resp.Kvs) > 0 {
				newest, _ = strconv.ParseInt(strings.TrimPrefix(string(resp.Kvs[0].Key), prefix), 10, 64)
			}
			return nil
		})
		if err != nil {
			return r.e.wrap("reading a cluster's reconciles from", err)
		}
		rec.Seq = newest + 1
		data, err := reports.Marshal(rec)
		if err != nil {
			return err
		}
		key := prefix + reports.SeqKey(rec.Seq)
		ops := []clientv3.Op{clientv3.OpPut(key, string(data))}
		if drop := rec.Seq - int64(keep); drop >= 1 {
			ops = append(ops, clientv3.OpDelete(prefix, clientv3.WithRange(prefix+reports.SeqKey(drop+1))))
		}
		tctx, cancel := context.WithTimeout(ctx, r.e.cfg.Timeout)
		resp, err := r.e.client.Txn(tctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(ops...).Commit()
		cancel()
		if err != nil {
			if transient(err) {
				continue
			}
			return r.e.wrap("storing a reconcile in", err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("storing a reconcile of cluster %s in %s: 10 attempts", rec.Cluster, r.e)
}

// Reconciles implements reports.Backend.
func (r *etcdReports) Reconciles(ctx context.Context, cluster string) ([]*reports.Reconcile, error) {
	if err := checkNames(cluster); err != nil {
		return nil, err
	}
	var out []*reports.Reconcile
	err := r.e.retry(ctx, func(ctx context.Context) error {
		resp, err := r.e.client.Get(ctx, r.key("reconciles", cluster)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		if err != nil {
			return err
		}
		out = out[:0]
		for _, kv := range resp.Kvs {
			rec := &reports.Reconcile{}
			if err := unmarshal(kv.Value, rec); err != nil {
				return fmt.Errorf("%s does not parse: %w", kv.Key, err)
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, r.e.wrap("reading a cluster's reconciles from", err)
	}
	return out, nil
}

// Remove implements reports.Backend.
func (r *etcdReports) Remove(ctx context.Context, cluster, node string) error {
	var ops []clientv3.Op
	if node == "" {
		if err := checkNames(cluster); err != nil {
			return err
		}
		for _, kind := range []string{"last", "history", "whole", "reconciles"} {
			ops = append(ops, clientv3.OpDelete(r.key(kind, cluster)+"/", clientv3.WithPrefix()))
		}
	} else {
		if err := checkNames(cluster, node); err != nil {
			return err
		}
		ops = append(ops, clientv3.OpDelete(r.key("last", cluster, node)), clientv3.OpDelete(r.key("whole", cluster, node)),
			clientv3.OpDelete(r.key("history", cluster, node)+"/", clientv3.WithPrefix()))
	}
	err := r.e.retry(ctx, func(ctx context.Context) error {
		_, err := r.e.client.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return r.e.wrap("removing reports from", err)
	}
	return nil
}

var errNotJSON = errors.New("not a JSON object")

// decodeReport decodes a stored report by decode, at most 4 MiB.
func decodeReport(data []byte, decode func([]byte) (*reports.Report, error)) (*reports.Report, error) {
	if len(data) > 4*reports.MaxBody || len(data) == 0 || data[0] != '{' {
		return nil, errNotJSON
	}
	return decode(data)
}

// unmarshal decodes a stored report or reconcile, at most 4 MiB.
func unmarshal(data []byte, v any) error {
	if len(data) > 4*reports.MaxBody || len(data) == 0 || data[0] != '{' {
		return errNotJSON
	}
	return json.Unmarshal(data, v)
}

// CheckWrites implements reports.WriteChecker: etcd refuses every write,
// of every prefix, while an alarm is raised (NOSPACE: its database reached
// its quota, --quota-backend-bytes; CORRUPT: a member's data differs). A
// user not allowed to list the alarms (etcd's authentication) learns
// nothing here: nil.
func (r *etcdReports) CheckWrites(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(r.e.cfg.Timeout, 2*time.Second))
	defer cancel()
	resp, err := r.e.client.AlarmList(ctx)
	if err != nil {
		if strings.Contains(err.Error(), "permission denied") {
			return nil
		}
		return r.e.wrap("listing the alarms of", err)
	}
	for _, a := range resp.Alarms {
		switch a.Alarm {
		case etcdserverpb.AlarmType_NOSPACE:
			return fmt.Errorf("%s refuses every write: its member %x raised the NOSPACE alarm (its database reached its quota, --quota-backend-bytes); compact, defragment and disarm it (etcdctl alarm disarm): see docs/etcd.md", r.e, a.MemberID)
		case etcdserverpb.AlarmType_CORRUPT:
			return fmt.Errorf("%s refuses every write: its member %x raised the CORRUPT alarm (its data differs from the others')", r.e, a.MemberID)
		}
	}
	return nil
}
