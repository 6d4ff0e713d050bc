package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTagsEditKeepsBOMAndCRLF: `tags assign` and `roles assign` on cluster specs
// saved the Windows way (a UTF-8 byte order mark, CRLF line endings), in YAML and
// HCL: the repository still validates, and the edited file keeps its mark and has
// no line ending in a bare LF.
func TestTagsEditKeepsBOMAndCRLF(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join("..", "..", "examples", "quickstart"))); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"demo": "clusters/demo.yaml", "demo-hcl": "clusters/demo-hcl.hcl"}
	for _, f := range files {
		p := filepath.Join(repo, f)
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		win := append([]byte("\ufeff"), bytes.ReplaceAll(src, []byte("\n"), []byte("\r\n"))...)
		if err := os.WriteFile(p, win, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, cluster := range []string{"demo", "demo-hcl"} {
		for _, args := range [][]string{
			{"tags", "assign", "--cluster", cluster, "--node", "node-1", "backup"},     // a key added to the node
			{"tags", "unassign", "--cluster", cluster, "--node", "node-2", "rabbitmq"}, // a list next to an existing one
			{"roles", "assign", "--cluster", cluster, "--node", "node-4", "storage"},   // a list rewritten
		} {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"fuelsync", "--repo", repo}, args...), &stdout, &stderr); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
			}
			src, err := os.ReadFile(filepath.Join(repo, files[cluster]))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(src, []byte("\ufeff")) {
				t.Errorf("%s: the byte order mark is gone", strings.Join(args, " "))
			}
			if n := bytes.Count(src, []byte("\n")) - bytes.Count(src, []byte("\r\n")); n > 0 {
				t.Errorf("%s: %d lines end in a bare LF:\n%q", strings.Join(args, " "), n, src)
			}
		}
	}
	if code := run([]string{"fuelsync", "--repo", repo, "validate"}, io.Discard, io.Discard); code != 0 {
		t.Errorf("the edited repository does not validate (exit %d)", code)
	}
}
