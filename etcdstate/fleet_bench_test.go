package etcdstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/metrics"
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

// benchSize is the state BenchmarkEtcdOneClusterCommit measures:
// FUELSYNC_BENCH_NODES nodes (default 20,000) in FUELSYNC_BENCH_CLUSTERS
// clusters (default 40).
func benchSize(b *testing.B) (nodes, clusters int) {
	nodes, clusters = 20000, 40
	for _, v := range []struct {
		env string
		n   *int
	}{{"FUELSYNC_BENCH_NODES", &nodes}, {"FUELSYNC_BENCH_CLUSTERS", &clusters}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: not a positive number", v.env, s)
			}
			*v.n = n
		}
	}
	return nodes, clusters
}

// phase sums the wall time, CPU time (this process's, user and system) and
// bytes allocated of the runs of one step of a benchmark.
type phase struct {
	name      string
	wall, cpu time.Duration
	alloc     uint64
	cpu0      time.Duration
	alloc0    uint64
	start     time.Time
	samples   []metrics.Sample
}

func newPhase(name string) *phase {
	return &phase{name: name, samples: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}}
}

func (p *phase) begin() {
	metrics.Read(p.samples)
	p.alloc0 = p.samples[0].Value.Uint64()
	p.cpu0 = processCPU()
	p.start = time.Now()
}

func (p *phase) end() {
	p.wall += time.Since(p.start)
	p.cpu += processCPU() - p.cpu0
	metrics.Read(p.samples)
	p.alloc += p.samples[0].Value.Uint64() - p.alloc0
}

// report reports the phase's means over n runs: <name>-ms/op,
// <name>-cpu-ms/op and <name>-B/op (bytes allocated).
func (p *phase) report(b *testing.B, n int) {
	b.ReportMetric(float64(p.wall)/float64(n)/1e6, p.name+"-ms/op")
	b.ReportMetric(float64(p.cpu)/float64(n)/1e6, p.name+"-cpu-ms/op")
	b.ReportMetric(float64(p.alloc)/float64(n), p.name+"-B/op")
}

// BenchmarkEtcdOneClusterCommit: the commit of a one-node change in one
// cluster, at 20,000 nodes in 40 clusters (benchSize), as apply makes it: the
// state read, one cluster changed, committed. Reported: the bytes put to etcd
// by the commit (put-B/op), and for each step the mean wall time, CPU time of
// this process and bytes allocated (<step>-ms/op, -cpu-ms/op, -B/op): the
// commit, the writer's read before it (read), and the read by another process
// that read the state before (follower-read). (ns/op is the commit's.)
func BenchmarkEtcdOneClusterCommit(b *testing.B) {
	nodes, clusters := benchSize(b)
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
	if err := e.Commit(ctx, 0, fleetState("lin", 1, clusters, nodes)); err != nil {
		b.Fatal(err)
	}
	if _, err := follower.ReadState(ctx); err != nil {
		b.Fatal(err)
	}
	read, commit, follow := newPhase("read"), newPhase("commit"), newPhase("follower-read")
	var put int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		read.begin()
		cur, err := e.ReadState(ctx)
		read.end()
		if err != nil {
			b.Fatal(err)
		}
		prev := cur.Serial
		changeOne(cur, fmt.Sprintf("cluster-%03d", i%clusters))
		stop := putBytes(b, e, cfg.Prefix+"/")
		b.StartTimer()
		commit.begin()
		if err := e.Commit(ctx, prev, cur); err != nil {
			b.Fatal(err)
		}
		commit.end()
		b.StopTimer()
		n, _ := stop()
		put += n
		follow.begin()
		if _, err := follower.ReadState(ctx); err != nil {
			b.Fatal(err)
		}
		follow.end()
		b.StartTimer()
	}
	b.ReportMetric(float64(put)/float64(b.N), "put-B/op")
	for _, p := range []*phase{read, commit, follow} {
		p.report(b, b.N)
	}
}
