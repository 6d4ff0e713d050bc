// Package gittest makes the git repositories that the tests of the reconciler
// follow: examples/quickstart committed into a new repository, commits of its
// edits, and a wait for what a loop does with them. Real git repositories
// (go-git, on disk), never mocks; for tests only.
package gittest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fuelsync/fuelsync/internal/mapfs"
)

// Sig signs every commit the tests make, at a fixed time.
var Sig = object.Signature{Name: "test", Email: "test@fuelsync.invalid", When: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}

// Quickstart is a git repository holding examples/quickstart (of the module
// the test runs in), in a new temporary directory.
func Quickstart(t testing.TB) (string, *git.Repository) {
	t.Helper()
	return Example(t, "quickstart")
}

// Example is a git repository holding examples/<name> (of the module the
// test runs in) in one commit, in a new temporary directory.
func Example(t testing.TB, name string) (string, *git.Repository) {
	t.Helper()
	dir := t.TempDir()
	files, err := mapfs.Read(filepath.Join(moduleRoot(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	Commit(t, r, name)
	return dir, r
}

// QuickstartRemote is Quickstart with a remote, origin: a bare repository
// on disk (its path returned last) that the commit was pushed to as main.
func QuickstartRemote(t *testing.T) (string, *git.Repository, string) {
	t.Helper()
	dir, work := Quickstart(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	if _, err := work.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"file://" + remote}}); err != nil {
		t.Fatal(err)
	}
	Push(t, work, false)
	return dir, work, remote
}

// moduleRoot is the directory of the go.mod above the test's working
// directory (its package's directory).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Commit commits every change of r's working tree (an empty commit when
// there is none) and returns the commit's hash.
func Commit(t testing.TB, r *git.Repository, msg string) string {
	t.Helper()
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	s := Sig
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &s, Committer: &s, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// EditFile replaces the first old in the file path with new; the test fails
// when the file has no old.
func EditFile(t testing.TB, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s has no %q (%v)", path, old, err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Push pushes the working repository's master branch to origin as main.
func Push(t *testing.T, r *git.Repository, force bool) {
	t.Helper()
	spec := "refs/heads/master:refs/heads/main"
	if force {
		spec = "+" + spec
	}
	err := r.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(spec)}, Force: force})
	if err != nil && err != git.NoErrAlreadyUpToDate {
		t.Fatal(err)
	}
}

// WaitFor waits up to 5 s for cond, checking it every 20 ms; the test fails
// with what when it does not come.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
