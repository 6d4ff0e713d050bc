package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/fuelsync/fuelsync/loader"
)

// Publisher commits each applied set to a branch of the followed repository (the
// rendered-manifests pattern), only when the artifacts changed, with the source
// revision in the message; a remote repository gets the branch pushed.
type Publisher struct {
	Branch string
}

// Check refuses a publish branch that is the branch src follows: the artifacts
// would be committed over the sources, and the next reconcile would read a
// repository without a cluster and delete every node. A remote source whose
// branch is its remote's HEAD is asked for that HEAD; when the remote cannot be
// reached the check is left to publishing, which refuses the same branch.
// A publish branch that is not a branch name git accepts (main.lock, HEAD, a
// name with a space) is refused first: committing to it would wedge the
// repository (loader.CheckBranchName).
func (p *Publisher) Check(ctx context.Context, src Source) error {
	if err := loader.CheckBranchName(p.Branch); err != nil {
		return err
	}
	followed, err := followedBranch(ctx, src)
	if err != nil || followed == "" {
		return nil
	}
	return p.refuseFollowed(followed)
}

func (p *Publisher) refuseFollowed(followed string) error {
	if branchName(p.Branch) == branchName(followed) {
		return fmt.Errorf("the publish branch %s is the branch followed: its sources would be replaced by the artifacts, and the next reconcile would delete every node; publish to another branch (the default is rendered)", branchName(p.Branch))
	}
	return nil
}

// branchName is a branch's short name (main for refs/heads/main).
func branchName(b string) string { return strings.TrimPrefix(b, "refs/heads/") }

// followedBranch is the branch a source reads: its Branch, or the branch HEAD
// names; "" for a detached HEAD.
func followedBranch(ctx context.Context, src Source) (string, error) {
	head := func(path string) (string, error) {
		r, err := git.PlainOpen(path)
		if err != nil {
			return "", err
		}
		ref, err := r.Reference(plumbing.HEAD, false)
		if err != nil {
			return "", err
		}
		if ref.Type() != plumbing.SymbolicReference {
			return "", nil
		}
		return ref.Target().Short(), nil
	}
	switch s := src.(type) {
	case *LocalSource:
		if s.Branch != "" && s.Branch != "HEAD" {
			return s.Branch, nil
		}
		return head(s.Path)
	case *WorktreeSource:
		return head(s.repository()) // a commit onto the checked-out branch
	case *RemoteSource:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.branch(ctx)
	}
	return "", nil
}

// publishTarget is a source that can take the rendered branch.
type publishTarget interface {
	// target opens the repository to commit into, and the function that pushes
	// the branch afterwards (nil for a local repository).
	target() (*git.Repository, func(ctx context.Context, ref plumbing.ReferenceName) error, error)
}

func (s *LocalSource) target() (*git.Repository, func(context.Context, plumbing.ReferenceName) error, error) {
	r, err := git.PlainOpen(s.Path)
	return r, nil, err
}

func (s *WorktreeSource) target() (*git.Repository, func(context.Context, plumbing.ReferenceName) error, error) {
	r, err := git.PlainOpen(s.repository())
	return r, nil, err
}

func (s *RemoteSource) target() (*git.Repository, func(context.Context, plumbing.ReferenceName) error, error) {
	r, err := git.PlainOpen(s.CacheDir)
	if err != nil {
		return nil, nil, err
	}
	push := func(ctx context.Context, ref plumbing.ReferenceName) error {
		err := r.PushContext(ctx, &git.PushOptions{
			RemoteName: git.DefaultRemoteName, Auth: s.Auth,
			RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		return err
	}
	return r, push, nil
}

// Commit commits the set (an applied set, state.Workdir.SetFS) to the branch
// (and pushes it, for a remote source); it returns the new commit, or "" when
// the branch already holds these artifacts.
func (p *Publisher) Commit(ctx context.Context, src Source, set fs.FS, revision string, serial int64) (string, error) {
	if err := loader.CheckBranchName(p.Branch); err != nil {
		return "", err
	}
	t, ok := src.(publishTarget)
	if !ok {
		return "", errors.New("this source cannot take a published branch")
	}
	if followed, err := followedBranch(ctx, src); err == nil && followed != "" {
		if err := p.refuseFollowed(followed); err != nil {
			return "", err
		}
	}
	repo, push, err := t.target()
	if err != nil {
		return "", err
	}
	tree, err := writeTree(repo.Storer, set, ".")
	if err != nil {
		return "", err
	}
	ref := plumbing.NewBranchReferenceName(branchName(p.Branch))
	var parents []plumbing.Hash
	if cur, err := repo.Reference(ref, true); err == nil {
		parent, err := repo.CommitObject(cur.Hash())
		if err != nil {
			return "", err
		}
		if parent.TreeHash == tree {
			return "", nil // the same artifacts
		}
		parents = []plumbing.Hash{cur.Hash()}
	}
	sig := object.Signature{Name: "fuelsync", Email: "fuelsync@localhost", When: time.Now()}
	c := &object.Commit{
		Author: sig, Committer: sig, TreeHash: tree, ParentHashes: parents,
		Message: fmt.Sprintf("fuelsync: artifacts of %s (serial %d)\n\nRendered from %s%s.\n", Short(revision), serial, revision, folderOf(src)),
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", err
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", err
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
		return "", err
	}
	if push != nil {
		if err := push(ctx, ref); err != nil {
			return h.String(), fmt.Errorf("pushing %s: %w", p.Branch, err)
		}
	}
	return h.String(), nil
}

// folderOf is ", folder DIR" for a source that reads a folder of its
// commits' trees, else "".
func folderOf(src Source) string {
	var dir string
	switch s := src.(type) {
	case *LocalSource:
		dir = s.Dir
	case *RemoteSource:
		dir = s.Dir
	case *WorktreeSource:
		dir = s.Dir
	}
	if dir == "" {
		return ""
	}
	return ", folder " + dir
}

// Short is a revision as messages name it: a commit's first 12 hex digits
// (working-tree as it is; a dirty working tree's with its +dirty.<digest>).
func Short(rev string) string {
	sha, dirty, _ := strings.Cut(rev, "+")
	if len(sha) > 12 {
		sha = sha[:12]
	}
	if dirty != "" {
		return sha + "+" + dirty
	}
	return sha
}

// writeTree stores the files under dir of set (but the set's own files at its
// top, .state.json and .seal: render makes no name that begins with a dot) as
// git blobs and trees, and returns the root tree. A node directory shared as a
// tree is a directory there, its files regular files; set refuses any other
// symlink.
func writeTree(s storer.EncodedObjectStorer, set fs.FS, dir string) (plumbing.Hash, error) {
	entries, err := fs.ReadDir(set, dir)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var te []object.TreeEntry
	for _, e := range entries {
		if dir == "." && strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := path.Join(dir, e.Name())
		if e.IsDir() {
			h, err := writeTree(s, set, p)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			te = append(te, object.TreeEntry{Name: e.Name(), Mode: filemode.Dir, Hash: h})
			continue
		}
		data, err := fs.ReadFile(set, p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		obj := s.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write(data); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := s.SetEncodedObject(obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		te = append(te, object.TreeEntry{Name: e.Name(), Mode: filemode.Regular, Hash: h})
	}
	// git orders tree entries by name, a directory's name as if it ended in '/'.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(te, func(i, j int) bool { return key(te[i]) < key(te[j]) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: te}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}
