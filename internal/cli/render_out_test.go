package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tree writer refuses a name that is not a path inside the directory it
// replaces, and the directory stays as it was.
func TestWriteTreeAtomicRefusesNonLocalNames(t *testing.T) {
	for _, name := range []string{"../evil.yaml", "a/../../evil.yaml", "/tmp/evil.yaml", ""} {
		t.Run(name, func(t *testing.T) {
			top := t.TempDir()
			out := filepath.Join(top, "sub", "out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "manifest.json"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := writeTreeAtomic(out, func(put func(string, []byte) error) error {
				if err := put("ok.yaml", []byte("x")); err != nil {
					return err
				}
				return put(name, []byte("evil"))
			})
			if err == nil || !strings.Contains(err.Error(), "refusing to write") {
				t.Fatalf("err = %v", err)
			}
			var found []string
			filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					found = append(found, strings.TrimPrefix(p, top))
				}
				return nil
			})
			if len(found) != 1 || found[0] != filepath.FromSlash("/sub/out/manifest.json") {
				t.Errorf("files after the refusal: %v", found)
			}
		})
	}
}

// TestRenderOutRefusesWorkdir: render --out refuses a work directory, anything
// inside one (an applied set held the manifest.json of a render, so it passed
// for a previous render and was replaced: plan then called the state damaged),
// and a directory that holds one; an applied set copied elsewhere is no
// previous render either. The work directory is untouched, and plan still
// reads it.
func TestRenderOutRefusesWorkdir(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "var", "wd")
	var stdout, stderr strings.Builder
	if code := run([]string{"fuelsync", "--repo", repo, "--workdir", wd, "apply", "--auto-approve", "-q"}, &stdout, &stderr); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr.String())
	}
	copied := filepath.Join(t.TempDir(), "copied-set")
	if err := os.CopyFS(copied, os.DirFS(filepath.Join(wd, "artifacts", "1"))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, filepath.Dir(wd))
	for _, tc := range []struct{ out, want string }{
		{filepath.Join(wd, "artifacts", "1"), "is inside the work directory " + wd},
		{filepath.Join(wd, "artifacts", "current"), "is inside the work directory " + wd},
		{filepath.Join(wd, "artifacts"), "is inside the work directory " + wd},
		{filepath.Join(wd, "trees"), "is inside the work directory " + wd},
		{filepath.Join(wd, "new"), "is inside the work directory " + wd},
		{wd, "is a work directory"},
		{filepath.Dir(wd), "it holds the work directory " + wd},
		{copied, "is not a previous render"},
	} {
		stdout.Reset()
		stderr.Reset()
		code := run([]string{"fuelsync", "--repo", repo, "render", "--out", tc.out}, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("render --out %s: exit %d, stderr:\n%s\nwant exit 1 and %q", tc.out, code, stderr.String(), tc.want)
		}
	}
	unchangedFiles(t, "the work directory", before, snapshot(t, filepath.Dir(wd)))
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"fuelsync", "--repo", repo, "--workdir", wd, "plan", "--detailed-exitcode"}, &stdout, &stderr); code != 0 {
		t.Errorf("plan after the refusals: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
