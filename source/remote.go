package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/loader"
)

// fileTransport makes go-git serve file:// URLs in-process (its default runs the
// git-upload-pack binary), so that fuelsync needs no git installation.
var fileTransport sync.Once

// InstallFileTransport serves file:// URLs in-process, bare repositories and
// repositories with a working tree alike.
func InstallFileTransport() {
	fileTransport.Do(func() { client.InstallProtocol("file", server.NewServer(fileLoader{})) })
}

// fileLoader opens the repository of a file:// URL: a bare one, or the .git
// directory of one with a working tree (go-git's default loader reads a working
// tree's root as if it were the .git directory, and finds no branch).
type fileLoader struct{}

func (fileLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	dotgit := filepath.Join(ep.Path, ".git")
	if fi, err := os.Stat(dotgit); err == nil && fi.IsDir() {
		return filesystem.NewStorage(osfs.New(dotgit), cache.NewObjectLRUDefault()), nil
	}
	return server.DefaultLoader.Load(ep)
}

// RemoteSource follows a branch of a remote repository through a bare clone in
// CacheDir: cloned on first use, then fetched on every Latest. The branch is
// fetched with a forced refspec, so a force-push is followed.
type RemoteSource struct {
	URL, Branch, CacheDir string
	// Dir is the folder of the commits' trees that is read (LocalSource.Dir).
	Dir  string
	Auth transport.AuthMethod

	mu       sync.Mutex
	resolved string // the branch followed, once known
}

// branch is the branch followed: Branch, else the remote's HEAD (asked once).
// Called with mu held.
func (s *RemoteSource) branch(ctx context.Context) (string, error) {
	if s.Branch != "" && s.Branch != "HEAD" {
		if err := loader.CheckBranchName(s.Branch); err != nil {
			return "", err
		}
		return branchName(s.Branch), nil
	}
	if s.resolved != "" {
		return s.resolved, nil
	}
	InstallFileTransport()
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{s.URL}})
	refs, err := r.ListContext(ctx, &git.ListOptions{Auth: s.Auth})
	if err != nil {
		return "", fmt.Errorf("listing the branches of %s: %w", redact.URL(s.URL), err)
	}
	var head *plumbing.Reference
	for _, ref := range refs {
		if ref.Name() == plumbing.HEAD {
			head = ref
		}
	}
	if head == nil {
		return "", fmt.Errorf("%s has no HEAD: name the branch to follow with --branch", redact.URL(s.URL))
	}
	// The remote names the branch: it is checked as a name from the
	// repository is.
	if head.Type() == plumbing.SymbolicReference && head.Target().IsBranch() {
		if err := loader.CheckBranchName(head.Target().Short()); err != nil {
			return "", fmt.Errorf("the HEAD of %s names a branch fuelsync does not follow: %w; name the branch with --branch", redact.URL(s.URL), err)
		}
		s.resolved = head.Target().Short()
		return s.resolved, nil
	}
	// No symref advertised: the one branch at HEAD's commit.
	var at []string
	for _, ref := range refs {
		if ref.Name().IsBranch() && ref.Hash() == head.Hash() {
			at = append(at, ref.Name().Short())
		}
	}
	if len(at) != 1 {
		return "", fmt.Errorf("the branch HEAD names in %s is unknown: name the branch to follow with --branch", redact.URL(s.URL))
	}
	if err := loader.CheckBranchName(at[0]); err != nil {
		return "", fmt.Errorf("the HEAD of %s is a branch fuelsync does not follow: %w; name the branch with --branch", redact.URL(s.URL), err)
	}
	s.resolved = at[0]
	return s.resolved, nil
}

// Latest implements Source.
func (s *RemoteSource) Latest(ctx context.Context) (Revision, error) {
	InstallFileTransport()
	s.mu.Lock()
	defer s.mu.Unlock()
	branch, err := s.branch(ctx)
	if err != nil {
		return Revision{}, errors.New(redact.Text(err.Error()))
	}
	ref := plumbing.NewBranchReferenceName(branch)
	repo, err := git.PlainOpen(s.CacheDir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		// Only a directory made here (or found empty) is removed again.
		entries, statErr := os.ReadDir(s.CacheDir)
		made := errors.Is(statErr, fs.ErrNotExist) || statErr == nil && len(entries) == 0
		if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
			return Revision{}, err
		}
		repo, err = git.PlainCloneContext(ctx, s.CacheDir, true, &git.CloneOptions{
			URL: s.URL, ReferenceName: ref, SingleBranch: true, Auth: s.Auth, Tags: git.NoTags,
		})
		if err != nil {
			if made {
				os.RemoveAll(s.CacheDir) // a half-made clone would poison the next try
			}
			return Revision{}, fmt.Errorf("cloning %s: %s", redact.URL(s.URL), redact.Text(err.Error()))
		}
	} else if err != nil {
		return Revision{}, fmt.Errorf("the cache of %s: %w", redact.URL(s.URL), err)
	} else {
		err = repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)},
			Auth:       s.Auth, Force: true, Tags: git.NoTags,
		})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return Revision{}, fmt.Errorf("fetching %s: %s", redact.URL(s.URL), redact.Text(err.Error()))
		}
	}
	head, err := repo.Reference(ref, true)
	if err != nil {
		return Revision{}, fmt.Errorf("branch %s of %s: %w", branch, redact.URL(s.URL), err)
	}
	fsys, tree, err := loader.RevisionDirFS(repo, head.Hash(), s.Dir)
	if err != nil {
		return Revision{}, err
	}
	return Revision{SHA: head.Hash().String(), FS: fsys, Tree: tree.String()}, nil
}

// At implements RevisionSource: from the cache, fetched first when the
// commit is not in it yet.
func (s *RemoteSource) At(ctx context.Context, sha string) (Revision, error) {
	rev, err := openAt(s.CacheDir, sha, s.Dir)
	if err != nil {
		if _, lerr := s.Latest(ctx); lerr != nil {
			return Revision{}, lerr
		}
		return openAt(s.CacheDir, sha, s.Dir)
	}
	return rev, nil
}
