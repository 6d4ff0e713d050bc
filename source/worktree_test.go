package source_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/source"
)

// TestPinWorktree: a working tree is its commit when its inputs are the
// commit's (read from git then), <commit>+dirty.<digest> when they are not
// (the digest follows the inputs), and working-tree without a git
// repository, without a commit, or a folder that is not committed.
func TestPinWorktree(t *testing.T) {
	dir, r := gittest.Quickstart(t)
	head, _ := r.Head()
	sha := head.Hash().String()
	pin := func(top, folder, path string, skip ...string) source.Revision {
		return source.PinWorktree(top, folder, os.DirFS(path), loader.Options{}, skip...)
	}
	rev := pin(dir, "", dir)
	if rev.SHA != sha || rev.Tree == "" {
		t.Fatalf("a clean tree: %q (tree %q), want %s and its tree", rev.SHA, rev.Tree, sha)
	}
	if _, ok := rev.FS.(loader.BlobHasher); !ok {
		t.Errorf("a clean tree is not read from git: %T", rev.FS)
	}
	// A work directory inside the tree, skipped: still clean.
	if err := os.MkdirAll(filepath.Join(dir, ".fuelsync", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if rev := pin(dir, "", dir, ".fuelsync"); rev.SHA != sha {
		t.Errorf("a work directory skipped: %q, want %s", rev.SHA, sha)
	}
	dirty := regexp.MustCompile(`^` + sha + `\+dirty\.[0-9a-f]{12}$`)
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	d1 := pin(dir, "", dir, ".fuelsync")
	if !dirty.MatchString(d1.SHA) || d1.Tree != "" || !source.IsWorkingTree(d1.SHA) {
		t.Fatalf("a dirty tree: %q (tree %q), want %s+dirty.<digest>", d1.SHA, d1.Tree, sha)
	}
	if again := pin(dir, "", dir, ".fuelsync"); again.SHA != d1.SHA {
		t.Errorf("the same dirty tree: %q then %q", d1.SHA, again.SHA)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-5: {id: 5, roles: [compute, storage]}", "node-5: {id: 5, roles: [compute]}")
	if d2 := pin(dir, "", dir, ".fuelsync"); !dirty.MatchString(d2.SHA) || d2.SHA == d1.SHA {
		t.Errorf("another dirty tree: %q, want another digest than %q", d2.SHA, d1.SHA)
	}
	// A folder of the tree, clean, then one that is not committed.
	gittest.Commit(t, r, "node-4 storage, node-5 compute")
	head, _ = r.Head()
	if rev := pin(dir, "clusters", filepath.Join(dir, "clusters")); rev.SHA != head.Hash().String() {
		t.Errorf("a clean folder: %q, want %s", rev.SHA, head.Hash())
	}
	if err := os.MkdirAll(filepath.Join(dir, "new", "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if rev := pin(dir, "new", filepath.Join(dir, "new")); rev.SHA != source.WorkingTree {
		t.Errorf("a folder not committed: %q, want working-tree", rev.SHA)
	}
	// No git repository; a repository without a commit.
	if rev := pin("", "", dir); rev.SHA != source.WorkingTree {
		t.Errorf("no git repository: %q, want working-tree", rev.SHA)
	}
	empty := t.TempDir()
	if _, err := git.PlainInit(empty, false); err != nil {
		t.Fatal(err)
	}
	if rev := pin(empty, "", empty); rev.SHA != source.WorkingTree {
		t.Errorf("no commit yet: %q, want working-tree", rev.SHA)
	}
}

// TestRevisionNames: which revisions are working trees, and how messages
// shorten each.
func TestRevisionNames(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		rev, short string
		worktree   bool
	}{
		{sha, "0123456789ab", false},
		{sha + "+dirty.fedcba987654", "0123456789ab+dirty.fedcba987654", true},
		{"working-tree", "working-tree", true},
		{"0123abc", "0123abc", false},
		{"", "", false},
	} {
		if got := source.Short(tc.rev); got != tc.short {
			t.Errorf("Short(%q) = %q, want %q", tc.rev, got, tc.short)
		}
		if got := source.IsWorkingTree(tc.rev); got != tc.worktree {
			t.Errorf("IsWorkingTree(%q) = %v, want %v", tc.rev, got, tc.worktree)
		}
	}
}

// TestFolderSources: a local and a remote source read the folder Dir of
// their commits (the same Tree while nothing in it changes), and what they
// publish names the folder.
func TestFolderSources(t *testing.T) {
	source.InstallFileTransport()
	dir, work, remote := gittest.QuickstartRemote(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		src  source.Source
		push bool
	}{
		{"local", &source.LocalSource{Path: dir, Dir: "clusters"}, false},
		{"remote", &source.RemoteSource{URL: "file://" + remote, Branch: "main", CacheDir: filepath.Join(t.TempDir(), "cache"), Dir: "clusters"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r1, err := tc.src.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(r1.FS, "demo.yaml"); err != nil {
				t.Errorf("the folder's files: %v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "README-"+tc.name), []byte("outside\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gittest.Commit(t, work, "outside the folder")
			if tc.push {
				gittest.Push(t, work, false)
			}
			r2, err := tc.src.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r2.SHA == r1.SHA || r2.Tree != r1.Tree || r1.Tree == "" {
				t.Errorf("a commit outside the folder: %s tree %s, then %s tree %s; want another commit, the same tree", r1.SHA, r1.Tree, r2.SHA, r2.Tree)
			}
			at, err := tc.src.(source.RevisionSource).At(ctx, r1.SHA)
			if err != nil || at.Tree != r1.Tree {
				t.Errorf("At(%s): tree %q, %v; want %s", r1.SHA, at.Tree, err, r1.Tree)
			}
			p := &source.Publisher{Branch: "rendered"}
			set := fstest.MapFS{"manifest.json": {Data: []byte("{}\n")}}
			h, err := p.Commit(ctx, tc.src, set, r2.SHA, 1)
			if err != nil {
				t.Fatal(err)
			}
			target := work
			if tc.push {
				target, _ = git.PlainOpen(remote)
			}
			c, err := target.CommitObject(plumbing.NewHash(h))
			if err != nil {
				t.Fatal(err)
			}
			if want := "Rendered from " + r2.SHA + ", folder clusters."; !strings.Contains(c.Message, want) {
				t.Errorf("the published commit's message %q does not say %q", c.Message, want)
			}
		})
	}
}
