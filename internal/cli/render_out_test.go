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
