//go:build linux

package state

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// benchSet is a set of n files of size bytes each (distinct contents), laid
// out as node files are (<cluster>/nodes/<node>/<graph>.yaml, one node
// directory per file, in 4 clusters), with file changed varied by tag.
func benchSet(n, size int, changed int, tag string) map[string][]byte {
	files := make(map[string][]byte, n)
	for i := range n {
		name := fmt.Sprintf("c%d/nodes/node-%04d/deployment.yaml", i%4, i)
		line := fmt.Sprintf("node-%04d: task-%d requires sync stage %d\n", i, i, i%7)
		if i == changed {
			line = tag + line
		}
		files[name] = []byte(strings.Repeat(line, size/len(line)+1)[:size])
	}
	return files
}

func publishBytes(w *Workdir, l *Lock, serial int64, files map[string][]byte) error {
	st := Empty()
	st.Serial = serial
	for name := range files {
		st.Artifacts[name] = "x"
	}
	return w.Publish(l, st, func(put func(string, []byte) error) error {
		for name, data := range files {
			if err := put(name, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// writtenBytes is what this process has written so far (wchar of
// /proc/self/io: every write(2), whatever the file system); -1 without it.
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// inodeBlocks maps each inode under the roots (files, directories and
// symlinks, the way du counts them: a hard-linked file once) to the bytes of
// its blocks. A symlink to a directory (a shared node directory) is followed:
// what a set holds through it counts as the set's.
func inodeBlocks(t testing.TB, roots ...string) map[uint64]int64 {
	t.Helper()
	out := map[uint64]int64{}
	var walk func(root string)
	walk = func(root string) {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			sys := fi.Sys().(*syscall.Stat_t)
			out[sys.Ino] = sys.Blocks * 512
			if fi.Mode()&fs.ModeSymlink != 0 {
				if ti, err := os.Stat(p); err == nil && ti.IsDir() {
					target, err := filepath.EvalSymlinks(p)
					if err != nil {
						return err
					}
					walk(target)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range roots {
		walk(root)
	}
	return out
}

// newBlocks is the disk the set dir takes beyond what the sets before it do:
// the blocks of its inodes found in none of them.
func newBlocks(t testing.TB, dir string, before ...string) int64 {
	old := inodeBlocks(t, before...)
	var n int64
	for ino, b := range inodeBlocks(t, dir) {
		if _, ok := old[ino]; !ok {
			n += b
		}
	}
	return n
}

func sum(m map[uint64]int64) int64 {
	var n int64
	for _, b := range m {
		n += b
	}
	return n
}

// BenchmarkPublishFull publishes 2,000 files of 16 KiB into a new work
// directory (a cold apply's writes).
func BenchmarkPublishFull(b *testing.B) {
	files := benchSet(2000, 16<<10, -1, "")
	var written, disk int64
	for b.Loop() {
		b.StopTimer()
		w := Open(filepath.Join(b.TempDir(), "wd"))
		l, err := w.Lock(context.Background(), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := writtenBytes()
		if err := publishBytes(w, l, 1, files); err != nil {
			b.Fatal(err)
		}
		written += writtenBytes() - before
		b.StopTimer()
		disk += sum(inodeBlocks(b, w.Dir))
		l.Unlock()
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
	b.ReportMetric(float64(disk)/float64(b.N), "disk-B/op")
}

// BenchmarkPublishOneFileChange publishes a set of 2,000 files of 16 KiB, then
// measures the next publishes, each changing one file: the time, the bytes
// written, and the disk the new set adds to the previous one (blocks of inodes
// the previous set does not share, its directories included).
func BenchmarkPublishOneFileChange(b *testing.B) {
	w := Open(filepath.Join(b.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Unlock()
	if err := publishBytes(w, l, 1, benchSet(2000, 16<<10, -1, "")); err != nil {
		b.Fatal(err)
	}
	full := sum(inodeBlocks(b, w.SetDir(1)))
	serial := int64(1)
	var written, added int64
	for b.Loop() {
		b.StopTimer()
		serial++
		files := benchSet(2000, 16<<10, int(serial)%2000, "changed "+strconv.FormatInt(serial, 10))
		b.StartTimer()
		before := writtenBytes()
		if err := publishBytes(w, l, serial, files); err != nil {
			b.Fatal(err)
		}
		written += writtenBytes() - before
		b.StopTimer()
		added += newBlocks(b, w.SetDir(serial), w.SetDir(serial-1))
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
	b.ReportMetric(float64(added)/float64(b.N), "new-disk-B/op")
	b.ReportMetric(float64(full), "full-set-disk-B")
}
