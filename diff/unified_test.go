package diff

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/internal/testenv"
)

// numbered returns the lines "1\n" to "n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// replaced returns s with its lines (counted from 1) replaced as given.
func replaced(s string, lines map[int]string) string {
	ls := testLines(s)
	for n, l := range lines {
		ls[n-1] = l
	}
	return strings.Join(ls, "")
}

func TestUnified(t *testing.T) {
	ten := numbered(10)
	for _, tc := range []struct {
		name     string
		old, new []byte
		context  int
		want     string
		added    int
		removed  int
	}{
		{name: "identical", old: []byte("a\nb\n"), new: []byte("a\nb\n"), context: 3, want: ""},
		{name: "both missing", old: nil, new: nil, context: 3, want: ""},
		{name: "both empty", old: []byte{}, new: []byte{}, context: 3, want: ""},
		{name: "identical without final newline", old: []byte("a\nb"), new: []byte("a\nb"), context: 3, want: ""},

		{name: "add at start", old: []byte(ten), new: []byte("0\n" + ten), context: 3, added: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n"},
		{name: "add in the middle", old: []byte(ten), new: []byte(replaced(ten, map[int]string{5: "5\n5.5\n"})), context: 3, added: 1,
			want: "--- a/f\n+++ b/f\n@@ -3,6 +3,7 @@\n 3\n 4\n 5\n+5.5\n 6\n 7\n 8\n"},
		{name: "add at end", old: []byte(ten), new: []byte(ten + "11\n12\n"), context: 3, added: 2,
			want: "--- a/f\n+++ b/f\n@@ -8,3 +8,5 @@\n 8\n 9\n 10\n+11\n+12\n"},
		{name: "delete at start", old: []byte(ten), new: []byte(replaced(ten, map[int]string{1: "", 2: ""})), context: 3, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -1,5 +1,3 @@\n-1\n-2\n 3\n 4\n 5\n"},
		{name: "delete in the middle", old: []byte(ten), new: []byte(replaced(ten, map[int]string{6: ""})), context: 3, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -3,7 +3,6 @@\n 3\n 4\n 5\n-6\n 7\n 8\n 9\n"},
		{name: "delete at end", old: []byte(ten), new: []byte(numbered(9)), context: 3, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -7,4 +7,3 @@\n 7\n 8\n 9\n-10\n"},
		{name: "change", old: []byte(ten), new: []byte(replaced(ten, map[int]string{5: "five\n", 6: "six\n"})), context: 3, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -2,8 +2,8 @@\n 2\n 3\n 4\n-5\n-6\n+five\n+six\n 7\n 8\n 9\n"},
		{name: "one line changed", old: []byte("a\n"), new: []byte("b\n"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"},

		{name: "newline added at end", old: []byte("a\nb"), new: []byte("a\nb\n"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "newline removed at end", old: []byte("a\nb\n"), new: []byte("a\nb"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"},
		{name: "no newline at end of either, last line changed", old: []byte("a\nb"), new: []byte("a\nc"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{name: "no newline at end of either, last line in context", old: []byte("a\nb\nc"), new: []byte("x\nb\nc"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+x\n b\n c\n\\ No newline at end of file\n"},
		{name: "no newline at end of either, last line out of context", old: []byte("a\nb\nc"), new: []byte("x\nb\nc"), context: 0, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+x\n"},
		{name: "line added after a last line without newline", old: []byte("a"), new: []byte("a\nb\n"), context: 3, added: 2, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n-a\n\\ No newline at end of file\n+a\n+b\n"},

		{name: "new file", old: nil, new: []byte("a\nb\n"), context: 3, added: 2,
			want: "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{name: "new file without final newline", old: nil, new: []byte("a"), context: 3, added: 1,
			want: "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+a\n\\ No newline at end of file\n"},
		{name: "new empty file", old: nil, new: []byte{}, context: 3,
			want: "--- /dev/null\n+++ b/f\n"},
		{name: "deleted file", old: []byte("a\nb\n"), new: nil, context: 3, removed: 2,
			want: "--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{name: "deleted empty file", old: []byte{}, new: nil, context: 3,
			want: "--- a/f\n+++ /dev/null\n"},
		{name: "file emptied", old: []byte("a\n"), new: []byte{}, context: 3, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n"},
		{name: "empty file filled", old: []byte{}, new: []byte("a\n"), context: 3, added: 1,
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n"},

		// Two changes 6 lines apart share their context with -U3; 7 apart they don't.
		{name: "context 3, hunks merge at a gap of 6",
			old: []byte(numbered(20)), new: []byte(replaced(numbered(20), map[int]string{5: "x\n", 12: "y\n"})), context: 3, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -2,14 +2,14 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n 9\n 10\n 11\n-12\n+y\n 13\n 14\n 15\n"},
		{name: "context 3, hunks split at a gap of 7",
			old: []byte(numbered(20)), new: []byte(replaced(numbered(20), map[int]string{5: "x\n", 13: "y\n"})), context: 3, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n@@ -10,7 +10,7 @@\n 10\n 11\n 12\n-13\n+y\n 14\n 15\n 16\n"},
		{name: "context 1, hunks merge at a gap of 2",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{3: "x\n", 6: "y\n"})), context: 1, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -2,6 +2,6 @@\n 2\n-3\n+x\n 4\n 5\n-6\n+y\n 7\n"},
		{name: "context 1, hunks split at a gap of 3",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{3: "x\n", 7: "y\n"})), context: 1, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n 2\n-3\n+x\n 4\n@@ -6,3 +6,3 @@\n 6\n-7\n+y\n 8\n"},
		{name: "context 0, a line apart",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{3: "x\n", 5: "y\n"})), context: 0, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -3 +3 @@\n-3\n+x\n@@ -5 +5 @@\n-5\n+y\n"},
		{name: "context 0, adjacent changes are one hunk",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{3: "x\n", 4: "y\n"})), context: 0, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -3,2 +3,2 @@\n-3\n-4\n+x\n+y\n"},
		{name: "context 0, insertion counts from the line before",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{4: "4\nx\ny\n"})), context: 0, added: 2,
			want: "--- a/f\n+++ b/f\n@@ -4,0 +5,2 @@\n+x\n+y\n"},
		{name: "context 0, deletion counts from the line before",
			old: []byte(ten), new: []byte(replaced(ten, map[int]string{5: ""})), context: 0, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -5 +4,0 @@\n-5\n"},
		{name: "context 0, insertion at the start",
			old: []byte(ten), new: []byte("0\n" + ten), context: 0, added: 1,
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+0\n"},
		{name: "context larger than the file",
			old: []byte("a\nb\nc\n"), new: []byte("a\nx\nc\n"), context: 1000, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"},
		{name: "huge context",
			old: []byte("a\nb\nc\n"), new: []byte("a\nx\nc\n"), context: 1 << 62, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"},
		{name: "negative context counts as 0",
			old: []byte("a\nb\nc\n"), new: []byte("a\nx\nc\n"), context: -2, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+x\n"},

		{name: "CRLF lines kept as they are",
			old: []byte("a\r\nb\r\nc\r\n"), new: []byte("a\r\nB\r\nc\r\n"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n"},
		{name: "CRLF to LF is a change of every line",
			old: []byte("a\r\nb\r\n"), new: []byte("a\nb\n"), context: 3, added: 2, removed: 2,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+b\n"},
		{name: "a lone CR is not a line end",
			old: []byte("a\rb\n"), new: []byte("a\rc\n"), context: 3, added: 1, removed: 1,
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\rb\n+a\rc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Unified("f", tc.old, tc.new, tc.context)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Unified (-want +got):\n%s", diff)
			}
			fd := File("f", tc.old, tc.new, clampContext(tc.context, tc.old, tc.new))
			if fd.Text != got || fd.Added != tc.added || fd.Removed != tc.removed {
				t.Errorf("File: +%d -%d (want +%d -%d), text the same as Unified's: %t", fd.Added, fd.Removed, tc.added, tc.removed, fd.Text == got)
			}
			if got == "" {
				return
			}
			if err := checkPatch(string(tc.old), string(tc.new), fd, clampContext(tc.context, tc.old, tc.new)); err != nil {
				t.Error(err)
			}
			// With both files present, GNU diff agrees hunk for hunk.
			if tc.old != nil && tc.new != nil && tc.context < 1000 {
				if want, ok := gnuHunks(t, string(tc.old), string(tc.new), max(tc.context, 0)); ok {
					if diff := cmp.Diff(want, hunksOf(got)); diff != "" {
						t.Errorf("hunks differ from diff -u's (-gnu +ours):\n%s", diff)
					}
				}
			}
		})
	}
}

// TestUnifiedGolden diffs rendered artifacts, testdata/unified/<case>/old.<ext>
// and new.<ext>, against the case's want.golden ("+added -removed" then the diff),
// and checks that the diff is deterministic.
func TestUnifiedGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "unified", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			oldPath, err := filepath.Glob(filepath.Join(dir, "old.*"))
			if err != nil || len(oldPath) != 1 {
				t.Fatalf("want one old.<ext> file in %s, have %v", dir, oldPath)
			}
			ext := filepath.Ext(oldPath[0])
			old, err := os.ReadFile(oldPath[0])
			if err != nil {
				t.Fatal(err)
			}
			new, err := os.ReadFile(filepath.Join(dir, "new"+ext))
			if err != nil {
				t.Fatal(err)
			}
			name := "demo/" + filepath.Base(dir) + ext
			fd := File(name, old, new, 3)
			got := fmt.Sprintf("+%d -%d\n%s", fd.Added, fd.Removed, fd.Text)
			golden.Check(t, filepath.Join(dir, "want.golden"), []byte(got))
			if again := Unified(name, old, new, 3); again != fd.Text {
				t.Error("a second run gave a different diff")
			}
			if err := checkPatch(string(old), string(new), fd, 3); err != nil {
				t.Error(err)
			}
		})
	}
}

// randomFile returns up to 40 lines drawn from an alphabet of the given size,
// some with CRLF ends, and sometimes without a newline at the end.
func randomFile(rnd *rand.Rand, alphabet int) string {
	var b strings.Builder
	for range rnd.IntN(40) {
		fmt.Fprintf(&b, "line %d", rnd.IntN(alphabet))
		if rnd.IntN(10) == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	s := b.String()
	if rnd.IntN(5) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// editedFile returns n distinct lines and a copy of them with lines kept,
// deleted, replaced and inserted at random, the new lines unlike any old one, so
// that the longest common subsequence is unique and every minimal diff of the
// two is the same one.
func editedFile(rnd *rand.Rand) (old, new string) {
	var o, n strings.Builder
	fresh := 0
	for i := range rnd.IntN(60) {
		line := fmt.Sprintf("old %d\n", i)
		o.WriteString(line)
		switch rnd.IntN(8) {
		case 0: // deleted
		case 1: // replaced
			fmt.Fprintf(&n, "new %d\n", fresh)
			fresh++
		case 2: // lines inserted before
			for range 1 + rnd.IntN(3) {
				fmt.Fprintf(&n, "new %d\n", fresh)
				fresh++
			}
			n.WriteString(line)
		default:
			n.WriteString(line)
		}
	}
	if rnd.IntN(4) == 0 {
		fmt.Fprintf(&n, "new %d\n", fresh)
	}
	old, new = o.String(), n.String()
	if rnd.IntN(6) == 0 {
		old = strings.TrimSuffix(old, "\n")
	}
	if rnd.IntN(6) == 0 {
		new = strings.TrimSuffix(new, "\n")
	}
	return old, new
}

// TestUnifiedApplies checks over random files that applying the diff to the old
// file gives the new one, with git's hunk conventions; and, when GNU diff is
// installed, that diff -u finds as many added and removed lines. For texts with
// repeated lines both may pick different alignments of the same size (the
// common line kept can be another one), so only the counts are compared; for
// texts whose minimal diff is unique, the hunks must be identical.
func TestUnifiedApplies(t *testing.T) {
	type testCase struct {
		old, new string
		context  int
		unique   bool // the minimal diff is unique
	}
	var cases []testCase
	for seed := range 400 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 0x756e6966))
		var tc testCase
		if seed%2 == 0 {
			alphabet := []int{2, 5, 10, 1000}[rnd.IntN(4)]
			tc.old, tc.new = randomFile(rnd, alphabet), randomFile(rnd, alphabet)
			if rnd.IntN(4) == 0 { // mostly alike
				tc.new = tc.old[:rnd.IntN(len(tc.old)+1)] + randomFile(rnd, alphabet)
			}
		} else {
			tc.old, tc.new = editedFile(rnd)
			tc.unique = true
		}
		tc.context = rnd.IntN(5)
		cases = append(cases, tc)
	}

	var gnu []gnuResult
	if _, ok := testenv.Have(t, diffCommand, "GNU diffutils: apt-get install diffutils"); ok {
		pairs := make([][3]string, len(cases))
		for i, tc := range cases {
			pairs[i] = [3]string{tc.old, tc.new, strconv.Itoa(tc.context)}
		}
		gnu = runGNUDiff(t, pairs)
	} else {
		t.Logf("no %s: not compared with GNU diff", diffCommand)
	}

	for i, tc := range cases {
		fd := File("f", []byte(tc.old), []byte(tc.new), tc.context)
		if tc.old == tc.new {
			if fd.Text != "" || fd.Added != 0 || fd.Removed != 0 {
				t.Errorf("case %d: a diff of equal texts: %+v", i, fd)
			}
			continue
		}
		if err := checkPatch(tc.old, tc.new, fd, tc.context); err != nil {
			t.Errorf("case %d: %v\nold %q\nnew %q\ncontext %d\n%s", i, err, tc.old, tc.new, tc.context, fd.Text)
			continue
		}
		if gnu == nil {
			continue
		}
		g := gnu[i]
		if g.added != fd.Added || g.removed != fd.Removed {
			t.Errorf("case %d: +%d -%d, diff -u says +%d -%d\n%s\n%s", i, fd.Added, fd.Removed, g.added, g.removed, fd.Text, strings.Join(g.hunks, ""))
		}
		if tc.unique {
			if diff := cmp.Diff(g.hunks, hunksOf(fd.Text)); diff != "" {
				t.Errorf("case %d: hunks differ from diff -u's (-gnu +ours):\n%s", i, diff)
			}
		}
	}
}

// TestUnifiedLarge diffs a 2 MB artifact of 50,000 lines with a change every 40
// lines and a moved block: well under a second (a step quadratic in the number
// of lines would show here).
func TestUnifiedLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	old, new := largeFiles()
	start := time.Now()
	fd := File("large.yaml", []byte(old), []byte(new), 3)
	elapsed := time.Since(start)
	t.Logf("%d bytes, %d lines: +%d -%d in %v", len(old), strings.Count(old, "\n"), fd.Added, fd.Removed, elapsed)
	if err := checkPatch(old, new, fd, 3); err != nil {
		t.Fatal(err)
	}
	// 1,245 lines changed (the 1,250 every 40th but 5 in the moved block) and
	// 200 moved.
	if fd.Added != 1445 || fd.Removed != 1445 {
		t.Errorf("+%d -%d, want +1445 -1445", fd.Added, fd.Removed)
	}
}

func BenchmarkUnified(b *testing.B) {
	old, new := largeFiles()
	oldB, newB := []byte(old), []byte(new)
	b.SetBytes(int64(len(old) + len(new)))
	for b.Loop() {
		File("large.yaml", oldB, newB, 3)
	}
}

// largeFiles returns a rendered-artifact-like file of 50,000 lines and a copy
// with every 40th line changed and 200 lines moved from near the start to near
// the end.
func largeFiles() (old, new string) {
	var o, n strings.Builder
	var moved []string
	for i := range 50000 {
		line := fmt.Sprintf("  - {id: t%05d, run: restart u%d, after: t%05d}\n", i, i%97, max(i-1, 0))
		o.WriteString(line)
		switch {
		case i >= 1000 && i < 1200:
			moved = append(moved, line)
		case i == 48000:
			n.WriteString(strings.Join(moved, ""))
			n.WriteString(line)
		case i%40 == 7:
			n.WriteString(strings.Replace(line, "restart", "reload", 1))
		default:
			n.WriteString(line)
		}
	}
	return o.String(), n.String()
}

// FuzzUnified: for any two files, either of which may be missing, and any
// context, Unified does not panic, is empty only for equal files, and applies.
func FuzzUnified(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nx\nc\n"), 3, true, true)
	f.Add([]byte("a\nb"), []byte("a\nb\n"), 0, true, true)
	f.Add([]byte(""), []byte("x"), 1, false, true)
	f.Add([]byte("x\r\ny\r\n"), []byte(""), -5, true, false)
	f.Add([]byte("\n\n\n"), []byte("\n\n"), 1<<62, true, true)
	f.Fuzz(func(t *testing.T, old, new []byte, context int, oldExists, newExists bool) {
		old, new = bytes.Clone(old), bytes.Clone(new)
		if !oldExists {
			old = nil
		} else if old == nil {
			old = []byte{}
		}
		if !newExists {
			new = nil
		} else if new == nil {
			new = []byte{}
		}
		got := Unified("f", old, new, context)
		if bytes.Equal(old, new) && oldExists == newExists {
			if got != "" {
				t.Fatalf("a diff of equal files:\n%s", got)
			}
			return
		}
		wantHeader := "--- a/f\n+++ b/f\n"
		if !oldExists {
			wantHeader = strings.Replace(wantHeader, "a/f", "/dev/null", 1)
		}
		if !newExists {
			wantHeader = strings.Replace(wantHeader, "b/f", "/dev/null", 1)
		}
		if !strings.HasPrefix(got, wantHeader) {
			t.Fatalf("headers: %q", got)
		}
		fd := File("f", old, new, clampContext(context, old, new))
		if fd.Text != got {
			t.Fatalf("File and Unified differ:\n%s\n%s", fd.Text, got)
		}
		if err := checkPatch(string(old), string(new), fd, clampContext(context, old, new)); err != nil {
			t.Fatalf("%v\nold %q\nnew %q\n%s", err, old, new, got)
		}
	})
}

// testLines splits s after each newline; a last line without one is kept.
func testLines(s string) []string {
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@\n$`)

const noNewline = "\\ No newline at end of file\n"

// checkPatch applies fd.Text, a unified diff of one file, to old the way
// patch(1) would, and checks that it gives new; that its added and removed lines
// are fd.Added and fd.Removed; and that it follows git's conventions with the given context:
// hunk headers "@@ -l,s +l,s @@" whose sizes are those of the bodies, without
// ",1", with the line before for an empty side; "\ No newline at end of file"
// only after a last line; exactly context lines of context at both ends of a
// hunk but at the ends of the file; at most 2*context between two changes in a
// hunk, and more between hunks.
func checkPatch(old, new string, fd FileDiff, context int) error {
	patch := fd.Text
	lines := testLines(patch)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return errors.New("no --- and +++ headers")
	}
	if !strings.HasSuffix(patch, "\n") {
		return errors.New("the patch does not end with a newline")
	}
	oldLines := testLines(old)
	if old == "" {
		oldLines = nil
	}
	var out []string
	next := 0 // index of the first old line not yet used
	added, removed := 0, 0
	for i := 2; i < len(lines); {
		header := strings.TrimSuffix(lines[i], "\n")
		m := hunkHeader.FindStringSubmatch(lines[i])
		if m == nil {
			return fmt.Errorf("line %d: not a hunk header: %q", i+1, lines[i])
		}
		i++
		size := func(s string) (int, error) {
			switch s {
			case "":
				return 1, nil
			case ",1":
				return 0, errors.New(`",1" in a hunk header`)
			}
			return strconv.Atoi(s[1:])
		}
		oldStart, _ := strconv.Atoi(m[1])
		newStart, _ := strconv.Atoi(m[3])
		oldSize, err := size(m[2])
		if err != nil {
			return err
		}
		newSize, err := size(m[4])
		if err != nil {
			return err
		}
		// An empty side names the line before the hunk.
		if oldSize == 0 {
			oldStart++
		}
		if newSize == 0 {
			newStart++
		}
		if oldStart-1 < next || (next > 0 && oldStart-1 == next) || oldStart-1 > len(oldLines) {
			return fmt.Errorf("hunk %s at old line %d after line %d (hunks must be apart and in order)", header, oldStart, next)
		}
		out = append(out, oldLines[next:oldStart-1]...)
		next = oldStart - 1
		if newStart-1 != len(out) {
			return fmt.Errorf("hunk %s starts at new line %d, want %d", header, newStart, len(out)+1)
		}
		// The body: kinds of its lines, to check the context.
		var kinds []byte
		gotOld, gotNew := 0, 0
		for i < len(lines) && !strings.HasPrefix(lines[i], "@@ ") {
			l := lines[i]
			i++
			text := l[1:]
			if i < len(lines) && lines[i] == noNewline {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			kind := l[0]
			kinds = append(kinds, kind)
			if kind == ' ' || kind == '-' {
				if next >= len(oldLines) || oldLines[next] != text {
					return fmt.Errorf("old line %d is not %q", next+1, text)
				}
				next++
				gotOld++
			}
			if kind == ' ' || kind == '+' {
				out = append(out, text)
				gotNew++
			}
			switch kind {
			case '+':
				added++
			case '-':
				removed++
			case ' ':
			default:
				return fmt.Errorf("not a hunk line: %q", l)
			}
		}
		if gotOld != oldSize || gotNew != newSize {
			return fmt.Errorf("hunk %s has %d old and %d new lines", header, gotOld, gotNew)
		}
		// Context: all of it at both ends but at the ends of the file, at most
		// 2*context between changes.
		body := string(kinds)
		lead := len(body) - len(strings.TrimLeft(body, " "))
		trail := len(body) - len(strings.TrimRight(body, " "))
		if lead == len(body) {
			return errors.New("a hunk without changes")
		}
		if lead > context || (lead < context && oldStart != 1) {
			return fmt.Errorf("%d lines of leading context at old line %d", lead, oldStart)
		}
		if trail > context || (trail < context && next != len(oldLines)) {
			return fmt.Errorf("%d lines of trailing context before old line %d", trail, next+1)
		}
		for _, gap := range strings.FieldsFunc(strings.Trim(body, " "), func(r rune) bool { return r != ' ' }) {
			if len(gap) > 2*context {
				return fmt.Errorf("%d lines of context between two changes of a hunk", len(gap))
			}
		}
	}
	out = append(out, oldLines[next:]...)
	if got := strings.Join(out, ""); got != new {
		return fmt.Errorf("the patch gives %q", got)
	}
	if added != fd.Added || removed != fd.Removed {
		return fmt.Errorf("the patch adds %d and removes %d lines, File says +%d -%d", added, removed, fd.Added, fd.Removed)
	}
	return nil
}

// hunksOf returns the hunks of a unified diff, without the file headers.
func hunksOf(patch string) []string {
	var hunks []string
	for _, l := range testLines(patch)[2:] {
		if strings.HasPrefix(l, "@@ ") || len(hunks) == 0 {
			hunks = append(hunks, "")
		}
		hunks[len(hunks)-1] += l
	}
	return hunks
}

const diffCommand = "/usr/bin/diff"

type gnuResult struct {
	hunks          []string
	added, removed int
}

// gnuHunks returns the hunks of diff -d -U<context> with the given context, or false when
// GNU diff is not installed.
func gnuHunks(t *testing.T, old, new string, context int) ([]string, bool) {
	t.Helper()
	if _, ok := testenv.Have(t, diffCommand, "GNU diffutils: apt-get install diffutils"); !ok {
		return nil, false
	}
	return runGNUDiff(t, [][3]string{{old, new, strconv.Itoa(context)}})[0].hunks, true
}

// runGNUDiff runs diff -d -U<context> on each pair {old, new, context} in one shell, not
// one process per pair.
func runGNUDiff(t *testing.T, pairs [][3]string) []gnuResult {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	for i, p := range pairs {
		a, b := filepath.Join(dir, fmt.Sprintf("%d.a", i)), filepath.Join(dir, fmt.Sprintf("%d.b", i))
		if err := os.WriteFile(a, []byte(p[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, []byte(p[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "%s -d -U%s %s %s > %s.out\n", diffCommand, p[2], a, b, a)
	}
	cmd := exec.Command("/bin/sh", "-c", script.String())
	if out, err := cmd.CombinedOutput(); err != nil && len(out) > 0 {
		t.Fatalf("diff: %v\n%s", err, out)
	}
	res := make([]gnuResult, len(pairs))
	for i := range pairs {
		out, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.a.out", i)))
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			continue
		}
		res[i].hunks = hunksOf(string(out))
		for _, l := range testLines(string(out))[2:] {
			switch l[0] {
			case '+':
				res[i].added++
			case '-':
				res[i].removed++
			}
		}
	}
	return res
}

// TestCheckPatch: the checker behind the property tests rejects patches that
// break the conventions or do not apply.
func TestCheckPatch(t *testing.T) {
	old, new := numbered(10), replaced(numbered(10), map[int]string{5: "x\n"})
	good := "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n"
	if err := checkPatch(old, new, FileDiff{Text: good, Added: 1, Removed: 1}, 3); err != nil {
		t.Fatalf("the good patch: %v", err)
	}
	if err := checkPatch(old, new, FileDiff{Text: good, Added: 1, Removed: 2}, 3); err == nil {
		t.Error("wrong counts: accepted")
	}
	for name, patch := range map[string]string{
		"no headers":             "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n",
		"wrong size":             "--- a/f\n+++ b/f\n@@ -2,7 +2,8 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n",
		"explicit ,1":            "--- a/f\n+++ b/f\n@@ -5,1 +5,1 @@\n-5\n+x\n",
		"too little context":     "--- a/f\n+++ b/f\n@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+x\n 6\n 7\n",
		"too much context":       "--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n 1\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n 9\n",
		"wrong context line":     "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 3\n-5\n+x\n 6\n 7\n 8\n",
		"wrong new start":        "--- a/f\n+++ b/f\n@@ -2,7 +3,7 @@\n 2\n 3\n 4\n-5\n+x\n 6\n 7\n 8\n",
		"wrong result":           "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+y\n 6\n 7\n 8\n",
		"missing final newline":  strings.TrimSuffix(good, "\n"),
		"misplaced no-newline":   "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+x\n" + noNewline + " 6\n 7\n 8\n",
		"a hunk without changes": good + "@@ -10 +10 @@\n 10\n",
	} {
		if err := checkPatch(old, new, FileDiff{Text: patch, Added: 1, Removed: 1}, 3); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Hunks that touch, or that are too close, should have been one.
	old, new = numbered(4), "x\n2\n3\ny\n"
	if err := checkPatch(old, new, FileDiff{Text: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -3,2 +3,2 @@\n 3\n-4\n+y\n", Added: 2, Removed: 2}, 1); err == nil {
		t.Error("touching hunks: accepted")
	}
	if err := checkPatch(old, new, FileDiff{Text: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n-4\n+y\n", Added: 2, Removed: 2}, 0); err == nil {
		t.Error("2 lines of context between changes with context 0: accepted")
	}
}

// TestFileManyDistinctLines diffs a DOT-like file of 1.3 million distinct lines
// (a cluster's default.dot at some 180 nodes) with a few scattered changes and
// a moved block. Matching lines through go-diff's DiffLinesToRunes, one rune per
// distinct line, panicked past some 1.11 million; the patience matching of
// large files gives a patch that applies, with the changes and nothing else.
func TestFileManyDistinctLines(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	const n = 1_300_000
	var o, nw strings.Builder
	var moved []string
	for i := range n {
		line := fmt.Sprintf("  \"task-%d@node-%d\" -> \"task-%d@node-%d\";\n", i%7200, i/7200, (i+1)%7200, i/7200)
		o.WriteString(line)
		switch {
		case i >= 5000 && i < 5100: // moved to the end
			moved = append(moved, line)
		case i%100_000 == 50: // changed
			nw.WriteString(strings.Replace(line, "->", "-> \"new\" ->", 1))
		case i%100_000 == 70: // deleted
		case i%100_000 == 90: // a line inserted after it
			nw.WriteString(line)
			nw.WriteString(fmt.Sprintf("  \"inserted-%d\";\n", i))
		default:
			nw.WriteString(line)
		}
	}
	nw.WriteString(strings.Join(moved, ""))
	old, new := o.String(), nw.String()
	start := time.Now()
	fd := File("default.dot", []byte(old), []byte(new), 3)
	t.Logf("%d lines (%d bytes): +%d -%d in %v", n, len(old), fd.Added, fd.Removed, time.Since(start))
	if err := checkPatch(old, new, fd, 3); err != nil {
		t.Fatal(err)
	}
	// 13 lines changed, 13 deleted, 13 inserted, 100 moved.
	if fd.Added != 126 || fd.Removed != 126 {
		t.Errorf("+%d -%d, want +126 -126", fd.Added, fd.Removed)
	}
}

// TestMatchPatience: the matching of large files is a valid edit script of any
// two line sequences (it keeps only equal lines, and all lines of both), and
// keeps the lines of the shorter one when the longer has it all, in order.
func TestMatchPatience(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 17))
	for i := range 2000 {
		alphabet := 1 + rnd.IntN(40)
		seq := func() []int32 {
			s := make([]int32, rnd.IntN(60))
			for k := range s {
				s[k] = int32(rnd.IntN(alphabet))
			}
			return s
		}
		a, b := seq(), seq()
		if i%3 == 0 { // b is a with some lines left out
			b = slices.DeleteFunc(slices.Clone(a), func(int32) bool { return rnd.IntN(4) == 0 })
		}
		ops := matchPatience(a, b, nil)
		x, y, kept := 0, 0, 0
		for _, op := range ops {
			switch op {
			case diffmatchpatch.DiffEqual:
				if x >= len(a) || y >= len(b) || a[x] != b[y] {
					t.Fatalf("a %v\nb %v\nops %v: keeps unequal lines at %d, %d", a, b, ops, x, y)
				}
				x, y, kept = x+1, y+1, kept+1
			case diffmatchpatch.DiffDelete:
				x++
			case diffmatchpatch.DiffInsert:
				y++
			}
		}
		if x != len(a) || y != len(b) {
			t.Fatalf("a %v\nb %v\nops %v: uses %d and %d lines", a, b, ops, x, y)
		}
		if i%3 == 0 && kept != len(b) {
			t.Fatalf("a %v\nb %v\nops %v: keeps %d lines, not all %d of b", a, b, ops, kept, len(b))
		}
	}
}

// TestFileHugeWithoutUniqueLines: a file of 300,000 lines, each line twice, in
// the reverse order: no line is unique, so the patience matching finds nothing
// to anchor on, and a stretch that large is deleted and inserted whole rather
// than handed to Myers' algorithm, whose time grows with the lines times the
// differences (hours here).
func TestFileHugeWithoutUniqueLines(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	const n = 150_000
	var o, nw strings.Builder
	for i := range n {
		fmt.Fprintf(&o, "line %d\nline %d\n", i, i)
		fmt.Fprintf(&nw, "line %d\nline %d\n", n-1-i, n-1-i)
	}
	old, new := o.String(), nw.String()
	start := time.Now()
	fd := File("f", []byte(old), []byte(new), 3)
	elapsed := time.Since(start)
	t.Logf("%d lines: +%d -%d in %v", 2*n, fd.Added, fd.Removed, elapsed)
	if err := checkPatch(old, new, fd, 3); err != nil {
		t.Fatal(err)
	}
	if elapsed > time.Minute {
		t.Errorf("%v for a diff of %d lines", elapsed, 2*n)
	}
}
