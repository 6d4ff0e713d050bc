package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// revRepoFiles is a small valid repository: a release plugin and a cluster on it.
var revRepoFiles = map[string]string{
	"plugins/base/metadata.yaml": `name: base
title: Base release
version: 1.0.0
package_version: 5.0.0
description: A minimal release.
licenses: [Apache License Version 2.0]
authors: [fuelsync tests]
homepage: https://example.org/base
groups: []
releases:
  - is_release: true
    release_name: base
    description: One role.
    operating_system: Ubuntu
    version: base-1.0
    roles:
      controller: {name: Controller, description: API services.}
`,
	"clusters/demo.yaml": `release: base-1.0
nodes:
  node-1: {id: 1, roles: [controller]}
`,
}

// revBrokenCluster names a release the repository does not have.
const revBrokenCluster = `release: base-2.0
nodes:
  node-1: {id: 1, roles: [controller]}
`

func revWriteFile(t *testing.T, root, name, data string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// revRun runs the CLI in-process and returns its exit code and output.
func revRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"fuelsync", "--color", "never"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// revCheck runs fuelsync and checks its exact exit code and that the summary line
// on stdout starts with wantSummary.
func revCheck(t *testing.T, wantCode int, wantSummary string, args ...string) {
	t.Helper()
	code, stdout, stderr := revRun(t, args...)
	if code != wantCode {
		t.Errorf("fuelsync %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, stdout, stderr)
		return
	}
	if !strings.HasPrefix(stdout, wantSummary) {
		t.Errorf("fuelsync %s: stdout = %q, want it to start with %q", strings.Join(args, " "), stdout, wantSummary)
	}
}

// TestValidateRevision checks that validate reads the working tree by default and a
// commit from the object store with --rev, and that a bare repository is read at
// HEAD, with exact exit codes (testscript's ! only knows "non-zero").
func TestValidateRevision(t *testing.T) {
	dir := t.TempDir()
	for name, data := range revRepoFiles {
		revWriteFile(t, dir, name, data)
	}
	// git.PlainInit, not gitCommit: this test uses go-git's own default branch.
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := testSignature
	commit, err := wt.Commit("valid repository", &git.CommitOptions{Author: &sig, Committer: &sig})
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	branch := head.Name().Short() // "master" or "main", whichever go-git chose
	t.Logf("go-git created branch %s", branch)
	short := commit.String()[:12]

	// The working tree is now invalid; the commit is not.
	revWriteFile(t, dir, "clusters/demo.yaml", revBrokenCluster)

	revCheck(t, 1, dir+": invalid: ", "--repo", dir, "validate")
	revCheck(t, 0, dir+"@HEAD ("+short+"): valid: ", "--repo", dir, "--rev", "HEAD", "validate")
	revCheck(t, 0, dir+"@"+branch+" ("+short+"): valid: ", "--repo", dir, "--rev", branch, "validate")
	revCheck(t, 0, dir+"@"+short+" ("+short+"): valid: ", "--repo", dir, "--rev", short, "validate")

	t.Run("unknown revision", func(t *testing.T) {
		code, stdout, stderr := revRun(t, "--repo", dir, "--rev", "nosuchrev", "validate")
		if code != 1 || stdout != "" || !strings.Contains(stderr, `"nosuchrev"`) {
			t.Errorf("--rev nosuchrev: code %d, stdout %q, stderr %q; want 1, nothing, a message naming the revision", code, stdout, stderr)
		}
		code, _, stderr = revRun(t, "--repo", dir, "--rev", "HEAD~1", "validate")
		if code != 1 || !strings.Contains(stderr, "HEAD~1") {
			t.Errorf("--rev HEAD~1 of a root commit: code %d, stderr %q; want 1 and a message naming it", code, stderr)
		}
	})

	checkBare := func(t *testing.T, bare string) {
		revCheck(t, 0, bare+"@HEAD ("+short+"): valid: ", "--repo", bare, "validate")
		revCheck(t, 0, bare+"@"+branch+" ("+short+"): valid: ", "--repo", bare, "--rev", branch, "validate")
		revCheck(t, 0, bare+"@HEAD ("+short+"): valid: ", "--repo", bare, "--rev", "HEAD", "validate")
		code, _, _ := revRun(t, "--repo", bare, "--rev", "nosuchrev", "validate")
		if code != 1 {
			t.Errorf("bare --rev nosuchrev: exit code %d, want 1", code)
		}
	}
	t.Run("bare copy", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "repo.git")
		if err := bareCopy(dir, bare); err != nil {
			t.Fatal(err)
		}
		checkBare(t, bare)
	})
	t.Run("bare clone", func(t *testing.T) {
		// go-git clones a local path by running git-upload-pack.
		testenv.Tool(t, "git", "go-git's clone of a local path runs git-upload-pack: apt-get install git")
		bare := filepath.Join(t.TempDir(), "repo.git")
		if _, err := git.PlainClone(bare, true, &git.CloneOptions{URL: dir}); err != nil {
			t.Fatal(err)
		}
		checkBare(t, bare)
	})
}

// TestRunExitCodes pins the exit codes of usage errors and of validate, which the
// scripts can only check as "non-zero".
func TestRunExitCodes(t *testing.T) {
	valid := t.TempDir()
	for name, data := range revRepoFiles {
		revWriteFile(t, valid, name, data)
	}
	invalid := t.TempDir()
	for name, data := range revRepoFiles {
		revWriteFile(t, invalid, name, data)
	}
	revWriteFile(t, invalid, "clusters/demo.yaml", revBrokenCluster)
	warning := t.TempDir()
	revWriteFile(t, warning, "plugins/base/metadata.yaml",
		strings.Replace(revRepoFiles["plugins/base/metadata.yaml"], "release_name: base", "release_name: Base", 1))

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"valid", []string{"--repo", valid, "validate"}, 0},
		{"errors", []string{"--repo", invalid, "validate"}, 1},
		{"warnings", []string{"--repo", warning, "validate"}, 0},
		{"warnings strict", []string{"--repo", warning, "validate", "--strict"}, 1},
		{"errors json", []string{"--repo", invalid, "--format", "json", "validate"}, 1},
		{"errors github", []string{"--repo", invalid, "--format", "github", "validate"}, 1},
		{"version", []string{"version"}, 0},
		{"unknown command", []string{"frobnicate"}, 1},
		{"unknown global flag", []string{"--bogus", "validate"}, 1},
		{"unknown command flag", []string{"validate", "--bogus"}, 1},
		{"extra argument", []string{"--repo", valid, "validate", "extra"}, 1},
		{"bad format", []string{"--repo", valid, "--format", "yaml", "validate"}, 1},
		{"bad color", []string{"--repo", valid, "--color", "purple", "validate"}, 1},
		{"missing repo", []string{"--repo", filepath.Join(valid, "missing"), "validate"}, 1},
		{"rev of a plain directory", []string{"--repo", valid, "--rev", "HEAD", "validate"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, stdout, stderr := revRun(t, tc.args...); code != tc.want {
				t.Errorf("fuelsync %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, stdout, stderr)
			}
		})
	}
}
