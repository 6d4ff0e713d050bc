package cli

// Helpers of the tests that run the CLI, on every system.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/state"
)

// applyRepo writes a generated repository (two clusters, 40 nodes each: a few
// hundred artifact files) into a temporary directory and returns it with the two
// variants of its first cluster file: as generated, and without node-1.
func applyRepo(t *testing.T) (dir, clusterFile string, a, b []byte) {
	t.Helper()
	return applyRepoSpec(t, repogen.Spec{Plugins: 3, Tasks: 200, Nodes: 40, Clusters: 2, Seed: 5})
}

// applyRepoSpec is applyRepo for the repository spec describes.
func applyRepoSpec(t *testing.T, spec repogen.Spec) (dir, clusterFile string, a, b []byte) {
	t.Helper()
	dir = t.TempDir()
	fsys := repogen.Generate(spec)
	for name, f := range fsys {
		if f.Mode.IsDir() {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clusterFile = filepath.Join(dir, "clusters", "c-01.yaml")
	a, err := os.ReadFile(clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	node1 := "  node-1:\n    id: 1\n    roles: [controller]\n"
	if !bytes.Contains(a, []byte(node1)) {
		t.Fatalf("the generated cluster has no %q", node1)
	}
	return dir, clusterFile, a, bytes.Replace(a, []byte(node1), nil, 1)
}

// writeBinaries writes into dir (made when missing) fuelsync and
// fuelsync-server: scripts that run this test binary as the CLI and as
// agentBinary is the node agent's own binary (cmd/fuelsync-agent), which
// make build, install and release write beside the other two.
const agentBinary = "fuelsync-agent"

// fuelsync-server, where a build would have put the binaries.
func writeBinaries(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]string{"fuelsync": "1", ServerBinary: "server", agentBinary: "agent"} {
		wrapper := "#!/bin/sh\nFUELSYNC_RUN_MAIN=" + mode + " exec '" + os.Args[0] + "' \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// fuelsyncCmd runs the test binary as the CLI.
func fuelsyncCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1")
	return cmd
}

// checkWorkdir asserts the invariant of the work directory: the state parses, and
// the current set holds exactly the files the state lists, with their digests.
func checkWorkdir(t *testing.T, wd string) *state.State {
	t.Helper()
	w := state.Open(wd)
	st, err := w.ReadState()
	if err != nil {
		t.Fatalf("the state does not read: %v", err)
	}
	if st.Serial == 0 {
		return st
	}
	found := map[string]bool{}
	cur := w.SetFS(st.Serial)
	err = fs.WalkDir(cur, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == ".state.json" || p == ".seal" {
			return err
		}
		data, err := fs.ReadFile(cur, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if want, ok := st.Artifacts[p]; !ok {
			t.Errorf("serial %d: %s is in the current set but not in the state", st.Serial, p)
		} else if want != hex.EncodeToString(sum[:]) {
			t.Errorf("serial %d: %s differs from the state's digest", st.Serial, p)
		}
		found[p] = true
		return nil
	})
	if err != nil {
		t.Fatalf("serial %d: reading the current set: %v", st.Serial, err)
	}
	for p := range st.Artifacts {
		if !found[p] {
			t.Errorf("serial %d: %s is in the state but not in the current set", st.Serial, p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return st
}

// copyWorkdir copies the work directory src to dst, symlinks as symlinks.
func copyWorkdir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying the work directory: %v", err)
	}
}
