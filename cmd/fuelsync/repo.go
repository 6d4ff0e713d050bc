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

// isFuelsyncRoot reports whether dir, on disk, holds plugins/ or clusters/.
func isFuelsyncRoot(dir string) bool {
	for _, n := range []string{"plugins", "clusters"} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// enclosingRoot returns the nearest directory above dir (relative to dir, as
// "..", "../.." ...) that is a fuelsync repository or a git work tree with one, or
// "" when there is none up to the file system root or the first git work tree.
func enclosingRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	rel := dir
	for {
		if _, err := os.Stat(filepath.Join(abs, ".git")); err == nil && !isFuelsyncRoot(abs) {
			return "" // the top of a git work tree that is not a fuelsync repository
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return ""
		}
		abs, rel = parent, filepath.Join(rel, "..")
		if isFuelsyncRoot(abs) {
			return filepath.Clean(rel)
		}
	}
}

// hasRepoLayout reports whether a revision holds plugins/ or clusters/.
func hasRepoLayout(fsys fs.FS) bool {
	for _, n := range []string{"plugins", "clusters"} {
		if fi, err := fs.Stat(fsys, n); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// notARepo is the error for a directory (or revision) without the layout of a
// fuelsync repository.
func notARepo(dir, at string) error {
	msg := fmt.Sprintf("no plugins/ or clusters/ in %s%s: it is not a fuelsync repository", dir, at)
	if root := enclosingRoot(dir); root != "" {
		msg += fmt.Sprintf("\nhint: %s is inside the repository %s; use --repo %s", dir, root, root)
	} else {
		msg += "\nhint: --repo names the repository's root, the directory that holds plugins/ and clusters/ (fuelsync plugin create starts one)"
	}
	return &exitError{code: 1, msg: msg}
}

// openSource opens the working tree of g.repo, or revision g.rev from its git
// objects. A bare repository has no working tree, so it is read at HEAD by default.
// g.repo must be a fuelsync repository (plugins/ or clusters/ present); when it is
// the current directory and is not one, the root is looked for upward, as git
// does, and g.repo becomes that root.
func openSource(g *globals) (*source, error) {
	if filepath.Clean(g.repo) == "." && !isFuelsyncRoot(".") && !isBareRepo(".") {
		if root := enclosingRoot("."); root != "" {
			g.repo = root
		}
	}
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
		fsys := os.DirFS(g.repo)
		if !hasRepoLayout(fsys) {
			return nil, notARepo(g.repo, "")
		}
		return &source{fsys: fsys, label: g.repo, prefix: prefix, revision: "working-tree"}, nil
	}
	fsys, hash, err := loader.OpenRevision(g.repo, rev)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	if !hasRepoLayout(fsys) {
		return nil, notARepo(g.repo, fmt.Sprintf(" at %s (%.12s)", rev, hash))
	}
	return &source{fsys: fsys, label: fmt.Sprintf("%s@%s (%.12s)", g.repo, rev, hash), prefix: prefix, revision: hash}, nil
}
