package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// TestLoopSettingsFromFile checks that watch and serve take interval, publish, state,
// publish_branch and workdir from fuelsync.yaml, that their flags override the
// file, and that a bad value stops them before they start, at its line.
func TestLoopSettingsFromFile(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "clusters"), 0o755); err != nil { // a repository
		t.Fatal(err)
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, "fuelsync.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var state string // where the loop's state is kept
	// settings runs a command with the global and watch flags through the CLI's
	// own flag definitions, and returns what loopSettingsFor made of them.
	settings := func(args ...string) (loopSettings, string, error) {
		t.Helper()
		var ls loopSettings
		var workdir string
		state = ""
		app := newApp(io.Discard, io.Discard)
		app.Commands = []*cli.Command{{
			Name:  "probe",
			Flags: watchFlags(),
			Action: func(c *cli.Context) error {
				g, err := readGlobals(c, io.Discard, io.Discard)
				if err != nil {
					return err
				}
				ls, err = loopSettingsFor(c, g)
				workdir = g.workdir
				if ls.Workdir != nil {
					if ls.Workdir.Dir != g.workdir {
						t.Errorf("the loop's work directory is %s, not %s", ls.Workdir.Dir, g.workdir)
					}
					state = ls.Workdir.StateName()
					ls.Workdir.Close()
					ls.Workdir = nil
				}
				return err
			},
		}}
		err := app.Run(append([]string{"fuelsync", "--repo", repo}, args...))
		return ls, workdir, err
	}

	write("workdir: state\ninterval: 5m\npublish: git\npublish_branch: out\n")
	ls, wd, err := settings("probe")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(loopSettings{Interval: 5 * time.Minute, Publish: "git", PublishBranch: "out"}, ls); diff != "" || wd != filepath.Join(repo, "state") {
		t.Errorf("from the file: workdir %s, (-want +got):\n%s", wd, diff)
	}
	ls, wd, err = settings("--workdir", "w", "probe", "--interval", "10s", "--publish-branch", "x")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(loopSettings{Interval: 10 * time.Second, Publish: "git", PublishBranch: "x"}, ls); diff != "" || wd != "w" {
		t.Errorf("flags over the file: workdir %s, (-want +got):\n%s", wd, diff)
	}

	write("")
	ls, wd, err = settings("probe")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(loopSettings{Interval: time.Minute, PublishBranch: "rendered"}, ls); diff != "" || wd != ".fuelsync" {
		t.Errorf("no settings: workdir %s, (-want +got):\n%s", wd, diff)
	}

	// The state on etcd: from the file, or --state over it.
	write("state: etcd://127.0.0.1:2379/from-file\n")
	if _, _, err = settings("probe"); err != nil || state != "etcd://127.0.0.1:2379/from-file" {
		t.Errorf("state from the file: %q, %v", state, err)
	}
	if _, _, err = settings("--state", "etcd://127.0.0.1:2380/flag", "probe"); err != nil || state != "etcd://127.0.0.1:2380/flag" {
		t.Errorf("--state over the file: %q, %v", state, err)
	}
	write("state: consul://x\n")
	_, _, err = settings("probe")
	want := repo + "/fuelsync.yaml:1:8: fuelsync.yaml: state \"consul://x\" is not an etcd:// address"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bad state: %v, want %q", err, want)
	}
	write("state: etcd://127.0.0.1:2379\n")
	_, _, err = settings("probe")
	if err == nil || !strings.Contains(err.Error(), "has no key prefix") {
		t.Errorf("a state without a prefix: %v", err)
	}

	write("interval: 0s\n")
	_, _, err = settings("probe")
	want = repo + "/fuelsync.yaml:1:11: fuelsync.yaml: interval \"0s\" is not a positive duration"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a bad interval: %v, want %q", err, want)
	}
}

// TestBranchNamesChecked: watch and serve refuse, before they start, a --branch
// or a publish branch (--publish-branch, or publish_branch in fuelsync.yaml, at
// its line) that git would not take as a branch name, and HEAD.
func TestBranchNamesChecked(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, "clusters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := git.PlainInit(repo, false); err != nil { // watch follows a git repository's commits
		t.Fatal(err)
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, "fuelsync.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loop := func(args ...string) error {
		t.Helper()
		app := newApp(io.Discard, io.Discard)
		app.Commands = []*cli.Command{{
			Name:  "probe",
			Flags: watchFlags(),
			Action: func(c *cli.Context) error {
				g, err := readGlobals(c, io.Discard, io.Discard)
				if err != nil {
					return err
				}
				l, err := newLoop(g, c)
				if l != nil {
					l.Workdir.Close()
				}
				return err
			},
		}}
		return app.Run(append([]string{"fuelsync", "--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "probe"}, args...))
	}
	write("")
	if err := loop("--publish", "git", "--publish-branch", "out", "--branch", "main"); err != nil {
		t.Fatalf("good names: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--publish", "git", "--publish-branch", "main.lock"}, `--publish-branch: "main.lock" is not a branch name: its component "main.lock" ends with .lock`},
		{[]string{"--publish", "git", "--publish-branch", " main"}, `--publish-branch: " main" is not a branch name: it contains " "`},
		{[]string{"--publish", "git", "--publish-branch", "HEAD"}, `--publish-branch: "HEAD" is not a branch name: HEAD names the checked-out commit`},
		{[]string{"--branch", "HEAD"}, `--branch: "HEAD" is not a branch name: HEAD names the checked-out commit in git, not a branch; leave --branch out to follow HEAD`},
		{[]string{"--branch", "a..b"}, `--branch: "a..b" is not a branch name: it contains ..`},
		{[]string{"--branch", "x/"}, `--branch: "x/" is not a branch name: it ends with /`},
	} {
		if err := loop(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	write("publish: git\npublish_branch: main.lock\n")
	want := repo + `/fuelsync.yaml:2:17: fuelsync.yaml: publish_branch "main.lock" is not a branch name: its component "main.lock" ends with .lock`
	if err := loop(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("publish_branch main.lock in the file: %v, want %q", err, want)
	}
}
