package cli

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fuelsync/fuelsync/agent"
	"github.com/fuelsync/fuelsync/etcdstate"
	"github.com/fuelsync/fuelsync/server/prommetrics"
)

// The tests run the whole CLI, as fuelsync-server links it: the etcd backend
// and serve's metrics registered (so serve and the state on etcd run here,
// without a dispatch to another binary).
var (
	_ = etcdstate.Open
	_ = prommetrics.New
)

// TestMain lets testscript run the CLI in-process as the command "fuelsync"; with
// FUELSYNC_RUN_MAIN=1 the test binary is the CLI itself (for the tests that kill
// or race real processes).
func TestMain(m *testing.M) {
	switch os.Getenv("FUELSYNC_RUN_MAIN") {
	case "1":
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	case "server": // as fuelsync-server
		program = ServerBinary
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	case "agent": // as fuelsync-agent
		os.Exit(agent.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"fuelsync": func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scripts in testdata/script. Update their expected output
// with FUELSYNC_UPDATE=1 go test ./internal/cli -run TestScripts, then read the diff.
func TestScripts(t *testing.T) {
	t.Parallel() // beside the other parallel tests: each script is a subtest of its own, run in parallel
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("FUELSYNC_UPDATE") != "",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "1")
			env.Setenv("EXAMPLES", examples)
			env.Setenv("TESTDATA", testdata)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"git-commit":     cmdGitCommit,
			"git-clone-bare": cmdGitCloneBare,
			"git-tag":        cmdGitTag,
			"tree":           cmdTree,
			"cp-r":           cmdCopyTree,
			"exit-code":      cmdExitCode,
			"git-head":       cmdGitHead,
			"replace":        cmdReplace,
			"free-port":      cmdFreePort,
			"head-sha":       cmdHeadSHA,
			"http-wait":      cmdHTTPWait,
			"http-post":      cmdHTTPPost,
			"http-serve":     cmdHTTPServe,
			"http-receive":   cmdHTTPReceive,
			"file-wait":      cmdFileWait,
		},
	})
}

// testSignature is the author and committer of every test commit: a fixed name and
// time make commit hashes, and so fuelsync's output, the same on every run.
var testSignature = object.Signature{
	Name:  "fuelsync test",
	Email: "test@fuelsync.invalid",
	When:  time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
}

// testBranch is the branch gitCommit creates in a new repository.
const testBranch = "main"

// gitCommit records every file of the working tree dir (additions, changes and
// removals) as a new commit on the current branch, creating the repository (on
// branch main) if dir is not one yet. It returns the commit hash.
func gitCommit(dir, msg string) (plumbing.Hash, error) {
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(testBranch)},
		})
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("adding files: %w", err)
	}
	sig := testSignature
	return wt.Commit(msg, &git.CommitOptions{Author: &sig, Committer: &sig, AllowEmptyCommits: true})
}

// bareCopy makes dst a bare repository with the objects, branches, tags and HEAD of
// the repository at src, as `git clone --bare` does. go-git's PlainClone of a local
// path runs the git-upload-pack binary; this writes the pack in-process instead, so
// the tests need no git installation.
func bareCopy(src, dst string) error {
	from, err := git.PlainOpen(src)
	if err != nil {
		return err
	}
	to, err := git.PlainInit(dst, true)
	if err != nil {
		return err
	}
	var hashes []plumbing.Hash
	iter, err := from.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		return err
	}
	if err := iter.ForEach(func(o plumbing.EncodedObject) error {
		hashes = append(hashes, o.Hash())
		return nil
	}); err != nil {
		return err
	}
	pw, ok := to.Storer.(storer.PackfileWriter)
	if !ok {
		return errors.New("the bare repository's storage cannot write packs")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := packfile.NewEncoder(w, from.Storer, false).Encode(hashes, 10); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	refs, err := from.References()
	if err != nil {
		return err
	}
	if err := refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name().IsBranch() || r.Name().IsTag() {
			return to.Storer.SetReference(r)
		}
		return nil
	}); err != nil {
		return err
	}
	head, err := from.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return err
	}
	return to.Storer.SetReference(head)
}

// cmdGitCommit: git-commit [-m msg] DIR
func cmdGitCommit(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! git-commit")
	}
	fl := flag.NewFlagSet("git-commit", flag.ContinueOnError)
	msg := fl.String("m", "test commit", "commit message")
	if err := fl.Parse(args); err != nil || fl.NArg() != 1 {
		ts.Fatalf("usage: git-commit [-m msg] DIR")
	}
	h, err := gitCommit(ts.MkAbs(fl.Arg(0)), *msg)
	ts.Check(err)
	ts.Logf("committed %s", h)
}

// cmdReplace: replace FILE OLD NEW replaces the one occurrence of OLD in FILE
// with NEW (\n in either is a newline); it fails when OLD is not there once.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	name := ts.MkAbs(args[0])
	data, err := os.ReadFile(name)
	ts.Check(err)
	old, repl := strings.ReplaceAll(args[1], `\n`, "\n"), strings.ReplaceAll(args[2], `\n`, "\n")
	if n := strings.Count(string(data), old); n != 1 {
		ts.Fatalf("replace: %q occurs %d times in %s", old, n, args[0])
	}
	ts.Check(os.WriteFile(name, []byte(strings.Replace(string(data), old, repl, 1)), 0o644))
}

// cmdGitCloneBare: git-clone-bare SRC DST
func cmdGitCloneBare(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! git-clone-bare")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: git-clone-bare SRC DST")
	}
	ts.Check(bareCopy(ts.MkAbs(args[0]), ts.MkAbs(args[1])))
}

// cmdGitTag: git-tag NAME DIR (a lightweight tag of HEAD)
func cmdGitTag(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! git-tag")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: git-tag NAME DIR")
	}
	repo, err := git.PlainOpen(ts.MkAbs(args[1]))
	ts.Check(err)
	head, err := repo.Head()
	ts.Check(err)
	_, err = repo.CreateTag(args[0], head.Hash(), nil)
	ts.Check(err)
}

// cmdTree: tree DIR prints every file and directory under DIR, one slash-separated
// relative path per line in lexical order, directories with a trailing slash.
func cmdTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! tree")
	}
	if len(args) != 1 {
		ts.Fatalf("usage: tree DIR")
	}
	out := ts.Stdout() // set stdout even when there is nothing to list
	root := ts.MkAbs(args[0])
	ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		_, err = fmt.Fprintln(out, rel)
		return err
	}))
}

// cmdCopyTree: cp-r SRC DST copies the directory tree SRC to DST (files and
// directories only).
func cmdCopyTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cp-r SRC DST")
	}
	src, dst := ts.MkAbs(args[0]), ts.MkAbs(args[1])
	ts.Check(filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	}))
}

// cmdExitCode: exit-code N PROGRAM ARGS... runs the program like exec and checks
// that it exits with status N exactly (exec only tells zero from non-zero); its
// output is the script's stdout and stderr.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit-code N PROGRAM ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdGitHead: git-head DIR prints the number of commits, HEAD's message and author,
// and the files HEAD changes against its parent, one a line.
func cmdGitHead(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: git-head DIR")
	}
	repo, err := git.PlainOpen(ts.MkAbs(args[0]))
	ts.Check(err)
	head, err := repo.Head()
	ts.Check(err)
	c, err := repo.CommitObject(head.Hash())
	ts.Check(err)
	n := 0
	iter, err := repo.Log(&git.LogOptions{From: head.Hash()})
	ts.Check(err)
	ts.Check(iter.ForEach(func(*object.Commit) error { n++; return nil }))
	fmt.Fprintf(ts.Stdout(), "%d commits\nmessage: %s\nauthor: %s <%s>\n", n, c.Message, c.Author.Name, c.Author.Email)
	parent, err := c.Parent(0)
	ts.Check(err)
	patch, err := parent.Patch(c)
	ts.Check(err)
	for _, fp := range patch.FilePatches() {
		from, to := fp.Files()
		switch {
		case to != nil:
			fmt.Fprintln(ts.Stdout(), to.Path())
		case from != nil:
			fmt.Fprintln(ts.Stdout(), from.Path())
		}
	}
}
