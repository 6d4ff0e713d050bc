package diff

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var truncationNote = regexp.MustCompile(`… (\d+) characters \((\d+) lines?\) cut here …`)

// checkTruncated checks TruncateMiddle(s, limit): s itself within the limit;
// else at most limit bytes made of a head and a tail of s cut at line
// boundaries, around a note that gives the size and the number of lines of what
// was cut; valid UTF-8 when s is; unchanged by a second truncation. A limit too
// short for the note may give "…\n" or "" instead.
func checkTruncated(s string, limit int) error {
	got := TruncateMiddle(s, limit)
	if len(s) <= limit {
		if got != s {
			return fmt.Errorf("changed within the limit: %q", got)
		}
		return nil
	}
	if len(got) > limit {
		return fmt.Errorf("%d bytes over a limit of %d", len(got), limit)
	}
	if utf8.ValidString(s) && !utf8.ValidString(got) {
		return fmt.Errorf("invalid UTF-8: %q", got)
	}
	if longest := fmt.Sprintf("\n… %d characters (%d lines) cut here …\n\n", len(s), len(testLines(s))); limit < len(longest) && (got == "…\n" || got == "") {
		return nil
	}
	if again := TruncateMiddle(got, limit); again != got {
		return fmt.Errorf("a second truncation changed it:\n%q\n%q", got, again)
	}
	loc := truncationNote.FindStringSubmatchIndex(got)
	if loc == nil {
		return fmt.Errorf("no note: %q", got)
	}
	// The note is a line of its own, with a blank line after it.
	head, tail := got[:loc[0]], got[loc[1]:]
	head, ok := strings.CutSuffix(head, "\n")
	if !ok {
		return fmt.Errorf("the note does not start a line: %q", got)
	}
	tail, ok = strings.CutPrefix(tail, "\n\n")
	if !ok {
		return fmt.Errorf("no blank line after the note: %q", got)
	}
	if !strings.HasPrefix(s, head) || (head != "" && !strings.HasSuffix(head, "\n")) {
		return fmt.Errorf("the head is not whole lines of s: %q", head)
	}
	if !strings.HasSuffix(s, tail) || (tail != "" && len(tail) < len(s) && s[len(s)-len(tail)-1] != '\n') {
		return fmt.Errorf("the tail is not whole lines of s: %q", tail)
	}
	if len(head)+len(tail) > len(s) {
		return fmt.Errorf("head and tail overlap")
	}
	cut := s[len(head) : len(s)-len(tail)]
	chars, _ := strconv.Atoi(got[loc[2]:loc[3]])
	lines, _ := strconv.Atoi(got[loc[4]:loc[5]])
	if chars != len(cut) {
		return fmt.Errorf("the note says %d characters, %d bytes were cut", chars, len(cut))
	}
	if want := len(testLines(cut)); cut != "" && lines != want {
		return fmt.Errorf("the note says %d lines, %d were cut: %q", lines, want, got)
	}
	return nil
}

func TestTruncateMiddleCuts(t *testing.T) {
	var numbered, unicode, crlf strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&numbered, "line %d\n", i)
		fmt.Fprintf(&unicode, "ligne %d — “ünïcødé” 日本語 🚀\n", i)
		fmt.Fprintf(&crlf, "line %d\r\n", i)
	}
	inputs := map[string]string{
		"numbered lines":        numbered.String(),
		"multi-byte characters": unicode.String(),
		"CRLF lines":            crlf.String(),
		"no final newline":      strings.TrimSuffix(numbered.String(), "\n"),
		"one long line in the middle": strings.Repeat("short\n", 100) + strings.Repeat("x", 5000) + "\n" +
			strings.Repeat("short\n", 100),
		"long first and last lines": strings.Repeat("é", 3000) + "\n" + strings.Repeat("short\n", 100) + strings.Repeat("ü", 3000),
		"a fenced diff":             Fence("diff", Unified("f", []byte(numbered.String()), []byte(strings.ReplaceAll(numbered.String(), "7\n", "seven\n")), 3)),
	}
	for name, s := range inputs {
		t.Run(name, func(t *testing.T) {
			for _, limit := range []int{64, 100, 101, 500, 1000, 4096, 65000, len(s) - 1, len(s), len(s) + 1} {
				if err := checkTruncated(s, limit); err != nil {
					t.Errorf("limit %d: %v", limit, err)
				}
			}
		})
	}
}

// TestTruncateMiddleKeepsBothEnds: with lines of about the same length the
// result keeps the first and last lines and fills the limit to within a line or
// two (the note is sized for the longest counts it can print), about as many
// at the start as at the end.
func TestTruncateMiddleKeepsBothEnds(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "line %04d — ünïcode\n", i)
	}
	s := b.String()
	lineLen := len("line 0000 — ünïcode\n")
	for _, limit := range []int{200, 1000, 20000, 40000} {
		got := TruncateMiddle(s, limit)
		if !strings.HasPrefix(got, "line 0000 ") || !strings.HasSuffix(got, "line 1999 — ünïcode\n") {
			t.Errorf("limit %d: the head or the tail is missing:\n%s", limit, got)
		}
		if len(got) < limit-2*lineLen {
			t.Errorf("limit %d: only %d bytes", limit, len(got))
		}
		// Lines before "\n… ", and after " …\n\n".
		head, tail := strings.Count(got[:strings.Index(got, "…")], "\n")-1, strings.Count(got[strings.LastIndex(got, "…"):], "\n")-2
		if head-tail > 2 || tail-head > 2 {
			t.Errorf("limit %d: %d lines kept at the start and %d at the end", limit, head, tail)
		}
	}
}

func TestTruncateMiddleNote(t *testing.T) {
	s := strings.Repeat("0123456789\n", 10)
	got := TruncateMiddle(s, 80)
	want := "0123456789\n0123456789\n\n… 77 characters (7 lines) cut here …\n\n0123456789\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzTruncateMiddleLines(f *testing.F) {
	f.Add("a\nb\nc\n", 3)
	f.Add(strings.Repeat("é\n", 100), 90)
	f.Add(strings.Repeat("x", 300)+"\n"+strings.Repeat("y\n", 50), 70)
	f.Add("\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", 0)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		// Limits from 64 bytes: below the length of the note a result
		// within the limit cannot say how much was cut.
		limit = 64 + limit&0x3fff
		if err := checkTruncated(s, limit); err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
	})
}

func TestFenceLength(t *testing.T) {
	for _, tc := range []struct {
		name, lang, body, want string
	}{
		{name: "no backticks", lang: "diff", body: "+a\n-b\n", want: "```diff\n+a\n-b\n```\n"},
		{name: "no language", body: "x\n", want: "```\nx\n```\n"},
		{name: "final newline added", lang: "yaml", body: "a: 1", want: "```yaml\na: 1\n```\n"},
		{name: "short runs", lang: "md", body: "`a` and ``b``\n", want: "```md\n`a` and ``b``\n```\n"},
		{name: "a fence in the body", lang: "md", body: "```go\nx\n```\n", want: "````md\n```go\nx\n```\n````\n"},
		{name: "a long run", lang: "", body: "a ````` b\n", want: "``````\na ````` b\n``````\n"},
		{name: "backticks at the end", lang: "", body: "x ````", want: "`````\nx ````\n`````\n"},
		{name: "separate runs", lang: "", body: "`` ` ```` `\n", want: "`````\n`` ` ```` `\n`````\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Fence(tc.lang, tc.body)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzFence: no line of the body closes the fence early, and the body is kept.
func FuzzFence(f *testing.F) {
	f.Add("diff", "```\n`````x")
	f.Fuzz(func(t *testing.T, lang, body string) {
		if strings.ContainsAny(lang, "`\n") {
			return
		}
		got := Fence(lang, body)
		fence, _, _ := strings.Cut(got, lang+"\n")
		if fence == "" || strings.Trim(fence, "`") != "" || len(fence) < 3 {
			t.Fatalf("opening fence %q", fence)
		}
		inner := strings.TrimPrefix(got, fence+lang+"\n")
		inner, ok := strings.CutSuffix(inner, fence+"\n")
		if !ok {
			t.Fatalf("no closing fence: %q", got)
		}
		if inner != body && inner != body+"\n" {
			t.Fatalf("body changed: %q", inner)
		}
		if strings.Contains(body, fence) {
			t.Fatalf("the body contains the fence %q", fence)
		}
	})
}

// TestTruncateMiddleEdges: a result within a limit shorter than the note, and
// the lines counted right when not even the first one fits.
func TestTruncateMiddleEdges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     string
		limit int
	}{
		{name: "limit shorter than the note", s: strings.Repeat("0123456789\n", 10), limit: 30},
		{name: "nothing fits but the note", s: strings.Repeat("x", 100) + "\n" + strings.Repeat("0123456789\n", 10), limit: 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkTruncated(tc.s, tc.limit); err != nil {
				t.Error(err)
			}
		})
	}
}
