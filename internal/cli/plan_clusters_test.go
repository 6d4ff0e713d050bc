package cli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/state"
)

// TestPlanRendersChangedClustersOnly: after an apply, a commit changing one
// cluster's spec renders that cluster only (the other keeps its applied
// artifacts), and not the applied revision (new nodes' causes need nothing
// of it: it is placed again only for a task or tag a node lost); the plan
// (causes included) is the one made by rendering everything, and so are the
// state and every file apply writes, through a saved plan too. A change to a
// shared input (the release) renders every cluster.
func TestPlanRendersChangedClustersOnly(t *testing.T) {
	requireTestHooks(t)
	dir := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	run := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := fuelsyncRun(t, append([]string{"--repo", dir, "--rev", "HEAD"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		return stdout
	}
	counted := func(f func() string) (out string, rendered, applied int64) {
		t.Helper()
		r0, a0 := renderedClusters.Load(), appliedClusters.Load()
		out = f()
		return out, renderedClusters.Load() - r0, appliedClusters.Load() - a0
	}
	run("--workdir", wd, "-q", "apply", "--auto-approve")
	st, err := state.Open(wd).ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ClusterInputs) != 2 || st.ClusterInputs["demo"] == "" || st.ClusterInputs["demo-hcl"] == "" {
		t.Fatalf("the applied state's cluster fingerprints: %v", st.ClusterInputs)
	}

	// The same work directory, without cluster fingerprints (an older
	// version's state): everything is rendered there.
	full := filepath.Join(t.TempDir(), "full")
	copyWorkdir(t, wd, full)
	old := *st
	old.ClusterInputs = nil
	writeState(t, full, &old)

	demo := filepath.Join(dir, "clusters", "demo.yaml")
	data, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	revWriteFile(t, dir, "clusters/demo.yaml", strings.Replace(string(data), "node-4: {id: 4, roles: [compute]}",
		"node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}\n  node-8: {id: 8, roles: [controller]}", 1))
	if _, err := gitCommit(dir, "two nodes in demo"); err != nil {
		t.Fatal(err)
	}
	got, n, a := counted(func() string { return run("--workdir", wd, "--format", "json", "plan") })
	if n != 1 || a != 0 {
		t.Errorf("plan of a change to demo: %d clusters rendered, %d of the applied revision; want 1 and 0", n, a)
	}
	want, n, a := counted(func() string { return run("--workdir", full, "--format", "json", "plan") })
	if n != 2 || a != 0 {
		t.Errorf("plan over a state without cluster fingerprints: %d clusters rendered, %d of the applied revision; want 2 and 0", n, a)
	}
	if got != want || !strings.Contains(got, "node-7") {
		t.Errorf("the plan keeping demo-hcl differs from the full one:\n%s\nfull:\n%s", got, want)
	}

	// Apply through a saved plan here, directly there: the same state, the
	// same files, which are those of a render.
	planFile := filepath.Join(t.TempDir(), "plan.json")
	run("--workdir", wd, "-q", "plan", "--out", planFile)
	if _, n, _ := counted(func() string { return run("--workdir", wd, "-q", "apply", planFile) }); n != 1 {
		t.Errorf("apply of the saved plan rendered %d clusters, want 1", n)
	}
	run("--workdir", full, "-q", "apply", "--auto-approve")
	sameApplied(t, wd, full)
	out := filepath.Join(t.TempDir(), "render")
	run("render", "--out", out)
	sameFiles(t, currentSet(t, wd), os.DirFS(out))

	// Nothing changed since: no render at all.
	if _, n, _ := counted(func() string { return run("--workdir", wd, "plan") }); n != 0 {
		t.Errorf("plan of the applied commit: %d clusters rendered", n)
	}
	// A shared input (the release): every cluster.
	rel := filepath.Join(dir, "plugins", "quickstart", "release.yaml")
	rdata, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	revWriteFile(t, dir, "plugins/quickstart/release.yaml", string(rdata)+"# edited\n")
	if _, err := gitCommit(dir, "the release"); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := counted(func() string { return run("--workdir", wd, "plan") }); n != 2 {
		t.Errorf("plan of a release change rendered %d clusters, want 2", n)
	}
	revWriteFile(t, dir, "plugins/quickstart/release.yaml", string(rdata))
	if _, err := gitCommit(dir, "the release back"); err != nil {
		t.Fatal(err)
	}
	// The other cluster's spec: that one only, and its artifacts as a render's.
	hcl := filepath.Join(dir, "clusters", "demo-hcl.hcl")
	hdata, err := os.ReadFile(hcl)
	if err != nil {
		t.Fatal(err)
	}
	revWriteFile(t, dir, "clusters/demo-hcl.hcl", "# edited\n"+string(hdata))
	if _, err := gitCommit(dir, "demo-hcl"); err != nil {
		t.Fatal(err)
	}
	if out, n, _ := counted(func() string { return run("--workdir", wd, "apply", "--auto-approve") }); n != 1 || !strings.Contains(out, "No changes") {
		t.Errorf("apply of a comment in demo-hcl: %d clusters rendered, want 1\n%s", n, out)
	}
}

// writeState replaces the state of the work directory wd (its current set's
// .state.json) with st.
func writeState(t *testing.T, wd string, st *state.State) {
	t.Helper()
	name := filepath.Join(state.Open(wd).SetDir(st.Serial), ".state.json")
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameApplied checks that two work directories hold the same state and the
// same current artifacts.
func sameApplied(t *testing.T, a, b string) {
	t.Helper()
	sa, err := state.Open(a).ReadState()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := state.Open(b).ReadState()
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.MarshalIndent(sa, "", " ")
	jb, _ := json.MarshalIndent(sb, "", " ")
	if !bytes.Equal(ja, jb) {
		t.Errorf("states differ:\n%s\n%s", ja, jb)
	}
	sameFiles(t, currentSet(t, a), currentSet(t, b))
}

// sameFiles checks that two artifact directories hold the same files (the
// state's own file aside), byte for byte.
func sameFiles(t *testing.T, a, b fs.FS) {
	t.Helper()
	read := func(root fs.FS) map[string][]byte {
		files := map[string][]byte{}
		err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.HasPrefix(path.Base(p), ".") {
				return nil
			}
			data, err := fs.ReadFile(root, p)
			files[p] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	fa, fb := read(a), read(b)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Errorf("%s has %d files, %s %d", a, len(fa), b, len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Errorf("%s differs between %s and %s", name, a, b)
		}
	}
}

// currentSet is the current applied set of wd.
func currentSet(t *testing.T, wd string) fs.FS {
	t.Helper()
	w := state.Open(wd)
	st, err := w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	return w.SetFS(st.Serial)
}
