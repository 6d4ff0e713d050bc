package source_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestPublishBranch: every applied set becomes a commit of the branch rendered (the
// artifacts, the state left out), only when the artifacts changed, its message
// naming the source revision; a remote repository gets the branch pushed.
func TestPublishBranch(t *testing.T) {
	source.InstallFileTransport()
	dir, work, remote := gittest.QuickstartRemote(t)
	for _, tc := range []struct {
		name string
		src  func(wd string) source.Source
		repo func() *git.Repository
	}{
		{"local", func(string) source.Source { return &source.LocalSource{Path: dir} }, func() *git.Repository { return work }},
		{"remote", func(wd string) source.Source {
			return &source.RemoteSource{URL: "file://" + remote, Branch: "main", CacheDir: filepath.Join(wd, "cache")}
		}, func() *git.Repository { r, _ := git.PlainOpen(remote); return r }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := filepath.Join(t.TempDir(), "wd")
			loop := &controller.Loop{Workdir: state.Open(wd), Source: tc.src(wd), ToolVersion: "test", Publish: &source.Publisher{Branch: "rendered-" + tc.name}}
			if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || len(loop.Status().Errors) > 0 {
				t.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
			}
			ref, err := tc.repo().Reference(plumbing.NewBranchReferenceName("rendered-"+tc.name), true)
			if err != nil {
				t.Fatalf("no branch rendered-%s: %v", tc.name, err)
			}
			c, err := tc.repo().CommitObject(ref.Hash())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(c.Message, loop.Status().Applied) {
				t.Errorf("the message does not name the source revision %s: %q", loop.Status().Applied, c.Message)
			}
			tree, _ := c.Tree()
			for _, f := range []string{"manifest.json", "demo/cluster.yaml", "demo/nodes/node-1/default.yaml"} {
				if _, err := tree.File(f); err != nil {
					t.Errorf("the commit has no %s", f)
				}
			}
			// A node directory, a symlink to its tree in the set, is a
			// directory of regular files in the commit.
			st0 := loop.Status()
			if fi, err := os.Lstat(filepath.Join(loop.Workdir.SetDir(st0.Serial), "demo", "nodes", "node-1")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the set's node directory is not a symlink to its tree: %v", err)
			}
			if e, err := tree.FindEntry("demo/nodes/node-1"); err != nil || e.Mode != filemode.Dir {
				t.Errorf("demo/nodes/node-1 in the commit: %v %v, want a directory", e, err)
			}
			if e, err := tree.FindEntry("demo/nodes/node-1/default.yaml"); err != nil || e.Mode != filemode.Regular {
				t.Errorf("demo/nodes/node-1/default.yaml in the commit: %v %v, want a regular file", e, err)
			}
			if _, err := tree.File(".state.json"); err == nil {
				t.Error("the commit holds the state")
			}
			if _, err := tree.File(".seal"); err == nil {
				t.Error("the commit holds the set's seal")
			}
			// The same artifacts again: no new commit.
			st := loop.Status()
			if h, err := loop.Publish.Commit(context.Background(), loop.Source, loop.Workdir.SetFS(st.Serial), st.Applied, st.Serial); err != nil || h != "" {
				t.Errorf("publishing the same set again: %q, %v", h, err)
			}
			// git itself reads the objects (tree order, encoding) when it is installed.
			if gitBin, ok := testenv.Have(t, "git", "apt-get install git"); ok && tc.name == "local" {
				if out, err := exec.Command(gitBin, "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
					t.Errorf("git fsck: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestPublishBranchNamesRefused: a publish branch git would not take as a
// branch name is refused before anything is written. main.lock used to be
// committed as .git/refs/heads/main.lock, git's lock file of main, after which
// every update of main failed ("File exists"); ' main' wrote a ref git calls
// broken, HEAD made every git command warn that HEAD is ambiguous.
func TestPublishBranchNamesRefused(t *testing.T) {
	dir, _ := gittest.Quickstart(t)
	src := &source.LocalSource{Path: dir}
	for _, name := range []string{"master.lock", " main", "HEAD", "a..b", "x/", "@{", "a\x01b", "refs/heads/HEAD"} {
		p := &source.Publisher{Branch: name}
		if err := p.Check(context.Background(), src); err == nil || !strings.Contains(err.Error(), "is not a branch name") {
			t.Errorf("Check(%q) = %v, want it refused", name, err)
		}
		loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: src, ToolVersion: "test", Publish: p}
		loop.ReconcileOnce(context.Background())
		if errs := loop.Status().Errors; len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "is not a branch name") {
			t.Errorf("publishing to %q: errors %q, want the name refused", name, errs)
		}
	}
	refs, err := os.ReadDir(filepath.Join(dir, ".git", "refs", "heads"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.Name())
	}
	if strings.Join(names, " ") != "master" {
		t.Errorf(".git/refs/heads holds %q, want only master", names)
	}
	if gitBin, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(gitBin, "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
			t.Errorf("git fsck: %v\n%s", err, out)
		}
	}
}

// TestRemoteHeadBranchChecked: the branch a remote's HEAD names is checked as
// a branch name from the repository is.
func TestRemoteHeadBranchChecked(t *testing.T) {
	source.InstallFileTransport()
	_, work := gittest.Quickstart(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	r, err := git.PlainInit(remote, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := work.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"file://" + remote}}); err != nil {
		t.Fatal(err)
	}
	if err := work.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{"refs/heads/master:refs/heads/x.lock"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/x.lock")); err != nil {
		t.Fatal(err)
	}
	src := &source.RemoteSource{URL: "file://" + remote, CacheDir: filepath.Join(t.TempDir(), "cache")}
	if _, err := src.Latest(context.Background()); err == nil || !strings.Contains(err.Error(), `"x.lock" is not a branch name`) {
		t.Errorf("following a remote whose HEAD is x.lock: %v", err)
	}
	src = &source.RemoteSource{URL: "file://" + remote, Branch: "HEAD.lock", CacheDir: filepath.Join(t.TempDir(), "cache")}
	if _, err := src.Latest(context.Background()); err == nil || !strings.Contains(err.Error(), "is not a branch name") {
		t.Errorf("following --branch HEAD.lock: %v", err)
	}
}

// TestPublishOntoFollowedBranchRefused: a publish branch equal to the branch
// followed is refused, named either way (master, refs/heads/master), for a local
// repository following HEAD or a named branch, its working tree, and a remote
// (asked for its HEAD when no branch is named); another branch is accepted. A
// loop that was not checked refuses it when publishing: the branch keeps the
// sources.
func TestPublishOntoFollowedBranchRefused(t *testing.T) {
	source.InstallFileTransport()
	dir, work := gittest.Quickstart(t) // its branch is master
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	if _, err := work.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"file://" + remote}}); err != nil {
		t.Fatal(err)
	}
	gittest.Push(t, work, false) // as main
	bare, _ := git.PlainOpen(remote)
	if err := bare.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		src     source.Source
		branch  string
		refused bool
	}{
		{"local HEAD", &source.LocalSource{Path: dir}, "master", true},
		{"local HEAD, full ref", &source.LocalSource{Path: dir}, "refs/heads/master", true},
		{"local named branch", &source.LocalSource{Path: dir, Branch: "master"}, "master", true},
		{"local, another branch", &source.LocalSource{Path: dir}, "rendered", false},
		{"working tree", &source.WorktreeSource{Path: dir}, "master", true},
		{"remote named branch", &source.RemoteSource{URL: "file://" + remote, Branch: "main", CacheDir: t.TempDir()}, "main", true},
		{"remote HEAD", &source.RemoteSource{URL: "file://" + remote, CacheDir: t.TempDir()}, "main", true},
		{"remote, another branch", &source.RemoteSource{URL: "file://" + remote, CacheDir: t.TempDir()}, "rendered", false},
	} {
		err := (&source.Publisher{Branch: tc.branch}).Check(ctx, tc.src)
		if tc.refused && (err == nil || !strings.Contains(err.Error(), "is the branch followed")) {
			t.Errorf("%s, publishing to %s: %v, want refused", tc.name, tc.branch, err)
		}
		if !tc.refused && err != nil {
			t.Errorf("%s, publishing to %s: %v", tc.name, tc.branch, err)
		}
	}

	// Unchecked: the loop applies, then refuses to publish; master keeps its commit.
	head, _ := work.Head()
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Publish: &source.Publisher{Branch: "master"}}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("reconcile: %s", o)
	}
	if errs := loop.Status().Errors; len(errs) != 1 || !strings.Contains(errs[0], "is the branch followed") {
		t.Errorf("status errors: %q", errs)
	}
	if after, _ := work.Head(); after.Hash() != head.Hash() {
		t.Errorf("master moved from %s to %s", head.Hash(), after.Hash())
	}
}
