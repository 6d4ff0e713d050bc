package cli

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshot lists every file under dir with its size and mode type, for a
// before/after comparison.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		size := fi.Size()
		if d.IsDir() {
			size = 0
		}
		out[rel] = fmt.Sprintf("%s %d", fi.Mode().Type(), size)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unchangedFiles reports the differences between two snapshots.
func unchangedFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s: %s was %q, is %q", what, p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was added", what, p)
		}
	}
}

// gitFsck runs git fsck on repo (bare or not) when git is installed (with
// CI=true it must be).
func gitFsck(t *testing.T, dir string) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed, and CI=true: git fsck needs it")
		}
		t.Log("git is not installed: not running git fsck (the files were compared)")
		return
	}
	if out, err := exec.Command(gitBin, "-C", dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck %s: %v\n%s", dir, err, out)
	}
}

// TestWorkdirIntoGitRefused is issue 27's reproducer: workdir: .git in a
// repository's fuelsync.yaml made apply delete every loose object of
// .git/objects (the pruning of the store removed every file with one link).
// Now the setting is refused, and so is --workdir naming a git directory (the
// store takes only a directory that is new, empty, or its own); the
// repository's files are untouched and git fsck is clean.
func TestWorkdirIntoGitRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		args     []string
		symlink  string // a committed symlink wd -> this
		want     string
	}{
		{"workdir: .git", "workdir: .git\n", nil, "", `fuelsync.yaml: workdir ".git" is inside a .git directory`},
		{"workdir: .git/fuelsync", "workdir: .git/fuelsync\n", nil, "", "is inside a .git directory"},
		{"workdir: ./.GIT/../.git", "workdir: ./.GIT/../.git\n", nil, "", "is inside a .git directory"},
		{"workdir: .", "workdir: .\n", nil, "", "is the repository itself"},
		{"workdir: ..", "workdir: ../x\n", nil, "", "leaves the repository"},
		{"workdir: absolute", "workdir: /tmp/fuelsync-wd\n", nil, "", "is an absolute path"},
		{"workdir: a symlink to .git", "workdir: wd\n", nil, ".git", "inside a .git directory"},
		{"workdir: a symlink out of the repository", "workdir: wd/x\n", nil, "/", "not inside the repository's working tree"},
		{"--workdir .git", "", []string{"--workdir", ".git"}, "", "refusing to use"},
		{"--workdir the repository", "", []string{"--workdir", "."}, "", "refusing to use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := quickstartRepo(t)
			if tc.settings != "" {
				if err := os.WriteFile(filepath.Join(repo, "fuelsync.yaml"), []byte(tc.settings), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.symlink != "" {
				if err := os.Symlink(tc.symlink, filepath.Join(repo, "wd")); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := gitCommit(repo, "settings"); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, repo)
			args := []string{"fuelsync", "--repo", repo}
			for _, a := range tc.args {
				if a == ".git" || a == "." {
					a = filepath.Join(repo, a)
				}
				args = append(args, a)
			}
			for _, cmd := range [][]string{{"apply", "--auto-approve"}, {"plan"}, {"state", "show"}} {
				var stdout, stderr strings.Builder
				code := run(append(append([]string{}, args...), cmd...), &stdout, &stderr)
				if code != 1 || !strings.Contains(stderr.String(), tc.want) {
					t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q", cmd, code, stderr.String(), tc.want)
				}
				if cmd[0] == "apply" && !strings.Contains(stderr.String(), "othing was changed") {
					t.Errorf("apply: stderr does not say nothing was changed:\n%s", stderr.String())
				}
			}
			unchangedFiles(t, "the repository", before, snapshot(t, repo))
			gitFsck(t, repo)
		})
	}
}

// TestBareRepoWorkdirDotRefused is issue 27's second reproducer: a followed bare
// repository whose HEAD says workdir: . made watch prune the repository's own
// objects. watch now refuses to start, and the repository is untouched.
func TestBareRepoWorkdirDotRefused(t *testing.T) {
	for _, setting := range []string{".", "state", "objects"} {
		t.Run(setting, func(t *testing.T) {
			src := quickstartRepo(t)
			if err := os.WriteFile(filepath.Join(src, "fuelsync.yaml"), []byte("workdir: "+setting+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := gitCommit(src, "workdir"); err != nil {
				t.Fatal(err)
			}
			bare := filepath.Join(t.TempDir(), "repo.git")
			if err := bareCopy(src, bare); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, bare)
			cmd := fuelsyncCmd("--repo", bare, "watch", "--interval", "1h")
			cmd.Dir = t.TempDir()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			exited, err := exitsWithin(t, cmd, 5*time.Second)
			switch {
			case !exited:
				t.Errorf("watch started on a bare repository whose workdir: is %s; stderr:\n%s", setting, stderr.String())
			case err == nil || !strings.Contains(stderr.String(), "is a path in a bare repository") && !strings.Contains(stderr.String(), "is the repository itself"):
				t.Errorf("watch: %v, stderr:\n%s\nwant it refused", err, stderr.String())
			}
			unchangedFiles(t, "the bare repository", before, snapshot(t, bare))
			gitFsck(t, bare)
		})
	}
}

// TestRepoWorkdir checks where a repository's workdir setting may point.
func TestRepoWorkdir(t *testing.T) {
	repo := t.TempDir()
	for _, d := range []string{".git", "clusters", "sub"} {
		if err := os.Mkdir(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(repo, "insub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(repo, "ingit")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ setting, want string }{
		{".fuelsync", ""},
		{"state", ""},
		{"sub/state", ""},
		{"insub/state", ""}, // a link inside the working tree
		{"a/../b", ""},
		{".git", "inside a .git directory"},
		{".Git/x", "inside a .git directory"},
		{"sub/.git", "inside a .git directory"},
		{"ingit", "inside a .git directory"},
		{"ingit/x", "inside a .git directory"},
		{".", "is the repository itself"},
		{"sub/..", "is the repository itself"},
		{"..", "leaves the repository"},
		{"../other", "leaves the repository"},
		{"/var/lib/fuelsync", "is an absolute path"},
		{"a\nb", "control character"},
		{" ", "is empty"},
	} {
		_, err := repoWorkdir(repo, tc.setting)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.setting, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.setting, err, tc.want)
		}
	}
	bare := t.TempDir()
	for _, d := range []string{"HEAD", "objects", "refs"} {
		if err := os.Mkdir(filepath.Join(bare, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repoWorkdir(bare, "state"); err == nil || !strings.Contains(err.Error(), "is a path in a bare repository") {
		t.Errorf("a bare repository's workdir setting: %v", err)
	}
}

// TestDaemonRefusedWorkdirAtStart: watch and serve with a work directory
// fuelsync refuses (a directory of other files, a file) exit 1 at once with
// the refusal, as a bad --repo does, instead of logging it at every retry; the
// directory is left as it was.
func TestDaemonRefusedWorkdirAtStart(t *testing.T) {
	repo := quickstartRepo(t)
	for _, tc := range []struct {
		name, want string
		make       func(p string) error
	}{
		{"other files", "refusing to use %s as the work directory: it has no .fuelsync-workdir marker and it holds notes.txt (a file)",
			func(p string) error {
				if err := os.Mkdir(p, 0o755); err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(p, "notes.txt"), []byte("mine\n"), 0o644)
			}},
		{"a file", "refusing to use %s as the work directory: it is a file, not a directory. Choose another --workdir",
			func(p string) error { return os.WriteFile(p, []byte("mine\n"), 0o644) }},
	} {
		for _, args := range [][]string{{"watch", "--interval", "1h"}, {"serve", "--listen", "127.0.0.1:0"}} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				wd := filepath.Join(t.TempDir(), "wd")
				if err := tc.make(wd); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, filepath.Dir(wd))
				cmd := fuelsyncCmd(append([]string{"--repo", repo, "--workdir", wd}, args...)...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				exited, _ := exitsWithin(t, cmd, 10*time.Second)
				want := "fuelsync: " + fmt.Sprintf(tc.want, wd)
				switch {
				case !exited:
					t.Errorf("%s with a refused work directory still runs after 10 s; stderr:\n%s", args[0], stderr.String())
				case cmd.ProcessState.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), want) || strings.Contains(stderr.String(), "level="):
					t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and only %q…", args[0], cmd.ProcessState.ExitCode(), stderr.String(), want)
				}
				unchangedFiles(t, "the work directory", before, snapshot(t, filepath.Dir(wd)))
			})
		}
	}
}
