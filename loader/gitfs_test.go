package loader

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/google/go-cmp/cmp"
)

// gitTestTime is the author/committer time of the first test commit; later
// commits are one hour apart.
var gitTestTime = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func gitTestSig(i int) *object.Signature {
	return &object.Signature{Name: "Test Author", Email: "test@example.com", When: gitTestTime.Add(time.Duration(i) * time.Hour)}
}

// gitTestRepo describes the repository built by newGitTestRepo.
type gitTestRepo struct {
	dir     string
	repo    *git.Repository
	commits []plumbing.Hash // in order: c1 (tagged v1), c2, c3
}

// gitTestWrite writes files (content) and symlinks ("-> target") below root.
// A path ending in "*" is written executable (the star is dropped).
func gitTestWrite(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name = strings.TrimSuffix(name, "*")
			mode = 0o755
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // umask
			t.Fatal(err)
		}
	}
}

func gitTestCommit(t *testing.T, repo *git.Repository, i int, msg string) plumbing.Hash {
	t.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: gitTestSig(i), Committer: gitTestSig(i)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var gitTestFiles1 = map[string]string{
	"README.md":         "hello v1\n",
	"cmd/run.sh*":       "#!/bin/sh\necho run\n",
	"pkg/a/a.txt":       "a v1\n",
	"pkg/a/b/deep.txt":  "deep\n",
	"pkg/link-to-a":     "-> a/a.txt",
	"dirlink":           "-> pkg/a",
	"pkg/a/b/up":        "-> ../../../README.md",
	"chain1":            "-> chain2",
	"chain2":            "-> pkg/link-to-a",
	"pkg/a/b/dot-slash": "-> ./deep.txt",
}

// gitTestLinks3 are the escaping and broken symlinks (path -> target) added
// by the third commit. That commit is written straight into the object store:
// go-git's worktree (through billy's chroot Readlink) would record the
// absolute target /etc/passwd as "/../../../etc/passwd", relative to the
// worktree root.
var gitTestLinks3 = map[string]string{
	"outside-link": "../outside",
	"passwd-link":  "/etc/passwd",
	"pkg/sneaky":   "a/../../../x",
	"via-dirlink":  "dirlink/../../../y", // physically pkg/a, pkg, root, then out
	// lexically "../README.md", but physically dirlink/.. is pkg, so this
	// stays inside: link targets are resolved like the kernel does.
	"phys-inside":   "dirlink/../../README.md",
	"loop-a":        "loop-b",
	"loop-b":        "loop-a",
	"dangling":      "missing.txt",
	"empty-link":    "", // not the directory holding it
	"escape-dir":    "..",
	"ok-via-dotdot": "pkg/../README.md",
}

// gitTestAddLinks returns a copy of tree base with the symlinks links
// (path relative to base -> target) added, written into the object store.
func gitTestAddLinks(t *testing.T, repo *git.Repository, base plumbing.Hash, links map[string]string) plumbing.Hash {
	t.Helper()
	tree, err := repo.TreeObject(base)
	if err != nil {
		t.Fatal(err)
	}
	entries := slices.Clone(tree.Entries)
	sub := map[string]map[string]string{}
	for p, target := range links {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if sub[dir] == nil {
				sub[dir] = map[string]string{}
			}
			sub[dir][rest] = target
			continue
		}
		entries = append(entries, object.TreeEntry{Name: p, Mode: filemode.Symlink, Hash: gitTestStoreBlob(t, repo, target)})
	}
	for i, e := range entries {
		if m := sub[e.Name]; m != nil {
			entries[i].Hash = gitTestAddLinks(t, repo, e.Hash, m)
		}
	}
	return gitTestStoreTree(t, repo, entries)
}

// newGitTestRepo builds a working-tree repository with three commits on
// branch main: c1 (tags v1 and v1-annotated), c2 (README.md edited, new.txt
// added) and c3 (escaping and broken symlinks added).
func newGitTestRepo(t *testing.T) *gitTestRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &gitTestRepo{dir: dir, repo: repo}

	gitTestWrite(t, dir, gitTestFiles1)
	r.commits = append(r.commits, gitTestCommit(t, repo, 0, "first"))
	if _, err := repo.CreateTag("v1", r.commits[0], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateTag("v1-annotated", r.commits[0], &git.CreateTagOptions{Tagger: gitTestSig(0), Message: "release v1"}); err != nil {
		t.Fatal(err)
	}

	gitTestWrite(t, dir, map[string]string{"README.md": "hello v2\n", "new.txt": "new\n"})
	r.commits = append(r.commits, gitTestCommit(t, repo, 1, "second"))

	c2, err := repo.CommitObject(r.commits[1])
	if err != nil {
		t.Fatal(err)
	}
	c3 := &object.Commit{
		Author: *gitTestSig(2), Committer: *gitTestSig(2), Message: "third\n",
		TreeHash:     gitTestAddLinks(t, repo, c2.TreeHash, gitTestLinks3),
		ParentHashes: []plumbing.Hash{c2.Hash},
	}
	o := repo.Storer.NewEncodedObject()
	if err := c3.Encode(o); err != nil {
		t.Fatal(err)
	}
	h3, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), h3)); err != nil {
		t.Fatal(err)
	}
	r.commits = append(r.commits, h3)
	return r
}

// gitTestListing returns "path mode size" lines of fsys as seen by
// fs.WalkDir (entry types) and Lstat (mode, size).
func gitTestListing(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode() != d.Type()|info.Mode().Perm() {
			t.Errorf("%s: DirEntry.Type() = %v, Info().Mode() = %v", p, d.Type(), info.Mode())
		}
		line := p + " " + info.Mode().String()
		if !info.IsDir() {
			line += " " + itoa(info.Size())
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func gitTestRead(t *testing.T, fsys fs.FS, names ...string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			out[name] = "ERR " + err.Error()
			continue
		}
		out[name] = string(b)
	}
	return out
}

func TestGitOpenRevisionContent(t *testing.T) {
	r := newGitTestRepo(t)
	c1, c2, c3 := r.commits[0], r.commits[1], r.commits[2]
	v1 := map[string]string{"README.md": "hello v1\n", "pkg/a/a.txt": "a v1\n", "chain1": "a v1\n", "new.txt": "ERR open new.txt: file does not exist"}
	v2 := map[string]string{"README.md": "hello v2\n", "pkg/a/a.txt": "a v1\n", "chain1": "a v1\n", "new.txt": "new\n"}
	tests := []struct {
		rev        string
		wantCommit plumbing.Hash
		want       map[string]string
	}{
		{"HEAD", c3, v2},
		{"main", c3, v2},
		{"refs/heads/main", c3, v2},
		{"HEAD~1", c2, v2},
		{"main^", c2, v2},
		{"HEAD~2", c1, v1},
		{"HEAD^^", c1, v1},
		{"v1", c1, v1},
		{"v1-annotated", c1, v1},
		{"refs/tags/v1-annotated", c1, v1},
		{c1.String(), c1, v1},
		{c1.String()[:7], c1, v1},
		{c2.String()[:10], c2, v2},
	}
	for _, tt := range tests {
		t.Run(tt.rev, func(t *testing.T) {
			fsys, commit, err := OpenRevision(r.dir, tt.rev)
			if err != nil {
				t.Fatal(err)
			}
			if commit != tt.wantCommit.String() {
				t.Errorf("commit = %s, want %s", commit, tt.wantCommit)
			}
			if diff := cmp.Diff(tt.want, gitTestRead(t, fsys, "README.md", "pkg/a/a.txt", "chain1", "new.txt")); diff != "" {
				t.Errorf("content mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGitWalkAndFSTest(t *testing.T) {
	r := newGitTestRepo(t)
	fsys, _, err := OpenRevision(r.dir, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		". drwxr-xr-x",
		"README.md -rw-r--r-- 9",
		"chain1 Lrwxrwxrwx 6",
		"chain2 Lrwxrwxrwx 13",
		"cmd drwxr-xr-x",
		"cmd/run.sh -rwxr-xr-x 19",
		"dirlink Lrwxrwxrwx 5",
		"new.txt -rw-r--r-- 4",
		"pkg drwxr-xr-x",
		"pkg/a drwxr-xr-x",
		"pkg/a/a.txt -rw-r--r-- 5",
		"pkg/a/b drwxr-xr-x",
		"pkg/a/b/deep.txt -rw-r--r-- 5",
		"pkg/a/b/dot-slash Lrwxrwxrwx 10",
		"pkg/a/b/up Lrwxrwxrwx 18",
		"pkg/link-to-a Lrwxrwxrwx 7",
	}
	if diff := cmp.Diff(want, gitTestListing(t, fsys)); diff != "" {
		t.Errorf("WalkDir listing mismatch (-want +got):\n%s", diff)
	}

	expected := []string{"README.md", "chain1", "chain2", "cmd/run.sh", "dirlink", "new.txt", "pkg/a/a.txt", "pkg/a/b/deep.txt", "pkg/a/b/dot-slash", "pkg/a/b/up", "pkg/link-to-a"}
	if err := fstest.TestFS(fsys, expected...); err != nil {
		t.Errorf("fstest.TestFS(HEAD~1): %v", err)
	}
	fsys1, _, err := OpenRevision(r.dir, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys1, expected[:5]...); err != nil {
		t.Errorf("fstest.TestFS(v1): %v", err)
	}
	// HEAD has escaping symlinks, which TestFS would try to Open; the parts
	// of the tree without them must still pass.
	head, _, err := OpenRevision(r.dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(head, "cmd")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(sub, "run.sh"); err != nil {
		t.Errorf("fstest.TestFS(HEAD/cmd): %v", err)
	}
}

func TestGitFileInfo(t *testing.T) {
	r := newGitTestRepo(t)
	fsys, _, err := OpenRevision(r.dir, "v1")
	if err != nil {
		t.Fatal(err)
	}
	type info struct {
		Name    string
		Size    int64
		Mode    fs.FileMode
		ModTime time.Time
		IsDir   bool
		Sys     any
	}
	conv := func(fi fs.FileInfo) info {
		return info{fi.Name(), fi.Size(), fi.Mode(), fi.ModTime().UTC(), fi.IsDir(), fi.Sys()}
	}
	tm := gitTestTime
	stat := func(name string) info {
		t.Helper()
		fi, err := fs.Stat(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		return conv(fi)
	}
	lstat := func(name string) info {
		t.Helper()
		fi, err := fs.Lstat(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		return conv(fi)
	}
	got := []info{
		stat("."), stat("pkg"), stat("README.md"), stat("cmd/run.sh"),
		stat("pkg/link-to-a"), lstat("pkg/link-to-a"),
		stat("dirlink"), lstat("dirlink"), lstat("pkg/a"),
		stat("dirlink/b/deep.txt"), lstat("dirlink/b/up"),
	}
	want := []info{
		{".", 0, fs.ModeDir | 0o755, tm, true, nil},
		{"pkg", 0, fs.ModeDir | 0o755, tm, true, nil},
		{"README.md", 9, 0o644, tm, false, nil},
		{"run.sh", 19, 0o755, tm, false, nil},
		{"link-to-a", 5, 0o644, tm, false, nil},
		{"link-to-a", 7, fs.ModeSymlink | 0o777, tm, false, nil},
		{"dirlink", 0, fs.ModeDir | 0o755, tm, true, nil},
		{"dirlink", 5, fs.ModeSymlink | 0o777, tm, false, nil},
		{"a", 0, fs.ModeDir | 0o755, tm, true, nil},
		{"deep.txt", 5, 0o644, tm, false, nil},
		{"up", 18, fs.ModeSymlink | 0o777, tm, false, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FileInfo mismatch (-want +got):\n%s", diff)
	}

	// Open on a directory gives a ReadDirFile, sorted, usable in chunks.
	f, err := fsys.Open("pkg/a")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		t.Fatalf("Open(dir) returned %T, not an fs.ReadDirFile", f)
	}
	var names []string
	for {
		ents, err := d.ReadDir(1)
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"a.txt", "b"}, names); diff != "" {
		t.Errorf("ReadDir(1) names (-want +got):\n%s", diff)
	}
	if _, err := f.Read(make([]byte, 1)); err == nil {
		t.Error("Read on a directory succeeded")
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	ents, err := fs.ReadDir(fsys, "dirlink/b")
	if err != nil {
		t.Fatal(err)
	}
	var entNames []string
	for _, e := range ents {
		entNames = append(entNames, e.Name()+" "+e.Type().String())
	}
	if diff := cmp.Diff([]string{"deep.txt ----------", "dot-slash L---------", "up L---------"}, entNames); diff != "" {
		t.Errorf("ReadDir(dirlink/b) (-want +got):\n%s", diff)
	}

	// Regular file reads and closed-file behaviour.
	f, err = fsys.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "hello v1\n" {
		t.Errorf("ReadAll(README.md) = %q, %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close: %v, want fs.ErrClosed", err)
	}

	// ReadLink.
	links := map[string]string{}
	for _, name := range []string{"pkg/link-to-a", "dirlink", "chain1", "dirlink/b/up"} {
		target, err := fs.ReadLink(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		links[name] = target
	}
	if diff := cmp.Diff(map[string]string{"pkg/link-to-a": "a/a.txt", "dirlink": "pkg/a", "chain1": "chain2", "dirlink/b/up": "../../../README.md"}, links); diff != "" {
		t.Errorf("ReadLink (-want +got):\n%s", diff)
	}
	if _, err := fs.ReadLink(fsys, "README.md"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ReadLink(regular file) = %v, want fs.ErrInvalid", err)
	}
}

func TestGitPathErrors(t *testing.T) {
	r := newGitTestRepo(t)
	fsys, _, err := OpenRevision(r.dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	rl := fsys.(fs.ReadLinkFS)

	for _, name := range []string{"", "/README.md", "README.md/", "./README.md", "pkg/../README.md", "pkg//a", "../x", "." + "/"} {
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want fs.ErrInvalid", name, err)
		}
		var pe *fs.PathError
		if _, err := fs.Stat(fsys, name); !errors.As(err, &pe) || !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Stat(%q) = %v, want *fs.PathError with fs.ErrInvalid", name, err)
		}
	}
	for _, name := range []string{"nope", "pkg/nope", "README.md/x", "dirlink/nope", "dangling", "empty-link", "empty-link/README.md"} {
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%q) = %v, want fs.ErrNotExist", name, err)
		}
		if _, err := fs.ReadFile(fsys, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%q) = %v, want fs.ErrNotExist", name, err)
		}
	}
	if _, err := rl.Lstat("dangling"); err != nil {
		t.Errorf("Lstat(dangling) = %v", err)
	}

	// Escaping symlinks: never followed, but visible to Lstat/ReadLink.
	escaping := map[string]string{
		"outside-link": "../outside",
		"passwd-link":  "/etc/passwd",
		"pkg/sneaky":   "a/../../../x",
		"via-dirlink":  "dirlink/../../../y",
		"escape-dir":   "..",
	}
	for name, target := range escaping {
		if _, err := fsys.Open(name); !errors.Is(err, ErrEscapesRepo) {
			t.Errorf("Open(%q) = %v, want ErrEscapesRepo", name, err)
		}
		if _, err := fs.ReadFile(fsys, name); !errors.Is(err, ErrEscapesRepo) {
			t.Errorf("ReadFile(%q) = %v, want ErrEscapesRepo", name, err)
		}
		if _, err := fs.Stat(fsys, name); !errors.Is(err, ErrEscapesRepo) {
			t.Errorf("Stat(%q) = %v, want ErrEscapesRepo", name, err)
		}
		if _, ok := fsys.(BlobHasher).BlobHash(name); ok {
			t.Errorf("BlobHash(%q) succeeded", name)
		}
		fi, err := rl.Lstat(name)
		if err != nil {
			t.Errorf("Lstat(%q) = %v", name, err)
		} else if fi.Mode() != fs.ModeSymlink|0o777 || fi.Size() != int64(len(target)) {
			t.Errorf("Lstat(%q) = %v", name, fs.FormatFileInfo(fi))
		}
		if got, err := rl.ReadLink(name); err != nil || got != target {
			t.Errorf("ReadLink(%q) = %q, %v; want %q", name, got, err, target)
		}
	}
	// A path through an escaping link escapes too, even for Lstat.
	if _, err := rl.Lstat("escape-dir/x"); !errors.Is(err, ErrEscapesRepo) {
		t.Errorf("Lstat(escape-dir/x) = %v, want ErrEscapesRepo", err)
	}
	_, err = fsys.Open("passwd-link")
	if want := "open passwd-link: symlink passwd-link -> /etc/passwd: path escapes the repository"; err == nil || err.Error() != want {
		t.Errorf("Open(passwd-link) error = %v, want %q", err, want)
	}

	// Symlink loops are errors, not hangs.
	if _, err := fsys.Open("loop-a"); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("Open(loop-a) = %v", err)
	}
	// ".." inside the tree is fine.
	if got := gitTestRead(t, fsys, "ok-via-dotdot", "phys-inside", "pkg/a/b/up", "pkg/a/b/dot-slash", "dirlink/b/up"); !cmp.Equal(got, map[string]string{
		"ok-via-dotdot": "hello v2\n", "phys-inside": "hello v2\n", "pkg/a/b/up": "hello v2\n", "pkg/a/b/dot-slash": "deep\n", "dirlink/b/up": "hello v2\n",
	}) {
		t.Errorf("reads through symlinks: %v", got)
	}
}

func TestGitRevisionErrors(t *testing.T) {
	r := newGitTestRepo(t)
	_, _, err := OpenRevision(r.dir, "nope")
	if want := `resolving revision "nope" in ` + r.dir + `: reference not found`; err == nil || err.Error() != want {
		t.Errorf("OpenRevision(nope) error = %v, want %q", err, want)
	}
	if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Errorf("OpenRevision(nope) = %v, want plumbing.ErrReferenceNotFound", err)
	}
	for _, rev := range []string{"", "HEAD~5", "deadbeef", "v1^2", "refs/heads/nope", "HEAD^{/no such message}", "~1", "main..HEAD", "HEAD@{1}", "main@{yesterday}", "HEAD:README.md"} {
		_, _, err := OpenRevision(r.dir, rev)
		if err == nil || !strings.Contains(err.Error(), r.dir) || !strings.Contains(err.Error(), strconv.Quote(rev)) {
			t.Errorf("OpenRevision(%q) = %v, want an error naming the repository and the revision", rev, err)
		}
	}
	for _, rev := range []string{"HEAD~5", "v1^2"} {
		if _, _, err := OpenRevision(r.dir, rev); !errors.Is(err, plumbing.ErrReferenceNotFound) {
			t.Errorf("OpenRevision(%q) = %v, want plumbing.ErrReferenceNotFound", rev, err)
		}
	}
	notRepo := t.TempDir()
	_, _, err = OpenRevision(notRepo, "HEAD")
	if !errors.Is(err, git.ErrRepositoryNotExists) || !strings.Contains(err.Error(), notRepo) {
		t.Errorf("OpenRevision(not a repo) = %v", err)
	}
	if _, _, err := OpenRevision(filepath.Join(notRepo, "missing"), "HEAD"); err == nil {
		t.Error("OpenRevision(missing dir) succeeded")
	}
	// A subdirectory of a checkout is not a repository (no .git detection).
	if _, _, err := OpenRevision(filepath.Join(r.dir, "pkg"), "HEAD"); err == nil {
		t.Error("OpenRevision(subdirectory of checkout) succeeded")
	}
	if _, err := RevisionFS(r.repo, plumbing.NewHash("0123456789012345678901234567890123456789")); err == nil {
		t.Error("RevisionFS(unknown commit) succeeded")
	}
	// A blob hash is not a commit.
	fsys, _, err := OpenRevision(r.dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := fsys.(BlobHasher).BlobHash("README.md")
	if _, err := RevisionFS(r.repo, plumbing.NewHash(blob)); err == nil {
		t.Error("RevisionFS(blob hash) succeeded")
	}
}

func TestGitBlobHash(t *testing.T) {
	r := newGitTestRepo(t)
	a, err := RevisionFS(r.repo, r.commits[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := RevisionFS(r.repo, r.commits[1])
	if err != nil {
		t.Fatal(err)
	}
	ha, hb := a.(BlobHasher), b.(BlobHasher)
	sharedA, ok1 := ha.BlobHash("pkg/a/a.txt")
	sharedB, ok2 := hb.BlobHash("pkg/a/a.txt")
	if !ok1 || !ok2 || sharedA != sharedB || len(sharedA) != 40 {
		t.Errorf("unchanged file: %q %v / %q %v", sharedA, ok1, sharedB, ok2)
	}
	if via, _ := ha.BlobHash("chain1"); via != sharedA {
		t.Errorf("BlobHash(chain1) = %q, want the blob of pkg/a/a.txt %q", via, sharedA)
	}
	ra, _ := ha.BlobHash("README.md")
	rb, _ := hb.BlobHash("README.md")
	if ra == rb || ra == "" || rb == "" {
		t.Errorf("changed README.md: %q vs %q", ra, rb)
	}
	want := plumbing.ComputeHash(plumbing.BlobObject, []byte("hello v1\n")).String()
	if ra != want {
		t.Errorf("BlobHash(README.md) = %s, want %s", ra, want)
	}
	for _, name := range []string{".", "pkg", "dirlink", "nope", "/x"} {
		if h, ok := ha.BlobHash(name); ok {
			t.Errorf("BlobHash(%q) = %q, true", name, h)
		}
	}
}

// newGitTestBare copies every object of src, as one packfile, and its refs
// into a new bare repository, so that objects are read from a pack. (Pushing
// over go-git's file transport would need the git binary, and
// Repository.RepackObjects fails on trees with symlinks: its object walker
// rejects blobs reached through non-regular tree entries.)
func newGitTestBare(t *testing.T, src *gitTestRepo) string {
	t.Helper()
	dir := t.TempDir()
	bare, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := src.repo.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []plumbing.Hash
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		hashes = append(hashes, o.Hash())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := bare.Storer.(storer.PackfileWriter).PackfileWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := packfile.NewEncoder(pw, src.repo.Storer, false).Encode(hashes, 10); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	refs, err := src.repo.References()
	if err != nil {
		t.Fatal(err)
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		return bare.Storer.SetReference(ref)
	})
	if err != nil {
		t.Fatal(err)
	}
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs: %v, %v", packs, err)
	}
	loose, err := filepath.Glob(filepath.Join(dir, "objects", "??"))
	if err != nil || len(loose) != 0 {
		t.Fatalf("loose object directories: %v, %v", loose, err)
	}
	return dir
}

func TestGitBareRepository(t *testing.T) {
	src := newGitTestRepo(t)
	dir := newGitTestBare(t, src)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		t.Fatal("bare repository has a .git directory")
	}
	for _, tt := range []struct {
		rev, commit, readme string
	}{
		{"HEAD", src.commits[2].String(), "hello v2\n"},
		{"main", src.commits[2].String(), "hello v2\n"},
		{"main~2", src.commits[0].String(), "hello v1\n"},
		{"v1-annotated", src.commits[0].String(), "hello v1\n"},
		{src.commits[1].String()[:8], src.commits[1].String(), "hello v2\n"},
	} {
		fsys, commit, err := OpenRevision(dir, tt.rev)
		if err != nil {
			t.Fatalf("OpenRevision(bare, %q): %v", tt.rev, err)
		}
		if commit != tt.commit {
			t.Errorf("%s: commit %s, want %s", tt.rev, commit, tt.commit)
		}
		got := gitTestRead(t, fsys, "README.md", "dirlink/b/deep.txt")
		if diff := cmp.Diff(map[string]string{"README.md": tt.readme, "dirlink/b/deep.txt": "deep\n"}, got); diff != "" {
			t.Errorf("%s: content (-want +got):\n%s", tt.rev, diff)
		}
	}
	fsys, _, err := OpenRevision(dir, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	srcFS, _, err := OpenRevision(src.dir, "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gitTestListing(t, srcFS), gitTestListing(t, fsys)); diff != "" {
		t.Errorf("bare listing differs from checkout listing (-checkout +bare):\n%s", diff)
	}
	if err := fstest.TestFS(fsys, "README.md", "new.txt", "pkg/a/b/deep.txt"); err != nil {
		t.Errorf("fstest.TestFS(bare HEAD~1): %v", err)
	}
}

// gitTestStoreTree writes a tree with the given entries straight into the
// object store and returns its hash.
func gitTestStoreTree(t *testing.T, repo *git.Repository, entries []object.TreeEntry) plumbing.Hash {
	t.Helper()
	sort.Sort(object.TreeEntrySorter(entries))
	tree := &object.Tree{Entries: entries}
	o := repo.Storer.NewEncodedObject()
	if err := tree.Encode(o); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func gitTestStoreBlob(t *testing.T, repo *git.Repository, content string) plumbing.Hash {
	t.Helper()
	o := repo.Storer.NewEncodedObject()
	o.SetType(plumbing.BlobObject)
	w, err := o.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGitSubmoduleAndStoredCommit(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	file := gitTestStoreBlob(t, repo, "x\n")
	sub := gitTestStoreTree(t, repo, []object.TreeEntry{{Name: "f.txt", Mode: filemode.Regular, Hash: file}})
	root := gitTestStoreTree(t, repo, []object.TreeEntry{
		{Name: "vendor-mod", Mode: filemode.Submodule, Hash: plumbing.NewHash("1111111111111111111111111111111111111111")},
		{Name: "sub", Mode: filemode.Dir, Hash: sub},
		{Name: "sub.txt", Mode: filemode.Deprecated, Hash: file},
	})
	c := &object.Commit{Author: *gitTestSig(5), Committer: *gitTestSig(6), Message: "stored", TreeHash: root}
	o := repo.Storer.NewEncodedObject()
	if err := c.Encode(o); err != nil {
		t.Fatal(err)
	}
	ch, err := repo.Storer.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/master", ch)); err != nil {
		t.Fatal(err)
	}

	fsys, err := RevisionFS(repo, ch)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{". drwxr-xr-x", "sub drwxr-xr-x", "sub/f.txt -rw-r--r-- 2", "sub.txt -rw-r--r-- 2", "vendor-mod drwxr-xr-x"}
	if diff := cmp.Diff(want, gitTestListing(t, fsys)); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	fi, err := fs.Stat(fsys, "vendor-mod")
	if err != nil || !fi.IsDir() || !fi.ModTime().Equal(gitTestTime.Add(6*time.Hour)) {
		t.Errorf("Stat(vendor-mod) = %v, %v", fi, err)
	}
	if _, err := fs.Stat(fsys, "vendor-mod/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(vendor-mod/x) = %v, want fs.ErrNotExist", err)
	}
	if err := fstest.TestFS(fsys, "sub/f.txt", "sub.txt", "vendor-mod"); err != nil {
		t.Error(err)
	}
	// HEAD of the bare repository points at master by default.
	if _, commit, err := OpenRevision(dir, "HEAD"); err != nil || commit != ch.String() {
		t.Errorf("OpenRevision(HEAD) = %s, %v", commit, err)
	}
}

func TestGitConcurrentReads(t *testing.T) {
	src := newGitTestRepo(t)
	for _, tc := range []struct{ name, dir string }{
		{"checkout", src.dir},
		{"bare-packed", newGitTestBare(t, src)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Two file systems for two revisions of one repository, shared by
			// goroutines 0-3, nothing but the root trees read yet.
			repo, err := git.PlainOpenWithOptions(tc.dir, &git.PlainOpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fsA, err := RevisionFS(repo, src.commits[0])
			if err != nil {
				t.Fatal(err)
			}
			fsB, err := RevisionFS(repo, src.commits[1])
			if err != nil {
				t.Fatal(err)
			}
			// Expected content, computed from independent file systems.
			want := func(rev string) map[string]string {
				fsys, _, err := OpenRevision(tc.dir, rev)
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]string{}
				err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					if fi, err := fs.Stat(fsys, p); err != nil || fi.IsDir() {
						return err // a symlink to a directory
					}
					b, err := fs.ReadFile(fsys, p)
					m[p] = string(b)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			wantA, wantB := want(src.commits[0].String()), want(src.commits[1].String())
			// A freshly opened repository on which goroutines 4-7 call
			// RevisionFS concurrently: go-git fills its pack and object lists
			// lazily on first use, without locking.
			fresh, err := git.PlainOpenWithOptions(tc.dir, &git.PlainOpenOptions{})
			if err != nil {
				t.Fatal(err)
			}

			readAll := func(fsys fs.FS) (map[string]string, error) {
				m := map[string]string{}
				err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					if _, err := d.Info(); err != nil {
						return err
					}
					f, err := fsys.Open(p)
					if err != nil {
						return err
					}
					defer f.Close()
					if fi, err := f.Stat(); err != nil || fi.IsDir() {
						return err // a symlink to a directory
					}
					b, err := io.ReadAll(f)
					m[p] = string(b)
					return err
				})
				return m, err
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 8 {
				wg.Go(func() {
					fsys, wantM := fsA, wantA
					if i%2 == 1 {
						fsys, wantM = fsB, wantB
					}
					if i >= 4 {
						var err error
						if fsys, err = RevisionFS(fresh, src.commits[i%2]); err != nil {
							errs <- err
							return
						}
					}
					got, err := readAll(fsys)
					if err != nil {
						errs <- err
						return
					}
					if diff := cmp.Diff(wantM, got); diff != "" {
						errs <- errors.New("goroutine content mismatch:\n" + diff)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestGitOpenRevisionDir: a folder of the tree is read as the root, a link
// out of it is refused as one out of the tree is, a folder that is not one
// is an error, and the folder's tree hash changes only with its files.
func TestGitOpenRevisionDir(t *testing.T) {
	r := newGitTestRepo(t)
	for _, tc := range []struct {
		rev, dir string
		want     map[string]string
	}{
		{"HEAD", "pkg", map[string]string{"a/a.txt": "a v1\n", "link-to-a": "a v1\n", "a/b/deep.txt": "deep\n"}},
		{"HEAD", "pkg/a/", map[string]string{"a.txt": "a v1\n", "b/deep.txt": "deep\n"}},
		{"HEAD", "./pkg/a", map[string]string{"a.txt": "a v1\n"}},
		{"HEAD", "", map[string]string{"README.md": "hello v2\n"}},
		{"HEAD", ".", map[string]string{"README.md": "hello v2\n"}},
		// pkg/a/b/up leads to the top's README.md: out of pkg/a.
		{"HEAD", "pkg/a", map[string]string{"b/up": "ERR open b/up: symlink b/up -> ../../../README.md: " + ErrEscapesRepo.Error()}},
	} {
		fsys, commit, _, err := OpenRevisionDir(r.dir, tc.rev, tc.dir)
		if err != nil {
			t.Fatalf("OpenRevisionDir(%s, %q): %v", tc.rev, tc.dir, err)
		}
		if commit != r.commits[2].String() {
			t.Errorf("OpenRevisionDir(%s, %q): commit %s, want %s", tc.rev, tc.dir, commit, r.commits[2])
		}
		names := slices.Sorted(maps.Keys(tc.want))
		if diff := cmp.Diff(tc.want, gitTestRead(t, fsys, names...)); diff != "" {
			t.Errorf("OpenRevisionDir(%s, %q) (-want +got):\n%s", tc.rev, tc.dir, diff)
		}
	}
	for _, dir := range []string{"nope", "pkg/nope", "README.md", "dirlink", "pkg/a/a.txt/x"} {
		_, _, _, err := OpenRevisionDir(r.dir, "HEAD", dir)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenRevisionDir(HEAD, %q): %v, want an error wrapping fs.ErrNotExist", dir, err)
		}
	}
	// c2 changed the top's README.md and added new.txt; c3 added links at
	// the top and pkg/sneaky: pkg/a is the same tree in all three.
	tree := func(rev, dir string) string {
		_, _, h, err := OpenRevisionDir(r.dir, rev, dir)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if a1, a3 := tree("HEAD~2", "pkg/a"), tree("HEAD", "pkg/a"); a1 != a3 {
		t.Errorf("pkg/a: tree %s at c1, %s at c3, want the same", a1, a3)
	}
	if p2, p3 := tree("HEAD~1", "pkg"), tree("HEAD", "pkg"); p2 == p3 {
		t.Errorf("pkg: the same tree %s at c2 and c3, which added pkg/sneaky", p2)
	}
	if top1, top2 := tree("HEAD~2", ""), tree("HEAD~1", ""); top1 == top2 {
		t.Errorf("the top: the same tree %s at c1 and c2", top1)
	}
}
