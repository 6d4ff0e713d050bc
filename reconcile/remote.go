package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/fuelsync/fuelsync/loader"
)

// fileTransport makes go-git serve file:// URLs in-process (its default runs the
// git-upload-pack binary), so that fuelsync needs no git installation.
var fileTransport sync.Once

// RemoteSource follows a branch of a remote repository through a bare clone in
// CacheDir: cloned on first use, then fetched on every Latest. The branch is
// fetched with a forced refspec, so a force-push is followed.
type RemoteSource struct {
	URL, Branch, CacheDir string
	Auth                  transport.AuthMethod

	mu sync.Mutex
}

// Latest implements Source.
func (s *RemoteSource) Latest(ctx context.Context) (Revision, error) {
	fileTransport.Do(func() { client.InstallProtocol("file", server.DefaultServer) })
	s.mu.Lock()
	defer s.mu.Unlock()
	branch := s.Branch
	if branch == "" {
		branch = "main"
	}
	ref := plumbing.NewBranchReferenceName(branch)
	repo, err := git.PlainOpen(s.CacheDir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
			return Revision{}, err
		}
		repo, err = git.PlainCloneContext(ctx, s.CacheDir, true, &git.CloneOptions{
			URL: s.URL, ReferenceName: ref, SingleBranch: true, Auth: s.Auth, Tags: git.NoTags,
		})
		if err != nil {
			os.RemoveAll(s.CacheDir) // a half-made clone would poison the next try
			return Revision{}, fmt.Errorf("cloning %s: %w", s.URL, err)
		}
	} else if err != nil {
		return Revision{}, err
	} else {
		err = repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)},
			Auth:       s.Auth, Force: true, Tags: git.NoTags,
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return Revision{}, fmt.Errorf("fetching %s: %w", s.URL, err)
		}
	}
	head, err := repo.Reference(ref, true)
	if err != nil {
		return Revision{}, fmt.Errorf("branch %s of %s: %w", branch, s.URL, err)
	}
	fsys, err := loader.RevisionFS(repo, head.Hash())
	if err != nil {
		return Revision{}, err
	}
	return Revision{SHA: head.Hash().String(), FS: fsys}, nil
}
