// Package mapfs copies a directory tree into an fstest.MapFS, for tests that edit a
// repository in memory (the examples, mostly).
package mapfs

import (
	"io/fs"
	"os"
	"testing/fstest"
)

// Read returns every file under dir, by slash path relative to dir.
func Read(dir string) (fstest.MapFS, error) {
	out := fstest.MapFS{}
	root := os.DirFS(dir)
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		out[p] = &fstest.MapFile{Data: data}
		return err
	})
	return out, err
}
