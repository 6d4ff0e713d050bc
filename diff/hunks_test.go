package diff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

func TestFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new []byte
		context  int
		want     string
	}{
		{name: "same", old: []byte("a\n"), new: []byte("a\n"), context: 3, want: ""},
		{name: "change in the middle", old: []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), new: []byte("1\n2\n3\n4\nfive\n6\n7\n8\n9\n"), context: 3,
			want: "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{name: "add at start", old: []byte("a\nb\n"), new: []byte("x\na\nb\n"), context: 3,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+x\n a\n b\n"},
		{name: "one-line hunks", old: []byte("a\n"), new: []byte("b\n"), context: 3,
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"},
		{name: "new file", old: nil, new: []byte("a\nb\n"), context: 3,
			want: "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{name: "deleted file", old: []byte("a\n"), new: nil, context: 3,
			want: "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"},
		{name: "no newline at end", old: []byte("a\nb"), new: []byte("a\nb\n"), context: 3,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "two hunks with no context", old: []byte("1\n2\n3\n4\n"), new: []byte("x\n2\n3\ny\n"), context: 0,
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-1\n+x\n@@ -4 +4 @@\n-4\n+y\n"},
		// The matching keeps the first c and deletes the second; a is new: the
		// change is written deletion first, as diff -u and git print it.
		{name: "deletions before insertions", old: []byte("c\nc\n"), new: []byte("d\nc\na\n"), context: 3,
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+d\n c\n-c\n+a\n"},
		{name: "close changes merge", old: []byte("1\n2\n3\n4\n"), new: []byte("x\n2\n3\ny\n"), context: 1,
			want: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n-4\n+y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := File("f", tc.old, tc.new, tc.context)
			if diff := cmp.Diff(tc.want, got.Text); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// applyUnified applies a unified diff made by File to old.
func applyUnified(t *testing.T, old, patch string) string {
	t.Helper()
	oldLines := splitLines(old)
	var out []string
	next := 0 // index in oldLines
	lines := strings.SplitAfter(patch, "\n")
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "@@ ") {
			continue
		}
		f := strings.Fields(l)
		start, size, hasSize := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
		n := mustAtoi(t, start) - 1 // lines before the hunk
		if hasSize && size == "0" {
			n++ // an empty old side starts after line start
		}
		out = append(out, oldLines[next:n]...)
		next = n
		for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "@@ ") {
			i++
			body := lines[i]
			if strings.HasPrefix(body, `\ `) {
				// the previous line had no newline
				if strings.HasPrefix(lines[i-1], "-") {
					continue
				}
				last := &out[len(out)-1]
				*last = strings.TrimSuffix(*last, "\n")
				continue
			}
			switch body[0] {
			case ' ':
				out = append(out, body[1:])
				next++
			case '-':
				next++
			case '+':
				out = append(out, body[1:])
			}
		}
	}
	out = append(out, oldLines[next:]...)
	return strings.Join(out, "")
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func randomText(rnd *rand.Rand) string {
	var b strings.Builder
	for range rnd.IntN(30) {
		fmt.Fprintf(&b, "line %d\n", rnd.IntN(8))
	}
	return b.String()
}

// TestFileApplies: applying the diff of random texts to the old one gives the new
// one; with GNU diff installed, the added and removed counts match diff -u's.
func TestFileApplies(t *testing.T) {
	gnu, _ := testenv.Have(t, "diff", "GNU diffutils: apt-get install diffutils")
	dir := t.TempDir()
	for seed := range 300 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 1))
		old, new := randomText(rnd), randomText(rnd)
		ctx := rnd.IntN(4)
		fd := File("f", []byte(old), []byte(new), ctx)
		if old == new {
			if fd.Text != "" {
				t.Fatalf("seed %d: a diff of equal texts", seed)
			}
			continue
		}
		if got := applyUnified(t, old, fd.Text); got != new {
			t.Fatalf("seed %d: the diff does not apply:\nold:\n%s\nnew:\n%s\ndiff:\n%s\ngot:\n%s", seed, old, new, fd.Text, got)
		}
		if gnu == "" {
			continue
		}
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		if err := os.WriteFile(a, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, []byte(new), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(gnu, "-d", fmt.Sprintf("-U%d", ctx), a, b).Output()
		var added, removed int
		for _, l := range strings.Split(string(out), "\n")[2:] {
			switch {
			case strings.HasPrefix(l, "+"):
				added++
			case strings.HasPrefix(l, "-"):
				removed++
			}
		}
		if added != fd.Added || removed != fd.Removed {
			t.Errorf("seed %d: +%d -%d, diff -u says +%d -%d\n%s\n%s", seed, fd.Added, fd.Removed, added, removed, fd.Text, out)
		}
	}
}

func FuzzFile(f *testing.F) {
	f.Add("a\nb\n", "a\nc\n", 3)
	f.Add("", "x", 0)
	f.Fuzz(func(t *testing.T, old, new string, ctx int) {
		ctx = ctx & 7
		fd := File("f", []byte(old), []byte(new), ctx)
		if old == new {
			return
		}
		if got := applyUnified(t, old, fd.Text); got != new {
			t.Fatalf("the diff does not apply:\n%q\n%q\n%s\ngot %q", old, new, fd.Text, got)
		}
	})
}

func TestTruncateMiddle(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "line %d — ünïcode\n", i)
	}
	s := b.String()
	if got := TruncateMiddle(s, len(s)); got != s {
		t.Error("a text within the limit changed")
	}
	for _, limit := range []int{200, 1000, 20000} {
		got := TruncateMiddle(s, limit)
		if len(got) > limit {
			t.Errorf("limit %d: %d bytes", limit, len(got))
		}
		if !strings.HasPrefix(got, "line 0 ") || !strings.HasSuffix(got, "line 1999 — ünïcode\n") {
			t.Errorf("limit %d: the head or the tail is missing", limit)
		}
		if !strings.Contains(got, "characters (") || !strings.Contains(got, "cut here") {
			t.Errorf("limit %d: no note", limit)
		}
	}
}

func FuzzTruncateMiddle(f *testing.F) {
	f.Add("a\nb\nc\n", 3)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = limit&0xfff + 80
		got := TruncateMiddle(s, limit)
		if len(s) <= limit && got != s {
			t.Fatal("changed within the limit")
		}
		if len(s) > limit && len(got) > limit {
			t.Fatalf("%d bytes over a limit of %d", len(got), limit)
		}
	})
}

func TestFence(t *testing.T) {
	if got := Fence("diff", "a ```` b"); got != "`````diff\na ```` b\n`````\n" {
		t.Errorf("Fence: %q", got)
	}
}
