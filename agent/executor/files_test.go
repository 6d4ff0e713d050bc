//go:build linux

package executor

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// modeOf is path's permission bits (with setuid, setgid, sticky).
func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// TestUploadFile: data written to path with its permissions whatever the
// umask, missing directories made with dir_permissions, existing ones left
// as they are; an existing file replaced atomically.
func TestUploadFile(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	e := newTestExec(t, nil)
	tests := []struct {
		name              string
		rel, perm, dirPrm string // dirPrm "" and perm "": the defaults
		mode, dirMode     fs.FileMode
	}{
		{"defaults", "a/b/file", "", "", 0o644, 0o755},
		{"given modes", "c/d/file", "0640", "0750", 0o640, 0o750},
		{"three digits", "e/file", "600", "700", 0o600, 0o700},
		{"setgid directory", "f/file", "0444", "2775", 0o444, 0o775 | fs.ModeSetgid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			os.Chmod(root, 0o711)
			path := filepath.Join(root, tt.rel)
			tk := task("upload_file", "path", path, "data", "hello\n")
			if tt.perm != "" {
				tk.Parameters["permissions"] = tt.perm
				tk.Parameters["dir_permissions"] = tt.dirPrm
			}
			r := e.Run(t.Context(), tk)
			if r.Status != Succeeded || r.Message != "wrote "+path+" (6 bytes)" || r.Attempts != 1 {
				t.Fatalf("Run: %+v", r)
			}
			if b, _ := os.ReadFile(path); string(b) != "hello\n" {
				t.Errorf("content %q", b)
			}
			if m := modeOf(t, path); m != tt.mode {
				t.Errorf("file mode %v, want %v", m, tt.mode)
			}
			for d := filepath.Dir(path); d != root; d = filepath.Dir(d) {
				if m := modeOf(t, d); m != tt.dirMode {
					t.Errorf("%s: mode %v, want %v", d, m, tt.dirMode)
				}
			}
			if m := modeOf(t, root); m != 0o711 {
				t.Errorf("an existing directory's mode changed to %v", m)
			}
		})
	}
}

// TestUploadFileAtomic: an existing file is replaced by a rename: a reader
// holding the old file still reads it whole, no temporary file is left,
// and a path that is a directory fails without harm.
func TestUploadFileAtomic(t *testing.T) {
	e := newTestExec(t, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "conf")
	os.WriteFile(path, []byte("old content\n"), 0o600)
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	r := e.Run(t.Context(), task("upload_file", "path", path, "data", "new\n"))
	if r.Status != Succeeded {
		t.Fatalf("Run: %+v", r)
	}
	var oldStat, newStat syscall.Stat_t
	held.Stat()
	syscall.Fstat(int(held.Fd()), &oldStat)
	syscall.Stat(path, &newStat)
	if oldStat.Ino == newStat.Ino {
		t.Error("the file was written in place, not replaced")
	}
	buf := make([]byte, 100)
	n, _ := held.ReadAt(buf, 0)
	if string(buf[:n]) != "old content\n" {
		t.Errorf("the old file reads %q", buf[:n])
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("the new file reads %q", b)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	r = e.Run(t.Context(), task("upload_file", "path", filepath.Join(dir, "sub"), "data", "x", "retries", 0.0))
	if r.Status != Failed || !strings.HasPrefix(r.Message, "writing "+dir+"/sub: rename ") {
		t.Errorf("Run on a directory: %+v", r)
	}
	r = e.Run(t.Context(), task("upload_file", "path", path+"/below", "data", "x", "retries", 0.0))
	if r.Status != Failed || r.Message != path+": not a directory" {
		t.Errorf("Run below a file: %+v", r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %v, want conf and sub", entries)
	}
}

// TestCopyFiles: each file copied with its own or the task's modes; one
// that cannot be copied (missing, a FIFO: refused without blocking) fails
// the task, the others are copied all the same.
func TestCopyFiles(t *testing.T) {
	e := newTestExec(t, nil)
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "a"), []byte("A"), 0o600)
	os.WriteFile(filepath.Join(src, "b"), []byte("B"), 0o600)
	syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600)
	os.Symlink(filepath.Join(src, "b"), filepath.Join(src, "link"))
	r := e.Run(t.Context(), task("copy_files", "permissions", "0640", "dir_permissions", "0700", "files", []any{
		map[string]any{"src": src + "/a", "dst": dst + "/x/a"},
		map[string]any{"src": src + "/link", "dst": dst + "/y/b", "permissions": "0600", "dir_permissions": "0750"},
	}))
	if r.Status != Succeeded || r.Message != "copied 2 files" {
		t.Fatalf("Run: %+v", r)
	}
	for _, c := range []struct {
		path       string
		data       string
		mode, dirM fs.FileMode
	}{{dst + "/x/a", "A", 0o640, 0o700}, {dst + "/y/b", "B", 0o600, 0o750}} {
		if b, _ := os.ReadFile(c.path); string(b) != c.data {
			t.Errorf("%s: %q", c.path, b)
		}
		if m := modeOf(t, c.path); m != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, m, c.mode)
		}
		if m := modeOf(t, filepath.Dir(c.path)); m != c.dirM {
			t.Errorf("%s: mode %v, want %v", filepath.Dir(c.path), m, c.dirM)
		}
	}
	r = e.Run(t.Context(), task("copy_files", "files", []any{
		map[string]any{"src": src + "/missing", "dst": dst + "/m"},
		map[string]any{"src": src + "/fifo", "dst": dst + "/f"},
		map[string]any{"src": src + "/a", "dst": dst + "/z"},
	}))
	want := "2 of 3 files not copied: open " + src + "/missing: no such file or directory; " + src + "/fifo: not a regular file"
	if r.Status != Failed || r.Message != want {
		t.Errorf("Run: %+v\nwant %q", r, want)
	}
	if b, _ := os.ReadFile(dst + "/z"); string(b) != "A" {
		t.Errorf("the good file of a failed task: %q", b)
	}
	if exists(dst+"/m") || exists(dst+"/f") {
		t.Error("a file that failed was written")
	}
}

// TestSync: rsync -c -r --delete -l: dst made if missing, then equal to
// src (an extra file deleted, a symbolic link kept as one); a failing
// rsync fails the task with its exit status.
func TestSync(t *testing.T) {
	testenv.Tool(t, "rsync", "apt-get install rsync")
	e := newTestExec(t, nil)
	src, root := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "a"), []byte("A"), 0o644)
	os.WriteFile(filepath.Join(src, "sub", "b"), []byte("B"), 0o644)
	os.Symlink("a", filepath.Join(src, "link"))
	dst := filepath.Join(root, "new", "modules")
	for _, extra := range []bool{false, true} {
		if extra {
			os.WriteFile(filepath.Join(dst, "extra"), []byte("x"), 0o644)
		}
		r := e.Run(t.Context(), task("sync", "src", src+"/", "dst", dst))
		if r.Status != Succeeded || r.Message != "rsync exited 0" {
			t.Fatalf("Run: %+v", r)
		}
		var got []string
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, _ error) error {
			rel, _ := filepath.Rel(dst, p)
			got = append(got, rel+":"+d.Type().String())
			return nil
		})
		if strings.Join(got, " ") != ".:d--------- a:---------- link:L--------- sub:d--------- sub/b:----------" {
			t.Errorf("dst holds %v", got)
		}
	}
	r := e.Run(t.Context(), task("sync", "src", src+"/missing/", "dst", dst, "retries", 0.0))
	if r.Status != Failed || r.Message != "rsync exited 23" || !strings.Contains(string(r.Output), "missing") {
		t.Errorf("Run: %+v", r)
	}
}
