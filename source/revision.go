package source

import (
	"context"
	"io/fs"

	"github.com/fuelsync/fuelsync/loader"
)

// Revision is one commit of the followed branch.
type Revision struct {
	SHA string
	FS  fs.FS
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

// LocalSource follows a branch of a repository on this machine.
type LocalSource struct {
	Path, Branch string
}

// Latest implements Source.
func (s *LocalSource) Latest(context.Context) (Revision, error) {
	ref := s.Branch
	if ref == "" {
		ref = "HEAD"
	}
	fsys, sha, err := loader.OpenRevision(s.Path, ref)
	if err != nil {
		return Revision{}, err
	}
	return Revision{SHA: sha, FS: fsys}, nil
}

// At implements RevisionSource.
func (s *LocalSource) At(_ context.Context, sha string) (Revision, error) {
	fsys, got, err := loader.OpenRevision(s.Path, sha)
	if err != nil {
		return Revision{}, err
	}
	return Revision{SHA: got, FS: fsys}, nil
}
