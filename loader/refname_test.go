package loader

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// branchNameCases are names and whether CheckBranchName accepts them; every
// one but the last group is what `git check-ref-format --branch` says too.
var branchNameCases = []struct {
	name string
	ok   bool
}{
	{"main", true},
	{"rendered", true},
	{"feature/x", true},
	{"a/b/c", true},
	{"héllo", true},
	{"foo.lock.x", true},
	{"@x", true},
	{"a/@/b", true},
	{"v1.2", true},
	{"a-b_c", true},
	{"refs/heads/main", true}, // the full name of main

	{"", false},
	{"main.lock", false},
	{"a/main.lock", false},
	{"x.lock/y", false},
	{" main", false},
	{"main ", false},
	{"a b", false},
	{"a..b", false},
	{"x/", false},
	{"/x", false},
	{"a//b", false},
	{"a.", false},
	{".a", false},
	{"a/.b", false},
	{"@{", false},
	{"a@{b", false},
	{"-x", false},
	{"a~1", false},
	{"a^", false},
	{"a:b", false},
	{"a?", false},
	{"a*", false},
	{"a[", false},
	{"a\\b", false},
	{"a\tb", false},
	{"a\nb", false},
	{"a\x7fb", false},
	{"a\x1bb", false},
	{"HEAD", false},
	{"refs/heads/main.lock", false},

	// Refused here where git accepts them (see CheckBranchName).
	{"@", false},
	{"refs/heads/HEAD", false},
	{strings.Repeat("a", MaxBranchName+1), false},
	{"a\xffb", false},
}

// TestCheckBranchName checks the names against the rules, and against git itself
// when it is installed.
func TestCheckBranchName(t *testing.T) {
	for _, tc := range branchNameCases {
		err := CheckBranchName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckBranchName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "is not a branch name: ") {
			t.Errorf("CheckBranchName(%q) = %v: the message does not say what is wrong", tc.name, err)
		}
	}
	if err := CheckBranchName(strings.Repeat("a", MaxBranchName)); err != nil {
		t.Errorf("a name of %d bytes: %v", MaxBranchName, err)
	}

	gitBin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed, and CI=true: the comparison with git check-ref-format needs it")
		}
		t.Skip("git is not installed: not comparing with git check-ref-format --branch")
	}
	dir := t.TempDir() // outside any repository: git does not expand @{-1} there
	for _, tc := range branchNameCases[:len(branchNameCases)-4] {
		if strings.ContainsAny(tc.name, "\x00") {
			continue
		}
		cmd := exec.Command(gitBin, "check-ref-format", "--branch", tc.name)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+dir, "GIT_DIR="+dir+"/none")
		gitOK := cmd.Run() == nil
		if gitOK != tc.ok {
			t.Errorf("%q: git check-ref-format --branch says ok %v, the table %v", tc.name, gitOK, tc.ok)
		}
	}
}

// FuzzCheckBranchName checks that every name CheckBranchName accepts, git accepts
// too (when git is installed), and that it never panics.
func FuzzCheckBranchName(f *testing.F) {
	for _, tc := range branchNameCases {
		f.Add(tc.name)
	}
	gitBin, _ := exec.LookPath("git")
	f.Fuzz(func(t *testing.T, name string) {
		if CheckBranchName(name) != nil || gitBin == "" || strings.ContainsRune(name, 0) {
			return
		}
		if out, err := exec.Command(gitBin, "check-ref-format", "--branch", name).CombinedOutput(); err != nil {
			t.Errorf("%q is accepted, but git check-ref-format --branch refuses it: %s", name, out)
		}
	})
}
