package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/state"
)

// TestPlanNoInputChangeRendersNothing: after an apply, a plan of a commit that
// changes no input (the README) says "No changes" without rendering, in text
// and JSON, and apply says "Nothing to apply." without rendering; a commit that changes an input file is rendered and planned as
// usual; a state without an input fingerprint (an older version's) takes the
// normal path.
func TestPlanNoInputChangeRendersNothing(t *testing.T) {
	requireTestHooks(t)
	dir := quickstartRepo(t)
	files, err := mapfs.Read("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "wd")
	plan := func(extra ...string) (string, int64) {
		t.Helper()
		before := renders.Load()
		code, stdout, stderr := fuelsyncRun(t, append([]string{"--repo", dir, "--rev", "HEAD", "--workdir", wd, "plan"}, extra...)...)
		if code != 0 {
			t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
		}
		return stdout, renders.Load() - before
	}
	if code, stdout, stderr := fuelsyncRun(t, "--repo", dir, "--rev", "HEAD", "--workdir", wd, "-q", "apply", "--auto-approve"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	st, err := state.Open(wd).ReadState()
	if err != nil || st.Inputs == "" {
		t.Fatalf("the applied state has no input fingerprint: %v", err)
	}
	const noChanges = "No changes: the rendered artifacts are the same.\n"
	if out, n := plan(); out != noChanges || n != 0 {
		t.Errorf("plan of the applied commit: %d renders, %q", n, out)
	}

	revWriteFile(t, dir, "README.md", "# edited\n")
	if _, err := gitCommit(dir, "readme"); err != nil {
		t.Fatal(err)
	}
	if out, n := plan(); out != noChanges || n != 0 {
		t.Errorf("plan of a README commit: %d renders, %q", n, out)
	}
	if out, n := plan("--format", "json"); n != 0 || !strings.Contains(out, `"changes_present": false`) || !strings.Contains(out, `"serial": 1`) {
		t.Errorf("plan --format json of a README commit: %d renders, %s", n, out)
	}
	before := renders.Load()
	if code, stdout, stderr := fuelsyncRun(t, "--repo", dir, "--rev", "HEAD", "--workdir", wd, "apply", "--auto-approve"); code != 0 ||
		stdout != noChanges+"Nothing to apply.\n" || renders.Load() != before {
		t.Errorf("apply of a README commit: exit %d, %d renders\n%s%s", code, renders.Load()-before, stdout, stderr)
	}
	if _, n := plan("--cluster", "demo"); n != 1 {
		t.Errorf("plan --cluster: %d renders, want 1 (not short-cut)", n)
	}

	// A change of an input file: rendered and planned.
	data := string(files["clusters/demo.yaml"].Data)
	revWriteFile(t, dir, "clusters/demo.yaml", strings.Replace(data, "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}", 1))
	if _, err := gitCommit(dir, "a node"); err != nil {
		t.Fatal(err)
	}
	if out, n := plan(); n != 1 || !strings.Contains(out, "node-7") {
		t.Errorf("plan of a new node: %d renders, %q", n, out)
	}
	revWriteFile(t, dir, "clusters/demo.yaml", data)
	if _, err := gitCommit(dir, "the node back"); err != nil {
		t.Fatal(err)
	}

	// A state without a fingerprint, as an older version wrote it.
	old := *st
	old.Inputs, old.ClusterInputs = "", nil
	name := filepath.Join(state.Open(wd).SetDir(st.Serial), ".state.json")
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, n := plan(); out != noChanges || n != 1 {
		t.Errorf("plan over a state without fingerprint: %d renders (want 1), %q", n, out)
	}
}

// TestPlanWorkdirInsideWorkingTree: run from the repository with the default
// work directory (.fuelsync, inside the working tree), an apply does not change
// the inputs of the next plan: the work directory is not an input.
func TestPlanWorkdirInsideWorkingTree(t *testing.T) {
	requireTestHooks(t)
	dir := quickstartRepo(t)
	wd := filepath.Join(dir, ".fuelsync")
	if code, stdout, stderr := fuelsyncRun(t, "--repo", dir, "--workdir", wd, "-q", "apply", "--auto-approve"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	before := renders.Load()
	code, stdout, stderr := fuelsyncRun(t, "--repo", dir, "--workdir", wd, "plan")
	if code != 0 || stdout != "No changes: the rendered artifacts are the same.\n" || renders.Load() != before {
		t.Errorf("plan after apply, work directory inside the tree: exit %d, %d renders\n%s%s", code, renders.Load()-before, stdout, stderr)
	}
	// A file the work directory does not hold still counts.
	revWriteFile(t, dir, "clusters/notes.yaml.txt", "x\n")
	before = renders.Load()
	if code, stdout, stderr := fuelsyncRun(t, "--repo", dir, "--workdir", wd, "plan"); code != 0 || renders.Load() == before {
		t.Errorf("plan after a new file: exit %d, %d renders\n%s%s", code, renders.Load()-before, stdout, stderr)
	}
}
