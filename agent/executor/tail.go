package executor

import (
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// outTail keeps the last max bytes written to it (in at most 2×max bytes
// of memory) and passes every byte on to journal, when set. One goroutine
// writes at a time (exec's copier, or Run between attempts).
type outTail struct {
	max     int
	buf     []byte
	total   int64
	journal io.Writer
}

func newTail(max int, journal io.Writer) *outTail { return &outTail{max: max, journal: journal} }

func (t *outTail) Write(p []byte) (int, error) {
	if t.journal != nil {
		t.journal.Write(p) // the journal's errors do not stop the command
	}
	t.total += int64(len(p))
	if t.buf == nil {
		t.buf = make([]byte, 0, 2*t.max)
	}
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > cap(t.buf) {
		keep := min(t.max-len(p), len(t.buf))
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// tail is a copy of the last max bytes (starting at a UTF-8 character when
// some were dropped) and how many bytes before them were dropped.
func (t *outTail) tail() ([]byte, int64) {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	if int64(len(b)) < t.total {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	if len(b) == 0 {
		return nil, t.total
	}
	return append([]byte(nil), b...), t.total - int64(len(b))
}

// oneLine is s on one line of at most max bytes: control characters become
// spaces, invalid UTF-8 U+FFFD, and a longer line is cut at a character
// with "…".
func oneLine(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// seconds writes d in seconds: "120s", "0.5s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
