package diff

import (
	"fmt"
	"strings"
)

// TruncateMiddle returns s when it has at most limit bytes; else its first and
// last lines, cut at line boundaries, around a line saying how much was left out,
// in at most limit bytes.
func TruncateMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	note := func(chars, n int) string {
		return fmt.Sprintf("\n… %d characters (%d lines) cut here …\n\n", chars, n)
	}
	// Take lines alternately from the head and the tail while they fit with the
	// note (sized for the largest counts it can print).
	room := limit - len(note(len(s), len(lines)))
	head, tail := 0, len(lines)
	used := 0
	for turn := 0; head < tail; turn++ {
		i := head
		if turn%2 == 1 {
			i = tail - 1
		}
		if used+len(lines[i]) > room {
			break
		}
		used += len(lines[i])
		if turn%2 == 1 {
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
