package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fuelsync/fuelsync/loader"
)

// source is one repository revision to load.
type source struct {
	fsys fs.FS
	// label describes it for humans: the path, or path@rev (sha).
	label string
	// revision is the commit sha read, or "working-tree".
	revision string
	// prefix is prepended to repository-relative file names in diagnostics so they
	// are relative to the current directory, as compilers print them.
	prefix string
	// cache shares decoded files with other sources (diff's two revisions).
	cache *loader.Cache
}

// isBareRepo reports whether dir looks like a bare git repository.
func isBareRepo(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return false
	}
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// openSource opens the working tree of g.repo, or revision g.rev from its git
// objects. A bare repository has no working tree, so it is read at HEAD by default.
func openSource(g *globals) (*source, error) {
	fi, err := os.Stat(g.repo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s does not exist", g.repo)}
	}
	if err != nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
	}
	if !fi.IsDir() {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s is not a directory", g.repo)}
	}
	prefix := ""
	if clean := filepath.ToSlash(filepath.Clean(g.repo)); clean != "." {
		prefix = clean + "/"
	}
	rev := g.rev
	if rev == "" && isBareRepo(g.repo) {
		rev = "HEAD"
	}
	if rev == "" {
		return &source{fsys: os.DirFS(g.repo), label: g.repo, prefix: prefix, revision: "working-tree"}, nil
	}
	fsys, hash, err := loader.OpenRevision(g.repo, rev)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	return &source{fsys: fsys, label: fmt.Sprintf("%s@%s (%.12s)", g.repo, rev, hash), prefix: prefix, revision: hash}, nil
}
