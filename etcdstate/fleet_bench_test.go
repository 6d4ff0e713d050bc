package etcdstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// fleetState is a synthetic state of nodes nodes in clusters clusters: each
// node with a role, three artifact files and their sha256 (which do not
// compress), each cluster with a file, a primary tag and an input
// fingerprint, and the manifest (about 6.7 MB of JSON at 20,000 nodes).
func fleetState(lineage string, serial int64, clusters, nodes int) *state.State {
	st := state.Empty()
	st.Lineage, st.Serial, st.Revision, st.ToolVersion = lineage, serial, strings.Repeat("a", 40), "v1.0.0"
	st.Inputs = strings.Repeat("b", 64)
	st.ClusterInputs = map[string]string{}
	digest := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	for c := 0; c < clusters; c++ {
		name := fmt.Sprintf("cluster-%03d", c)
		cs := &state.ClusterState{Nodes: map[string]state.NodeState{}, Primary: map[string]string{}, Revision: st.Revision, Serial: serial, Status: state.StatusSynced, File: "clusters/" + name + ".hcl"}
		for n := c * nodes / clusters; n < (c+1)*nodes/clusters; n++ {
			node := fmt.Sprintf("node-%06d", n)
			cs.Nodes[node] = state.NodeState{ID: n + 1, Roles: []string{"compute", "ceph-osd"}}
			for _, f := range []string{"deploy.yaml", "network.yaml", "astute.yaml"} {
				p := name + "/nodes/" + node + "/" + f
				st.Artifacts[p] = digest(lineage + p)
			}
		}
		cs.Primary["controller"] = fmt.Sprintf("node-%06d", c*nodes/clusters)
		st.Artifacts[name+"/cluster.yaml"] = digest(lineage + name)
		st.ClusterInputs[name] = digest("inputs" + name)
		st.Clusters[name] = cs
	}
	st.Artifacts["manifest.json"] = digest(lineage + "manifest" + strconv.FormatInt(serial, 10))
	return st
}

// changeOne is st's next serial with one node's file of one cluster changed.
func changeOne(st *state.State, cluster string) {
	st.Serial++
	st.Artifacts["manifest.json"] = strings.Repeat(strconv.FormatInt(st.Serial%10, 10), 64)
	for p := range st.Artifacts {
		if strings.HasPrefix(p, cluster+"/nodes/") {
			sum := sha256.Sum256([]byte(p + strconv.FormatInt(st.Serial, 10)))
			st.Artifacts[p] = hex.EncodeToString(sum[:])
			break
		}
	}
	st.Clusters[cluster].Serial = st.Serial
}

// putBytes counts the bytes of every value put under prefix from now on
// (etcd's watch), until the returned stop is called, which returns the count
// and the keys put.
func putBytes(t testing.TB, e *Etcd, prefix string) func() (int64, []string) {
	ctx, cancel := context.WithCancel(context.Background())
	sentinel := prefix + "putbytes-sentinel"
	var n int64
	var keys []string
	seen := make(chan struct{})
	wch := e.client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	<-wch // created: every later put is seen
	go func() {
		defer close(seen)
		for wr := range wch {
			for _, ev := range wr.Events {
				if string(ev.Kv.Key) == sentinel {
					return
				}
				if ev.Type == clientv3.EventTypePut {
					n += int64(len(ev.Kv.Value))
					keys = append(keys, string(ev.Kv.Key))
				}
			}
		}
	}()
	return func() (int64, []string) {
		defer cancel()
		if _, err := e.client.Put(context.Background(), sentinel, "x"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
			t.Fatal("the watch did not see the sentinel")
		}
		_, _ = e.client.Delete(context.Background(), sentinel)
		return n, keys
	}
}

// BenchmarkEtcdOneClusterCommit: the commit of a one-node change in one
// cluster of 40, at 20,000 nodes, as apply makes it: the state read, one
// cluster changed, committed. Reported: the commit's time (ns/op), the
// writer's read before it (read-ms/op), the bytes put to etcd by the commit
// (put-B/op), and the time another process that read the state before takes
// to read it after (follower-read-ms/op).
func BenchmarkEtcdOneClusterCommit(b *testing.B) {
	c := etcdtest.Start(b, 1)
	cfg, err := state.ParseURL(c.URL("bench"))
	if err != nil {
		b.Fatal(err)
	}
	cfg.LockTTL, cfg.Timeout = 5*time.Second, 60*time.Second
	e, err := Open(*cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	follower, err := Open(*cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer follower.Close()
	ctx := context.Background()
	if err := e.Commit(ctx, 0, fleetState("lin", 1, 40, 20000)); err != nil {
		b.Fatal(err)
	}
	if _, err := follower.ReadState(ctx); err != nil {
		b.Fatal(err)
	}
	var put, readNs, followNs int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		t0 := time.Now()
		cur, err := e.ReadState(ctx)
		if err != nil {
			b.Fatal(err)
		}
		readNs += time.Since(t0).Nanoseconds()
		prev := cur.Serial
		changeOne(cur, fmt.Sprintf("cluster-%03d", i%40))
		stop := putBytes(b, e, cfg.Prefix+"/")
		b.StartTimer()
		if err := e.Commit(ctx, prev, cur); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		n, _ := stop()
		put += n
		t0 = time.Now()
		if _, err := follower.ReadState(ctx); err != nil {
			b.Fatal(err)
		}
		followNs += time.Since(t0).Nanoseconds()
		b.StartTimer()
	}
	b.ReportMetric(float64(put)/float64(b.N), "put-B/op")
	b.ReportMetric(float64(readNs)/float64(b.N)/1e6, "read-ms/op")
	b.ReportMetric(float64(followNs)/float64(b.N)/1e6, "follower-read-ms/op")
}
