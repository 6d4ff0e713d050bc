//go:build linux

package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/gittest"
)

// tree lists every path under dir with its type and size.
func tree(t *testing.T, dir string) map[string]string {
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

func unchanged(t *testing.T, what string, before, after map[string]string) {
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

// TestWorkdirForeignRefused: a directory that is not fuelsync's (no marker, and
// something fuelsync never makes in it) is refused as a work directory before
// anything is written into it, the lock file included: a git directory (the
// store's pruning removed its loose objects), a bare repository, a directory
// of someone's files.
func TestWorkdirForeignRefused(t *testing.T) {
	dir, _ := gittest.Quickstart(t) // loose objects in .git/objects
	bare := filepath.Join(t.TempDir(), "bare.git")
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, ".git"), dir, bare, home} {
		before := tree(t, d)
		w := Open(d)
		if _, err := w.ReadState(); err == nil || !strings.Contains(err.Error(), "refusing to use "+d+" as the work directory") {
			t.Errorf("%s: ReadState: %v, want it refused", d, err)
		}
		l, err := w.Lock(context.Background(), "test", 0)
		if err == nil {
			err = publish(t, w, l, 1, map[string]string{"c/nodes/n/default.yaml": "x", "manifest.json": "{}"})
			l.Unlock()
		}
		if err == nil || !strings.Contains(err.Error(), "refusing to use "+d+" as the work directory") || !strings.Contains(err.Error(), "Nothing was changed") {
			t.Errorf("%s: Lock: %v, want it refused", d, err)
		}
		unchanged(t, d, before, tree(t, d))
	}
}

// TestWorkdirAdoptsOlderLayout: a work directory written before the marker (the
// exact layout of a work directory) is adopted: the marker is written under
// the lock, and publishing goes on. With a file fuelsync does not make in it,
// it is refused, naming that file.
func TestWorkdirAdoptsOlderLayout(t *testing.T) {
	w := Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	for n := int64(1); n <= 3; n++ {
		if err := publish(t, w, l, n, map[string]string{"c/nodes/n/default.yaml": "x" + strconv.FormatInt(n, 10), "c/cluster.yaml": "c", "manifest.json": "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Unlock()
	marker := filepath.Join(w.Dir, ".fuelsync-workdir")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no marker after publishing: %v", err)
	}
	// As an older fuelsync left it.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	w = Open(w.Dir)
	l, err = w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatalf("an older work directory: %v", err)
	}
	if err := publish(t, w, l, 4, map[string]string{"c/nodes/n/default.yaml": "x4", "manifest.json": "{}"}); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the older work directory was not adopted: %v", err)
	}

	os.Remove(marker)
	if err := os.MkdirAll(filepath.Join(w.Dir, "objects", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir, "objects", "ab", "notes"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, w.Dir)
	w = Open(w.Dir)
	if _, err := w.Lock(context.Background(), "test", 0); err == nil || !strings.Contains(err.Error(), "it holds objects/ab/notes (a file)") {
		t.Errorf("a work directory with a file fuelsync does not make: %v", err)
	}
	unchanged(t, "the work directory", before, tree(t, w.Dir))
}

// TestPruneRemovesOnlyItsOwnNames: in its own work directory too, the store
// removes only the names it makes (objects/<2 hex>/<64 hex>, trees/<32 hex>,
// artifacts/<serial>, its temporary names), whatever else is there and however
// many links it has.
func TestPruneRemovesOnlyItsOwnNames(t *testing.T) {
	w := Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if err := publish(t, w, l, 1, map[string]string{"c/nodes/n/default.yaml": "x", "manifest.json": "{}"}); err != nil {
		t.Fatal(err)
	}
	planted := []string{
		"objects/ab/" + strings.Repeat("cd", 19), // a git object's name
		"objects/ab/" + strings.Repeat("c", 64),  // 64 digits, not beginning with ab
		"objects/ab/.tmp-notes",
		"objects/pack/pack-1.pack",
		"objects/AB/" + "ab" + strings.Repeat("0", 62),
		"trees/" + strings.Repeat("A", 32) + "/f",
		"trees/.tmp-mine/f",
		"artifacts/.tmp-mine/f",
		"artifacts/.link-mine",
		".tmp-mine",
		".link-mine",
	}
	for _, p := range planted {
		full := filepath.Join(w.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for n := int64(2); n <= 8; n++ {
		if err := publish(t, w, l, n, map[string]string{"c/nodes/n/default.yaml": "x" + strconv.FormatInt(n, 10), "manifest.json": "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	for _, p := range planted {
		if _, err := os.Stat(filepath.Join(w.Dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// TestMarkedWorkdirLinksRefused: a work directory with the marker whose
// artifacts/ (or objects/, trees/, nodesets/) is a symlink is refused: the pruning would
// remove in the directory it points to (a hostile repository can commit a
// .fuelsync/ with a marker and such a link).
func TestMarkedWorkdirLinksRefused(t *testing.T) {
	for _, sub := range []string{"artifacts", "objects", "trees", "nodesets"} {
		t.Run(sub, func(t *testing.T) {
			elsewhere := t.TempDir()
			for n := 1; n <= 9; n++ {
				d := filepath.Join(elsewhere, strconv.Itoa(n))
				if err := os.MkdirAll(filepath.Join(d, "ab"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "f"), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wd := filepath.Join(t.TempDir(), "wd")
			os.Mkdir(wd, 0o755)
			if err := os.WriteFile(filepath.Join(wd, ".fuelsync-workdir"), []byte("fuelsync work directory, format 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(wd, sub)); err != nil {
				t.Fatal(err)
			}
			before := tree(t, elsewhere)
			w := Open(wd)
			l, err := w.Lock(context.Background(), "test", 0)
			if err == nil {
				for n := int64(1); n <= 7 && err == nil; n++ {
					err = publish(t, w, l, n, map[string]string{"c/nodes/n/default.yaml": "x" + strconv.FormatInt(n, 10), "manifest.json": "{}"})
				}
				l.Unlock()
			}
			if err == nil || !strings.Contains(err.Error(), "its "+sub+" is a symlink, not a directory") {
				t.Errorf("a work directory whose %s is a symlink: %v", sub, err)
			}
			unchanged(t, "the directory "+sub+" points to", before, tree(t, elsewhere))
		})
	}
}

// TestLayoutProblem: what a work directory may hold, each name with its type
// (the crash leftovers of each step among them), and the first entry that
// does not fit, with why.
func TestLayoutProblem(t *testing.T) {
	tree32, sum := strings.Repeat("0a", 16), "ab"+strings.Repeat("c", 62)
	for _, tc := range []struct {
		name    string
		entries map[string]string // path → file, dir or link
		entry   string            // the entry refused, "" when all fit
		why     string
	}{
		{"the top's leftovers", map[string]string{".link-state.json-0123abcd": "link", "state.json.tmp-42": "file", "state.json": "link", "lock": "file", "cache": "dir"}, "", ""},
		{"artifacts", map[string]string{"artifacts/3": "dir", "artifacts/current": "link", "artifacts/.tmp-4-123": "dir", "artifacts/.link-current-0123abcd": "link"}, "", ""},
		{"trees", map[string]string{"trees/" + tree32: "dir", "trees/.tmp-" + tree32 + "-0123abcd": "dir"}, "", ""},
		{"nodesets", map[string]string{"nodesets/" + tree32: "dir", "nodesets/.tmp-" + tree32 + "-0123abcd": "dir"}, "", ""},
		{"nodesets a file", map[string]string{"nodesets": "file"}, "nodesets", "not a directory"},
		{"a nodeset that is a file", map[string]string{"nodesets/" + tree32: "file"}, "nodesets/" + tree32, "a file"},
		{"objects", map[string]string{"objects/ab/" + sum: "file", "objects/ab/.tmp-" + sum + "-0123abcd": "file"}, "", ""},
		{"state.json a directory", map[string]string{"state.json": "dir"}, "state.json", "neither a file nor a link"},
		{"lock a link", map[string]string{"lock": "link"}, "lock", "not a regular file"},
		{"trees a file", map[string]string{"trees": "file"}, "trees", "not a directory"},
		{"a state link leftover that is a file", map[string]string{".link-state.json-0123abcd": "file"}, ".link-state.json-0123abcd", "a file"},
		{"current a directory", map[string]string{"artifacts/current": "dir"}, "artifacts/current", "a directory"},
		{"a set leftover that is a file", map[string]string{"artifacts/.tmp-4-123": "file"}, "artifacts/.tmp-4-123", "a file"},
		{"a tree leftover that is a file", map[string]string{"trees/.tmp-" + tree32 + "-0123abcd": "file"}, "trees/.tmp-" + tree32 + "-0123abcd", "a file"},
		{"an object that is a directory", map[string]string{"objects/ab/" + sum: "dir"}, "objects/ab/" + sum, "a directory"},
		{"an object of another fan", map[string]string{"objects/cd/" + sum: "file"}, "objects/cd/" + sum, "a file"},
		{"an object leftover of another fan", map[string]string{"objects/cd/.tmp-" + sum + "-0123abcd": "file"}, "objects/cd/.tmp-" + sum + "-0123abcd", "a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, kind := range tc.entries {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				switch kind {
				case "file":
					err = os.WriteFile(full, nil, 0o644)
				case "dir":
					err = os.Mkdir(full, 0o755)
				case "link":
					err = os.Symlink("x", full)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			err := layoutProblem(dir)
			var nw *NotWorkdirError
			switch {
			case tc.entry == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.entry != "" && (!errors.As(err, &nw) || nw.Entry != filepath.FromSlash(tc.entry) || nw.Why != tc.why):
				t.Errorf("got %v, want %s refused (%s)", err, tc.entry, tc.why)
			}
		})
	}
}
