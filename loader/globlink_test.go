package loader

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// countingFS counts the directories listed through it, keeping the link
// operations of the file system it wraps (the loader resolves links with them).
type countingFS struct {
	fsys  fs.FS
	lists atomic.Int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.fsys.Open(name)
	if err == nil {
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			c.lists.Add(1)
		}
	}
	return f, err
}

func (c *countingFS) ReadLink(name string) (string, error) {
	return c.fsys.(fs.ReadLinkFS).ReadLink(name)
}

func (c *countingFS) Lstat(name string) (fs.FileInfo, error) {
	return c.fsys.(fs.ReadLinkFS).Lstat(name)
}

// A glob never leaves the repository: `**` does not descend through a link to a
// directory outside (here a tree of 200 directories holding a YAML file), and a
// link in the glob's fixed part that leaves the repository is an error at the
// tasks_path, naming the link and no host path below it.
func TestGlobDoesNotFollowDirectoryLinksOutOfTheRepository(t *testing.T) {
	top := t.TempDir()
	outside := filepath.Join(top, "outside")
	for i := range 200 {
		dir := filepath.Join(outside, "d", strings.Repeat("x", i%7+1), string(rune('a'+i%26))+filepath.FromSlash("/n"+string(rune('0'+i%10))))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "d", "host.yaml"), []byte("- {id: host-secret}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(top, "repo")
	write := func(name, data string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("p/g2/a.yaml", "- {id: a}\n")
	write("p/g2/sub/b.yaml", "- {id: b}\n")
	if err := os.Symlink(outside, filepath.Join(root, "p/g2/root")); err != nil {
		testenv.Unavailable(t, "symlinks unsupported: %v", err)
	}
	if err := os.Symlink("../g2", filepath.Join(root, "p/g2/sub/loop")); err != nil {
		t.Fatal(err)
	}

	t.Run("double star", func(t *testing.T) {
		write("p/metadata.yaml", "tasks_path: 'g2/**/*.yaml'\n")
		fsys := &countingFS{fsys: os.DirFS(root)}
		v, diags := newPathLoader(newRepoFS(fsys, 0)).expandFile("p/metadata.yaml", fileRange("p/metadata.yaml"), nil)
		checkDecoded(t, v, diags, map[string]any{"tasks": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}}, nil)
		if n := fsys.lists.Load(); n > 5 {
			t.Errorf("the glob listed %d directories; the repository has 3", n)
		}
	})
	t.Run("link in the fixed part", func(t *testing.T) {
		write("p/metadata.yaml", "tasks_path: 'g2/root/d/**/*.yaml'\n")
		fsys := &countingFS{fsys: os.DirFS(root)}
		_, diags := newPathLoader(newRepoFS(fsys, 0)).expandFile("p/metadata.yaml", fileRange("p/metadata.yaml"), nil)
		if len(diags) != 1 || !strings.HasPrefix(diags[0].Summary, "tasks_path: symlink p/g2/root points to ") ||
			!strings.HasSuffix(diags[0].Summary, ": path escapes the repository") || diags[0].Subject.Start.Line != 1 {
			t.Errorf("want one error at tasks_path about the link, got %v", diags)
		}
		if n := fsys.lists.Load(); n > 2 {
			t.Errorf("the glob listed %d directories", n)
		}
	})
}
