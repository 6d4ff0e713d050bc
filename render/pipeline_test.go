package render

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// collect runs RenderStream and returns what it handed to put.
func collect(t *testing.T, repo *loader.Repo, opts Options, expanded bool) (map[string][]byte, []*Model, string, error) {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]byte{}
	models, diags, err := RenderStream(repo, opts, "rev", "v", expanded, func(name string, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[name]; dup {
			t.Errorf("%s handed to put twice", name)
		}
		got[name] = bytes.Clone(data)
		return nil
	})
	return got, models, diagText(diags), err
}

// TestRenderStreamSameBytes: rendering cluster by cluster gives the files of
// Render and Files, in both formats, with the same diagnostics.
func TestRenderStreamSameBytes(t *testing.T) {
	spec := repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 90, Clusters: 5, Seed: 9, CrossDepends: 60, StageFanIn: true}
	repo, ld := loader.Load(repogen.Generate(spec), loader.Options{})
	if ld.HasErrors() {
		t.Fatal(diagText(ld))
	}
	rs, diags := Render(repo, Options{})
	for _, expanded := range []bool{false, true} {
		want, err := Files(rs, "rev", "v")
		if expanded {
			want, err = FilesExpanded(rs, "rev", "v")
		}
		if err != nil {
			t.Fatal(err)
		}
		got, models, gotDiags, err := collect(t, repo, Options{}, expanded)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 100 {
			t.Fatalf("only %d files: the test repository is too small", len(want))
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("expanded=%v: files differ from Files (-want +got):\n%s", expanded, d)
		}
		if gotDiags != diagText(diags) {
			t.Errorf("diagnostics:\n%s\nwant:\n%s", gotDiags, diagText(diags))
		}
		var names, wantNames []string
		for i, m := range models {
			names = append(names, m.Cluster.Name)
			wantNames = append(wantNames, rs[i].Model.Cluster.Name)
		}
		if d := cmp.Diff(wantNames, names); d != "" {
			t.Errorf("models (-want +got):\n%s", d)
		}
	}
	// --cluster: only the clusters asked for.
	one := rs[2].Model.Cluster.Name
	got, models, _, err := collect(t, repo, Options{Clusters: []string{one}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 1 || models[0].Cluster.Name != one {
		t.Errorf("models %v, want only %s", models, one)
	}
	for name := range got {
		if name != "manifest.json" && !strings.HasPrefix(name, one+"/") {
			t.Errorf("%s written for --cluster %s", name, one)
		}
	}
}

// TestRenderStreamErrors: a cycle in two of three clusters is reported as Render
// reports it, and the manifest, which makes a set, is never handed to put.
func TestRenderStreamErrors(t *testing.T) {
	tasks := `- {id: a, type: shell, role: [cinder], requires: [b]}
- {id: b, type: shell, role: [cinder], requires: [a]}
- {id: c, type: shell, role: [controller]}
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
	files["clusters/clean.yaml"] = "cluster: clean\nrelease: base-1.0\nnodes:\n  node-1: {id: 1, roles: [controller]}\n"
	files["clusters/zeta.yaml"] = strings.NewReplacer("cluster: prod", "cluster: zeta", "node-5: {id: 5", "node-6: {id: 6").Replace(semCluster)
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	if ld.HasErrors() {
		t.Fatal(diagText(ld))
	}
	_, want := Render(repo, Options{})
	if n := len(cycleErrors(want)); n != 2 {
		t.Fatalf("%d cycle errors from Render, want 2:\n%s", n, diagText(want))
	}
	got, _, gotDiags, err := collect(t, repo, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if gotDiags != diagText(want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", gotDiags, diagText(want))
	}
	if _, ok := got["manifest.json"]; ok {
		t.Error("manifest.json handed to put although the repository has errors")
	}
}

// TestRenderStreamPutError: the first error of put stops the stream and is
// returned, and no manifest follows it.
func TestRenderStreamPutError(t *testing.T) {
	repo, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 2, Tasks: 100, Nodes: 20, Clusters: 3, Seed: 4}), loader.Options{})
	if ld.HasErrors() {
		t.Fatal(diagText(ld))
	}
	full := errors.New("no space left on device")
	var mu sync.Mutex
	var puts int
	var manifest bool
	_, _, err := RenderStream(repo, Options{}, "rev", "v", false, func(name string, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		puts++
		manifest = manifest || name == "manifest.json"
		if puts == 5 {
			return full
		}
		return nil
	})
	if !errors.Is(err, full) {
		t.Errorf("error %v, want %v", err, full)
	}
	if manifest {
		t.Error("manifest.json handed to put after an error")
	}
}
