package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepoFolder: --path is a slash path from the top of the repository,
// never out of it nor into a .git directory.
func TestRepoFolder(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"examples/quickstart", "examples/quickstart", ""},
		{"./examples//quickstart/", "examples/quickstart", ""},
		{"examples/x/../quickstart", "examples/quickstart", ""},
		{".", "", ""},
		{"./", "", ""},
		{"..", "", "leads out of the repository"},
		{"../x", "", "leads out of the repository"},
		{"a/../../x", "", "leads out of the repository"},
		{"/etc", "", "is absolute"},
		{".git", "", "inside a .git directory"},
		{"a/.GIT/b", "", "inside a .git directory"},
		{"a/.github", "a/.github", ""},
	} {
		got, err := repoFolder(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("repoFolder(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("repoFolder(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}

// TestGitRepo: the git repository of --repo is the top of the work tree it
// is in, with the rest of the way as the folder; a bare repository with
// --path; none outside every git repository.
func TestGitRepo(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"clone/.git", "clone/a/b", "bare.git/objects", "bare.git/refs", "plain"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bare.git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(root, "clone")
	for _, tc := range []struct {
		repo, path  string
		top, folder string
		err         string
	}{
		{"clone", "", "clone", "", ""},
		{"clone/a/b", "", clone, "a/b", ""},
		{"clone/a/missing", "", clone, "a/missing", ""},
		{"bare.git", "x/y", "bare.git", "x/y", ""},
		{"plain", "", "", "", "plain is not a git repository (no .git in it or above it)"},
	} {
		g := &globals{repo: filepath.Join(root, tc.repo), path: tc.path}
		top, folder, err := g.gitRepo("--rev reads")
		wantTop := tc.top
		if wantTop != "" && !filepath.IsAbs(wantTop) {
			wantTop = filepath.Join(root, wantTop)
		}
		switch {
		case tc.err == "" && (err != nil || top != wantTop || folder != tc.folder):
			t.Errorf("gitRepo(%s, --path %q) = %q, %q, %v; want %q, %q", tc.repo, tc.path, top, folder, err, wantTop, tc.folder)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("gitRepo(%s) = %v, want an error saying %q", tc.repo, err, tc.err)
		}
	}
}
