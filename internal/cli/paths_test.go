package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// revisionSource is a source.Source that yields one given commit.
type revisionSource struct {
	path string
	sha  string
}

func (s *revisionSource) Latest(context.Context) (gitsource.Revision, error) {
	fsys, sha, err := loader.OpenRevision(s.path, s.sha)
	return gitsource.Revision{SHA: sha, FS: fsys}, err
}

func (s *revisionSource) At(_ context.Context, sha string) (gitsource.Revision, error) {
	fsys, got, err := loader.OpenRevision(s.path, sha)
	return gitsource.Revision{SHA: got, FS: fsys}, err
}

// TestCLIAndDaemonSameOperation: apply (the CLI) and the reconcile loop (watch
// and serve) run one operation: over the same revisions of one repository —
// a first apply, a change to one cluster with an error in the other (held),
// the error fixed (a status change only), a plugin changed — their work
// directories hold the same states and the same artifacts, byte for byte
// (but the lineage, which each work directory makes its own).
func TestCLIAndDaemonSameOperation(t *testing.T) {
	dir := quickstartRepo(t)
	var revs []string
	head := func() {
		_, sha, err := loader.OpenRevision(dir, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, sha)
	}
	head()
	edit := func(name, old, new, msg string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), old) {
			t.Fatalf("%s: %v, or no %q", name, err, old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := gitCommit(dir, msg); err != nil {
			t.Fatal(err)
		}
		head()
	}
	edit("clusters/demo.yaml", "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}", "node-4 storage")
	edit("clusters/demo-hcl.hcl", `roles = ["compute"]`, `roles = ["computee"]`, "a typo")
	edit("clusters/demo-hcl.hcl", `roles = ["computee"]`, `roles = ["compute"]`, "the typo fixed")
	edit("plugins/monitoring/deployment_tasks.yaml", "timeout:", "timeout: 1\n    retries:", "a plugin task changed")

	cliWD, loopWD := filepath.Join(t.TempDir(), "cli"), filepath.Join(t.TempDir(), "loop")
	src := &revisionSource{path: dir}
	loop := &controller.Loop{Workdir: state.Open(loopWD), Source: src, ToolVersion: version}
	for i, rev := range revs {
		code, _, stderr := fuelsyncRun(t, "--repo", dir, "--rev", rev, "--workdir", cliWD, "apply", "--auto-approve")
		if want := 0; rev == revs[2] {
			if code != 1 || !strings.Contains(stderr, "held 1 cluster: demo-hcl") {
				t.Fatalf("revision %d by the CLI: exit %d, want 1 holding demo-hcl\n%s", i, code, stderr)
			}
		} else if code != want {
			t.Fatalf("revision %d by the CLI: exit %d\n%s", i, code, stderr)
		}
		src.sha = rev
		if o := loop.ReconcileOnce(context.Background()); o == operation.Failed {
			t.Fatalf("revision %d by the loop: %s %q", i, o, loop.Status().Errors)
		}
		a, b := state.Open(cliWD), state.Open(loopWD)
		sa, err := a.ReadState()
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.ReadState()
		if err != nil {
			t.Fatal(err)
		}
		sb.Lineage = sa.Lineage
		ja, _ := json.MarshalIndent(sa, "", "  ")
		jb, _ := json.MarshalIndent(sb, "", "  ")
		if !bytes.Equal(ja, jb) {
			t.Fatalf("revision %d: the states differ\nCLI:\n%s\nloop:\n%s", i, ja, jb)
		}
		fa, fb := files(t, a.SetFS(sa.Serial)), files(t, b.SetFS(sb.Serial))
		if len(fa) != len(fb) || len(fa) == 0 {
			t.Fatalf("revision %d: %d files by the CLI, %d by the loop", i, len(fa), len(fb))
		}
		for name, data := range fa {
			if name == ".state.json" || name == ".seal" {
				continue // its lineage, its time
			}
			if !bytes.Equal(data, fb[name]) {
				t.Errorf("revision %d: %s differs", i, name)
			}
		}
	}
}

// files reads every file of fsys.
func files(t *testing.T, fsys fs.FS) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		out[p] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
