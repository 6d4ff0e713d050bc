package render

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// TestWalkOneAtATime: Walk hands over several clusters at once on several
// cores, and one at a time with OneAtATime, each cluster once.
func TestWalkOneAtATime(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	repo := loadHeavy(t, 24, 6)
	for _, tc := range []struct {
		name       string
		oneAtATime bool
		many       bool // more than one cluster in hand at once, else one
		// wait is how long a cluster is kept in hand when no second one is
		// handed over: the other core's render, however loaded the machine,
		// when more than one may be in hand; a while, when none may come.
		wait time.Duration
	}{
		{"every core", false, true, time.Minute},
		{"one at a time", true, false, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inHand, most atomic.Int32
			var mu sync.Mutex
			seen := map[string]int{}
			// Each cluster is kept in hand until a second one is handed
			// over (or, when none comes, for tc.wait).
			second := make(chan struct{})
			var once sync.Once
			_, err := Walk(repo, Options{OneAtATime: tc.oneAtATime}, false, func(wk *Walked) error {
				n := inHand.Add(1)
				defer inHand.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if n > 1 {
					once.Do(func() { close(second) })
				}
				select {
				case <-second:
				case <-time.After(tc.wait):
				}
				if wk.Rendered == nil {
					t.Errorf("cluster %s was not rendered: %s", wk.Cluster.Name, diagText(wk.Diagnostics))
				}
				mu.Lock()
				seen[wk.Cluster.Name]++
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := most.Load(); (got > 1) != tc.many || got < 1 {
				t.Errorf("at most %d clusters in hand at once; want more than one: %v", got, tc.many)
			}
			if len(seen) != len(repo.Clusters) {
				t.Errorf("walked %d clusters, want %d", len(seen), len(repo.Clusters))
			}
			for c, n := range seen {
				if n != 1 {
					t.Errorf("cluster %s handed over %d times", c, n)
				}
			}
		})
	}
}

// TestWalkEncodingShared: the clusters of two loads of one repository
// (through one loader.Cache) encoded with one EncodeCache give the same bytes
// as each cluster encoded alone (no cache shared), and the second load's definitions are those the
// first encoded (keyed by the loaded data, which the cache shares), but for
// those the model makes anew.
func TestWalkEncodingShared(t *testing.T) {
	spec := repogen.Heavy(12)
	spec.Clusters = 2
	fsys := repogen.Generate(spec)
	cache := loader.NewCache()
	enc := NewEncodeCache()
	encodeAll := func(enc *EncodeCache) map[string]string {
		repo, diags := loader.Load(fsys, loader.Options{Cache: cache})
		if diags.HasErrors() {
			t.Fatalf("the generated repository does not load:\n%s", diagText(diags))
		}
		var mu sync.Mutex
		files := map[string]string{}
		_, err := Walk(repo, Options{Encoding: enc}, false, func(wk *Walked) error {
			if wk.Rendered == nil {
				t.Fatalf("cluster %s was not rendered: %s", wk.Cluster.Name, diagText(wk.Diagnostics))
			}
			if enc == nil {
				wk.Rendered.encoding = nil // each cluster's definitions encoded alone
			}
			return StreamCluster(wk.Rendered, func(name string, data []byte) error {
				mu.Lock()
				defer mu.Unlock()
				files[name] = string(data)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	entries := func() int {
		n := 0
		enc.blocks.m.Range(func(any, any) bool { n++; return true })
		return n
	}
	alone := encodeAll(nil)
	first := encodeAll(enc)
	n := entries()
	if n == 0 {
		t.Fatal("the encoding cache holds no definition")
	}
	second := encodeAll(enc)
	// A plugin task nailgun adds a default to (its cwd) is new data in
	// each load: a tenth of this shape's definitions.
	if got := entries(); got-n > n/5 {
		t.Errorf("the second load's encoding added %d definitions to the %d of the first", got-n, n)
	}
	for name, want := range alone {
		if first[name] != want || second[name] != want {
			t.Errorf("%s: encoded with the cache, its bytes differ from those encoded alone", name)
		}
	}
	if len(first) != len(alone) || len(second) != len(alone) {
		t.Errorf("%d and %d files with the cache, %d alone", len(first), len(second), len(alone))
	}
}

// TestStreamClusterSums: each file's digest handed over is the hex sha256 of
// its bytes, and the files are StreamCluster's.
func TestStreamClusterSums(t *testing.T) {
	repo := loadHeavy(t, 6, 1)
	rs, diags := Render(repo, Options{})
	if diags.HasErrors() || len(rs) != 1 {
		t.Fatalf("%d clusters rendered:\n%s", len(rs), diagText(diags))
	}
	var mu sync.Mutex
	plain := map[string]bool{}
	if err := StreamCluster(rs[0], func(name string, _ []byte) error {
		mu.Lock()
		defer mu.Unlock()
		plain[name] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := StreamClusterSums(rs[0], func(name string, data []byte, sum string) error {
		want := sha256.Sum256(data)
		if sum != hex.EncodeToString(want[:]) {
			t.Errorf("%s: digest %s, want the sha256 of its bytes", name, sum)
		}
		mu.Lock()
		defer mu.Unlock()
		if !plain[name] {
			t.Errorf("%s: not a file of StreamCluster", name)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(plain) {
		t.Errorf("%d files with their digests, %d without", n, len(plain))
	}
}

// TestWalkSharesOneEncoding: without Options.Encoding, the clusters a walk
// renders share one encoding cache of its own.
func TestWalkSharesOneEncoding(t *testing.T) {
	const clusters = 3
	repo := loadHeavy(t, 12, clusters)
	var mu sync.Mutex
	seen := map[*EncodeCache]int{}
	if _, err := Walk(repo, Options{}, false, func(wk *Walked) error {
		mu.Lock()
		defer mu.Unlock()
		if wk.Rendered != nil {
			seen[wk.Rendered.encoding]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[nil] != 0 || seen[firstKey(seen)] != clusters {
		t.Errorf("the clusters' encoding caches: %v; want one, shared by the %d clusters", seen, clusters)
	}
}

func firstKey[K comparable, V any](m map[K]V) K {
	for k := range m {
		return k
	}
	var zero K
	return zero
}
