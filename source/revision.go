package source

import (
	"context"
	"io/fs"

	"github.com/fuelsync/fuelsync/loader"
)

// Revision is one commit of the followed branch: its files (those of the
// folder followed, LocalSource.Dir), and the hash of their tree.
type Revision struct {
	SHA string
	FS  fs.FS
	// Tree is the hash of the git tree FS reads (the folder's): two commits
	// with the same Tree hold the same files. "" for a working tree that is
	// not a commit's.
	Tree string
}

// Source yields the newest commit of the branch a loop follows.
type Source interface {
	Latest(ctx context.Context) (Revision, error)
}

// RevisionSource is a Source that can also read a given commit (a replica
// renders the applied revision, which may be older than the newest).
type RevisionSource interface {
	At(ctx context.Context, sha string) (Revision, error)
}

// LocalSource follows a branch of a repository on this machine: Path is the
// top of its work tree, or a bare repository.
type LocalSource struct {
	Path, Branch string
	// Dir is the folder of the commits' trees that is read (a slash path
	// from the top, as loader.OpenRevisionDir takes it; "" for the whole
	// tree).
	Dir string
}

// Latest implements Source.
func (s *LocalSource) Latest(context.Context) (Revision, error) {
	ref := s.Branch
	if ref == "" {
		ref = "HEAD"
	}
	return openAt(s.Path, ref, s.Dir)
}

// At implements RevisionSource.
func (s *LocalSource) At(_ context.Context, sha string) (Revision, error) {
	return openAt(s.Path, sha, s.Dir)
}

// openAt is the revision rev of the git repository repo, its folder dir.
func openAt(repo, rev, dir string) (Revision, error) {
	fsys, sha, tree, err := loader.OpenRevisionDir(repo, rev, dir)
	if err != nil {
		return Revision{}, err
	}
	return Revision{SHA: sha, FS: fsys, Tree: tree}, nil
}
