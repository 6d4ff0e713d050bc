package etcdstate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// storedHeader reads e's header.
func storedHeader(t *testing.T, e *Etcd) etcdHeader {
	t.Helper()
	resp, err := e.client.Get(context.Background(), e.key("state"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the header: %v, %v", resp, err)
	}
	var h etcdHeader
	if err := json.Unmarshal(resp.Kvs[0].Value, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// storedParts lists the digests of the parts stored under e's namespace.
func storedParts(t *testing.T, e *Etcd) map[string]bool {
	t.Helper()
	resp, err := e.client.Get(context.Background(), e.key("parts/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), e.key("parts/"))] = true
	}
	return out
}

// A state of many clusters, with paths and fingerprints of no cluster and a
// cluster whose name no repository gives, reads back as it was committed, by
// the writer (from its cache) and by another process; the header names one
// unit per cluster. Above maxUnits clusters, they share buckets, and the
// header stays under its bound.
func TestEtcdUnitsRoundTrip(t *testing.T) {
	// Slow elections and a long request timeout: a commit of 1,200 clusters
	// on a loaded machine once passed etcd's own request timeout (5 s and
	// two election timeouts); this test is of what reads back, not of time.
	c := etcdtest.StartWith(t, 1, "--election-timeout", "2500")
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		clusters, nodes int
		buckets         bool
	}{
		{"40 clusters", 40, 2000, false},
		{"1,200 clusters", 1200, 2400, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "rt-" + strconv.Itoa(tc.clusters)
			w, r := etcdAt(t, c, prefix), etcdAt(t, c, prefix)
			w.cfg.Timeout, r.cfg.Timeout = 30*time.Second, 30*time.Second
			st := fleetState("lin", 1, tc.clusters, tc.nodes)
			st.Artifacts["ghost/x.yaml"] = strings.Repeat("1", 64) // of no cluster
			st.Artifacts["top.yaml"] = strings.Repeat("2", 64)
			st.ClusterInputs["ghost"] = "fp"
			st.Clusters["Not A Name"] = &state.ClusterState{Nodes: map[string]state.NodeState{"n": {ID: 1}}, Status: state.StatusHeld}
			st.Artifacts["Not A Name/f"] = strings.Repeat("3", 64)
			if err := w.Commit(ctx, 0, st); err != nil {
				t.Fatal(err)
			}
			for who, e := range map[string]*Etcd{"the writer": w, "another process": r} {
				got, err := e.ReadState(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(st, got); d != "" {
					t.Errorf("the state read by %s (-committed +read):\n%s", who, d)
				}
			}
			if w.fetched.Load() != 0 {
				t.Errorf("the writer fetched %d parts to read what it had just committed", w.fetched.Load())
			}
			h := storedHeader(t, w)
			if h.FormatVersion != "2" {
				t.Fatalf("format_version %q", h.FormatVersion)
			}
			if tc.buckets {
				if len(h.Clusters) > maxUnits || len(h.Clusters) < maxUnits/2 {
					t.Errorf("%d units for %d clusters; want buckets, at most %d", len(h.Clusters), tc.clusters, maxUnits)
				}
				for k := range h.Clusters {
					if !isBucket(k) {
						t.Errorf("the unit %q is not a bucket", k)
					}
				}
			} else {
				if len(h.Clusters) != tc.clusters {
					t.Errorf("%d units for %d clusters; want one each", len(h.Clusters), tc.clusters)
				}
				if _, ok := h.Clusters["cluster-007"]; !ok {
					t.Errorf("no unit of cluster-007: %v", slices.Sorted(maps.Keys(h.Clusters)))
				}
			}
			resp, _ := w.client.Get(ctx, w.key("state"))
			t.Logf("%d clusters: a header of %d bytes, %d units, %d bytes gzipped, %d of JSON", tc.clusters, len(resp.Kvs[0].Value), len(h.Clusters), h.Size, h.PlainSize)
			if n := len(resp.Kvs[0].Value); n > maxHeaderSizeV2/2 {
				t.Errorf("the header is %d bytes", n)
			}
			if got, want := storedParts(t, w), h.digests(); !cmp.Equal(got, want) {
				t.Errorf("the stored parts are not those the header names: %d, %d", len(got), len(want))
			}
		})
	}
}

// TestEtcdOneClusterChangeWritesItsUnit is issue 25's reproducer: a change of
// one node in one cluster of 40 rewrote the whole state (gzip ran over the
// whole document, so every part changed: 2.4 MB at 20,000 nodes). Now a
// process that read the state (as apply does) writes the parts of that
// cluster's unit and of the rest, and the header.
func TestEtcdOneClusterChangeWritesItsUnit(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	first := etcdAt(t, c, "one")
	stop := putBytes(t, first, "/one/")
	if err := first.Commit(ctx, 0, fleetState("lin", 1, 40, 4000)); err != nil {
		t.Fatal(err)
	}
	whole, _ := stop()
	e := etcdAt(t, c, "one") // another process, as the next apply is
	st, err := e.ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := storedParts(t, e)
	changeOne(st, "cluster-007")
	stop = putBytes(t, e, "/one/")
	if err := e.Commit(ctx, 1, st); err != nil {
		t.Fatal(err)
	}
	n, keys := stop()
	var parts []string
	for _, k := range keys {
		if d, ok := strings.CutPrefix(k, e.key("parts/")); ok {
			parts = append(parts, d)
		}
	}
	t.Logf("the first commit put %d bytes; the one-cluster change %d bytes in %d keys (%d parts)", whole, n, len(keys), len(parts))
	if n > whole/10 {
		t.Errorf("a one-cluster change of 40 put %d bytes, the whole state %d: over a tenth", n, whole)
	}
	h := storedHeader(t, e)
	var want []string
	for _, u := range []*etcdUnit{h.Clusters["cluster-007"], h.Rest} {
		if u != nil {
			want = append(want, u.Parts...)
		}
	}
	slices.Sort(want)
	slices.Sort(parts)
	if d := cmp.Diff(want, parts); d != "" {
		t.Errorf("the parts put (-want +got):\n%s", d)
	}
	// The other 39 clusters' parts are those stored before.
	for k, u := range h.Clusters {
		for _, p := range u.Parts {
			if k != "cluster-007" && !before[p] {
				t.Errorf("the part of unchanged %s is new", k)
			}
		}
	}
	if got, want := storedParts(t, e), h.digests(); !cmp.Equal(got, want) {
		t.Errorf("after the commit, %d parts are stored, the header names %d", len(got), len(want))
	}
	if got, err := first.ReadState(ctx); err != nil || !cmp.Equal(got, st) {
		t.Errorf("the state read after the change differs: %v", err)
	}
}

// A follower that read the state reads, after a one-cluster change, only
// the parts of that cluster and of the rest.
func TestEtcdReaderFetchesChangedParts(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w, f := etcdAt(t, c, "follow"), etcdAt(t, c, "follow")
	st := fleetState("lin", 1, 40, 2000)
	if err := w.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadState(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.fetched.Load(); n != 41 {
		t.Errorf("the first read fetched %d parts; want 41 (40 clusters and the rest)", n)
	}
	for i, cl := range []string{"cluster-003", "cluster-039"} {
		changeOne(st, cl)
		if err := w.Commit(ctx, st.Serial-1, st); err != nil {
			t.Fatal(err)
		}
		f.fetched.Store(0)
		got, err := f.ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := f.fetched.Load(); n != 2 {
			t.Errorf("change %d: the follower fetched %d parts; want 2 (%s and the rest)", i, n, cl)
		}
		if d := cmp.Diff(st, got); d != "" {
			t.Errorf("change %d: the follower's state (-want +got):\n%s", i, d)
		}
	}
	// Reading it again fetches nothing.
	f.fetched.Store(0)
	if _, err := f.ReadState(ctx); err != nil || f.fetched.Load() != 0 {
		t.Errorf("an unchanged state read again: %d parts fetched, %v", f.fetched.Load(), err)
	}
}

// v1Layout writes st in format 1 as the fuelsync before format 2 did, its
// header, serial and parts at the keys key gives: e.key (the namespace) or
// e.oldKey (as a fuelsync before the namespace did, whose headers did not
// record the plain size either).
func v1Layout(t *testing.T, e *Etcd, st *state.State, key func(string) string) {
	t.Helper()
	h, parts, err := packStateV1(st)
	if err != nil {
		t.Fatal(err)
	}
	if key("state") == e.oldKey("state") {
		h.PlainSize = 0
	}
	ctx := context.Background()
	for _, p := range parts {
		sum := sha256.Sum256(p)
		k := key("parts/" + hex.EncodeToString(sum[:]))
		h.Parts = append(h.Parts, k)
		if _, err := e.client.Put(ctx, k, string(p)); err != nil {
			t.Fatal(err)
		}
	}
	header, _ := json.Marshal(h)
	if _, err := e.client.Put(ctx, key("state"), string(header)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Put(ctx, key("serial"), strconv.FormatInt(st.Serial, 10)); err != nil {
		t.Fatal(err)
	}
}

// A state of format 1 is read, and the next commit writes it in format 2;
// the parts of format 1 go.
func TestEtcdFormat1Converted(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	e := etcdAt(t, c, "v1")
	st := fleetState("lin", 4, 10, 3000)
	v1Layout(t, e, st, e.key)
	if h := storedHeader(t, e); h.FormatVersion != "1" || len(h.Parts) < 2 {
		t.Fatalf("the format-1 header: %q, %d parts", h.FormatVersion, len(h.Parts))
	}
	unlock, err := e.Lock(ctx, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	got, err := e.ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(st, got); d != "" {
		t.Fatalf("the format-1 state read (-want +got):\n%s", d)
	}
	changeOne(got, "cluster-001")
	if err := e.Commit(ctx, 4, got); err != nil {
		t.Fatal(err)
	}
	h := storedHeader(t, e)
	if h.FormatVersion != "2" || len(h.Clusters) != 10 || len(h.Parts) != 0 {
		t.Errorf("the header after the commit: format %q, %d units, %d format-1 parts", h.FormatVersion, len(h.Clusters), len(h.Parts))
	}
	if parts, want := storedParts(t, e), h.digests(); !cmp.Equal(parts, want) {
		t.Errorf("%d parts stored, %d named: the format-1 parts were left", len(parts), len(want))
	}
	again, err := etcdAt(t, c, "v1").ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, again); d != "" {
		t.Errorf("the converted state read (-want +got):\n%s", d)
	}
}

// A part that does not match its digest, a missing part, a unit that
// expands beyond its promise, and units that hold what is not theirs are
// refused, naming the state.
func TestEtcdUnitsRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	bomb := func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(make([]byte, 64<<20))
		zw.Close()
		return buf.Bytes()
	}()
	// unit replaces the unit k of h with data, stored as its part.
	unit := func(t *testing.T, e *Etcd, h *etcdHeader, k string, data []byte, plain int64) {
		t.Helper()
		sum := sha256.Sum256(data)
		d := hex.EncodeToString(sum[:])
		if _, err := e.client.Put(ctx, e.key("parts/"+d), string(data)); err != nil {
			t.Fatal(err)
		}
		old := h.Clusters[k]
		h.Size += len(data) - old.Size
		h.PlainSize += plain - old.PlainSize
		h.Clusters[k] = &etcdUnit{Size: len(data), PlainSize: plain, Parts: []string{d}}
	}
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	for i, tc := range []struct {
		name   string
		change func(t *testing.T, e *Etcd, h *etcdHeader)
		want   string
	}{
		{"a part that does not match its digest", func(t *testing.T, e *Etcd, h *etcdHeader) {
			e.client.Put(ctx, e.key("parts/"+h.Clusters["cluster-001"].Parts[0]), "other bytes")
		}, "does not match its digest"},
		{"a missing part", func(t *testing.T, e *Etcd, h *etcdHeader) {
			e.client.Delete(ctx, e.key("parts/"+h.Rest.Parts[0]))
		}, "which is missing"},
		{"a gzip bomb", func(t *testing.T, e *Etcd, h *etcdHeader) {
			unit(t, e, h, "cluster-001", bomb, 4096)
		}, "expands beyond 4096 bytes"},
		{"a unit shorter than it says", func(t *testing.T, e *Etcd, h *etcdHeader) {
			unit(t, e, h, "cluster-001", gz(`{"clusters":{}}`), 100)
		}, "expands to 15 bytes, where its header says 100"},
		{"another cluster's artifact", func(t *testing.T, e *Etcd, h *etcdHeader) {
			s := `{"clusters":{},"artifacts":{"cluster-002/x":"y"}}`
			unit(t, e, h, "cluster-001", gz(s), int64(len(s)))
		}, `its unit "cluster-001" holds the artifact "cluster-002/x"`},
		{"a cluster in two units", func(t *testing.T, e *Etcd, h *etcdHeader) {
			h.Size += h.Clusters["cluster-001"].Size - h.Clusters["cluster-009"].Size
			h.PlainSize += h.Clusters["cluster-001"].PlainSize - h.Clusters["cluster-009"].PlainSize
			h.Clusters["cluster-009"] = h.Clusters["cluster-001"]
		}, `its unit "cluster-009" holds cluster "cluster-001"`},
		{"sizes over the bound", func(t *testing.T, e *Etcd, h *etcdHeader) {
			h.Clusters["cluster-001"].PlainSize = state.MaxSize + 1
		}, "not 1 to 67108864 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := etcdAt(t, c, "refused-"+strconv.Itoa(i))
			if err := w.Commit(ctx, 0, fleetState("lin", 1, 10, 100)); err != nil {
				t.Fatal(err)
			}
			h := storedHeader(t, w)
			tc.change(t, w, &h)
			header, _ := json.Marshal(h)
			if _, err := w.client.Put(ctx, w.key("state"), string(header)); err != nil {
				t.Fatal(err)
			}
			_, err := etcdAt(t, c, "refused-"+strconv.Itoa(i)).ReadState(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), w.String()) {
				t.Errorf("read: %v; want %q", err, tc.want)
			}
		})
	}
}

// decodeHeader refuses format-2 headers out of their bounds.
func TestDecodeHeaderV2(t *testing.T) {
	e := &Etcd{cfg: state.EtcdConfig{Endpoints: []string{"h:2379"}, Prefix: "/p"}}
	d := strings.Repeat("a", 64)
	unit := func(size int, plain int64, parts ...string) *etcdUnit {
		return &etcdUnit{Size: size, PlainSize: plain, Parts: parts}
	}
	many := map[string]*etcdUnit{}
	for i := 0; i <= maxUnits; i++ {
		many[fmt.Sprintf("c%d", i)] = unit(1, 1, d)
	}
	for _, tc := range []struct {
		name string
		h    etcdHeader
		want string
	}{
		{"good", etcdHeader{Rest: unit(10, 20, d), Clusters: map[string]*etcdUnit{"a": unit(5, 5, d), "~7": unit(5, 5, d)}, Size: 20, PlainSize: 30}, ""},
		{"no rest", etcdHeader{Size: 0}, "names no rest part"},
		{"parts of format 1", etcdHeader{Rest: unit(10, 20, d), Parts: []string{"x"}, Size: 10, PlainSize: 20}, "has the parts of format 1"},
		{"a bad unit name", etcdHeader{Rest: unit(10, 20, d), Clusters: map[string]*etcdUnit{"../x": unit(5, 5, d)}, Size: 15, PlainSize: 25}, `names the unit "../x"`},
		{"a bucket out of range", etcdHeader{Rest: unit(10, 20, d), Clusters: map[string]*etcdUnit{"~1000": unit(5, 5, d)}, Size: 15, PlainSize: 25}, `names the unit "~1000"`},
		{"a bucket not canonical", etcdHeader{Rest: unit(10, 20, d), Clusters: map[string]*etcdUnit{"~07": unit(5, 5, d)}, Size: 15, PlainSize: 25}, `names the unit "~07"`},
		{"a null unit", etcdHeader{Rest: unit(10, 20, d), Clusters: map[string]*etcdUnit{"a": nil}, Size: 10, PlainSize: 20}, `unit "a" is null`},
		{"too few parts", etcdHeader{Rest: unit(EtcdPartSize+1, 20, d), Size: EtcdPartSize + 1, PlainSize: 20}, "names 1 parts for 262145 bytes (2 expected)"},
		{"a part not a digest", etcdHeader{Rest: unit(10, 20, "../../lock"), Size: 10, PlainSize: 20}, "which is not a sha256"},
		{"a zero size", etcdHeader{Rest: unit(0, 20), Size: 0, PlainSize: 20}, "not 1 to"},
		{"sums that differ", etcdHeader{Rest: unit(10, 20, d), Size: 11, PlainSize: 20}, "its units add up to 10 bytes gzipped, 20 whole; its header says 11, 20"},
		{"over the whole bound", etcdHeader{Rest: unit(10, state.MaxSize, d), Clusters: map[string]*etcdUnit{"a": unit(1, 1, d)}, Size: 11, PlainSize: state.MaxSize + 1}, "a state is at most"},
		{"too many units", etcdHeader{Rest: unit(10, 20, d), Clusters: many, Size: 10 + len(many), PlainSize: 20 + int64(len(many))}, "names 1001 units, over 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.FormatVersion, tc.h.Encoding, tc.h.Lineage, tc.h.Serial = "2", "gzip", "l", 1
			value, _ := json.Marshal(tc.h)
			_, err := e.decodeHeader(value, "/p/.fuelsync/state", "/p/.fuelsync/parts/")
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("decodeHeader: %v; want %q", err, tc.want)
			}
		})
	}
	if _, err := e.decodeHeader(bytes.Repeat([]byte(" "), maxHeaderSizeV2+1), "s", "p"); err == nil || !strings.Contains(err.Error(), "over the 524288 a header may be") {
		t.Errorf("a header over the bound: %v", err)
	}
	if _, err := e.decodeHeader([]byte(`{"format_version":"3","encoding":"gzip"}`), "s", "p"); err == nil || !strings.Contains(err.Error(), `format_version "3", encoding "gzip"; this fuelsync reads 1 or 2, gzip`) {
		t.Errorf("format 3: %v", err)
	}
}

// FuzzDecodeHeader: whatever a header says, decodeHeader does not panic, and
// a header it accepts is within its bounds.
func FuzzDecodeHeader(f *testing.F) {
	e := &Etcd{cfg: state.EtcdConfig{Endpoints: []string{"h:2379"}, Prefix: "/p"}}
	d := strings.Repeat("a", 64)
	for _, h := range []etcdHeader{
		{FormatVersion: "2", Encoding: "gzip", Rest: &etcdUnit{Size: 10, PlainSize: 20, Parts: []string{d}}, Clusters: map[string]*etcdUnit{"a": {Size: 5, PlainSize: 5, Parts: []string{d}}}, Size: 15, PlainSize: 25},
		{FormatVersion: "1", Encoding: "gzip", Size: 10, SHA256: d, Parts: []string{"/p/.fuelsync/parts/" + d}},
	} {
		v, _ := json.Marshal(h)
		f.Add(v)
	}
	f.Add([]byte(`{"format_version":"2","encoding":"gzip","rest":null}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		h, err := e.decodeHeader(value, "/p/.fuelsync/state", "/p/.fuelsync/parts/")
		if err != nil {
			return
		}
		if h.Size > state.MaxSize || h.PlainSize > state.MaxSize {
			t.Fatalf("accepted sizes %d, %d", h.Size, h.PlainSize)
		}
		if h.FormatVersion == "2" {
			if len(h.Clusters) > maxUnits {
				t.Fatalf("accepted %d units", len(h.Clusters))
			}
			for _, u := range h.units() {
				if len(u.Parts) != (u.Size+EtcdPartSize-1)/EtcdPartSize {
					t.Fatalf("accepted %d parts for %d bytes", len(u.Parts), u.Size)
				}
			}
		}
	})
}

// A writer that did not write again the parts of the header it read commits
// only if that header is still the stored one: when it was put again
// meanwhile (same serial), the commit writes every part and lands, and no
// part it names is missing.
func TestEtcdCommitReliesOnTheHeaderRead(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	e := etcdAt(t, c, "relied")
	st := fleetState("lin", 1, 5, 50)
	if err := e.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	resp, err := e.client.Get(ctx, e.key("state"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Put(ctx, e.key("state"), string(resp.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	changeOne(st, "cluster-002")
	stop := putBytes(t, e, "/relied/")
	if err := e.Commit(ctx, 1, st); err != nil {
		t.Fatal(err)
	}
	_, keys := stop()
	parts := 0
	for _, k := range keys {
		if strings.Contains(k, "/parts/") {
			parts++
		}
	}
	if parts != 2+6 { // the two new units, then all six again
		t.Errorf("%d parts put; want 8 (2, then every one of the 6 once the header read was found replaced)", parts)
	}
	got, err := etcdAt(t, c, "relied").ReadState(ctx)
	if err != nil || !cmp.Equal(got, st) {
		t.Errorf("the state after the commit: %v", err)
	}
}
