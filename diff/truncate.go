package diff

import (
	"fmt"
	"strings"
)

// TruncateMiddle returns s when it has at most limit bytes; else its first and
// last lines, cut at line boundaries, around a line saying how much was left out,
// in at most limit bytes. Below the length of that note (some 50 bytes) there
// is no room to say it: the result is "…\n", or "" under 4 bytes.
func TruncateMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	lines := splitLines(s)
	note := func(chars, n int) string {
		return fmt.Sprintf("\n… %d characters (%d %s) cut here …\n\n", chars, n, plural(n, "line", "lines"))
	}
	// Take lines alternately from the head and the tail while they fit with the
	// note (sized for the largest counts it can print); a side whose next line
	// does not fit stops, the other goes on.
	room := limit - len(note(len(s), len(lines)))
	if room < 0 {
		if limit < len("…\n") {
			return ""
		}
		return "…\n"
	}
	head, tail := 0, len(lines)
	used := 0
	headDone, tailDone := false, false
	for turn := 0; head < tail && !(headDone && tailDone); turn++ {
		fromTail := turn%2 == 1
		if fromTail && tailDone || !fromTail && headDone {
			continue
		}
		i := head
		if fromTail {
			i = tail - 1
		}
		if used+len(lines[i]) > room {
			if fromTail {
				tailDone = true
			} else {
				headDone = true
			}
			continue
		}
		used += len(lines[i])
		if fromTail {
			tail--
		} else {
			head++
		}
	}
	cut := strings.Join(lines[head:tail], "")
	return strings.Join(lines[:head], "") + note(len(cut), tail-head) + strings.Join(lines[tail:], "")
}

// Fence wraps body in a Markdown code fence of lang, with more backticks than
// any run of backticks in body.
func Fence(lang, body string) string {
	longest, run := 0, 0
	for _, r := range body {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return fence + lang + "\n" + body + fence + "\n"
}
