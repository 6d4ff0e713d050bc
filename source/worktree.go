package source

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
)

// WorkingTree is the revision name of a working tree that is no commit's:
// outside a git repository, before its first commit, or when its inputs
// cannot be fingerprinted. Such a revision (and a dirty one, IsWorkingTree)
// is reconciled on every change, never skipped as already seen.
const WorkingTree = "working-tree"

// dirtySuffix ends the revision of a working tree whose inputs are not its
// commit's: <commit>+dirty.<the first 12 hex digits of their fingerprint>,
// as Go's build information says vcs.modified (and a version +dirty).
const dirtySuffix = "+dirty."

// IsWorkingTree says whether rev names a working tree rather than a commit:
// WorkingTree, or a commit's with changes (<commit>+dirty.<digest>), which
// git cannot read again.
func IsWorkingTree(rev string) bool {
	return rev == WorkingTree || strings.Contains(rev, dirtySuffix)
}

// PinWorktree is the revision of a working tree, whose files are fsys: the
// folder dir (a slash path, "" for the top) of the git work tree whose top is
// top. When its inputs are those of the folder at HEAD's commit (the same
// loader.InputFingerprint, with opts and skip), it is that commit, read from
// git; otherwise it is the working tree named <commit>+dirty.<digest>, the
// digest its inputs' fingerprint. It is the working tree named WorkingTree
// when top is "", when there is no commit yet or the folder is not in it, or
// when the tree cannot be fingerprinted.
func PinWorktree(top, dir string, fsys fs.FS, opts loader.Options, skip ...string) Revision {
	wt := Revision{SHA: WorkingTree, FS: fsys}
	if top == "" {
		return wt
	}
	head, commit, tree, err := loader.OpenRevisionDir(top, "HEAD", dir)
	if err != nil {
		return wt
	}
	mine, err := loader.InputFingerprint(fsys, opts, skip...)
	if err != nil {
		return wt
	}
	if theirs, err := loader.InputFingerprint(head, opts, skip...); err == nil && theirs == mine {
		return Revision{SHA: commit, FS: head, Tree: tree}
	}
	return Revision{SHA: commit + dirtySuffix + mine[:12], FS: fsys}
}

// WorktreeSource is the working tree of a repository, as files on disk: the
// folder Path.
type WorktreeSource struct {
	Path string
	// Top, when set, is the top of the git work tree Path is in, and Dir
	// the folder's path from there: each revision is then the commit at
	// HEAD when the folder's inputs are that commit's, else the working tree
	// <commit>+dirty.<digest> (PinWorktree, with Load and Skip).
	Top, Dir string
	Skip     []string
	Load     loader.Options
}

// Latest implements Source.
func (s *WorktreeSource) Latest(context.Context) (Revision, error) {
	if _, err := os.Stat(s.Path); err != nil {
		return Revision{}, err
	}
	return PinWorktree(s.Top, s.Dir, os.DirFS(s.Path), s.Load, s.Skip...), nil
}

// repository is the git repository of the working tree: Top, else Path.
func (s *WorktreeSource) repository() string {
	if s.Top != "" {
		return s.Top
	}
	return filepath.Clean(s.Path)
}
