// Package safetext escapes repository text for the places fuelsync prints it:
// terminals, CI logs and pull-request comments. A name, a file name or a value
// from the repository may hold a newline (a line of its own in the log, where a
// GitHub Actions runner reads "::error ...::" as a workflow command), an escape
// sequence (the terminal obeys it) or a Unicode bidirectional override (the
// text reads in another order than it is). Printed through Line or Lines, it
// cannot do any of that.
package safetext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s escaped to print on one line: every control character (C0 but
// the tab, DEL, C1), Unicode format character (the bidirectional controls among
// them), line or paragraph separator, and byte that is not UTF-8 is written as a
// Go escape (\n, \x1b, \u202e). When s would begin (after blanks) with "::",
// "##[" or "##vso[", the prefixes of CI runners' workflow commands, its first
// character is escaped too. s comes back as it is when it holds none of these.
func Line(s string) string { return escape(s, false) }

// Lines is Line for text of several lines whose newlines are the writer's own (a
// diagnostic's detail): the newlines are kept, and every line is escaped as Line
// escapes one.
func Lines(s string) string { return escape(s, true) }

func escape(s string, keepNewlines bool) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	lineStart := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
			lineStart = true
			i += size
			continue
		case r == utf8.RuneError && size == 1:
			writeHex(&b, `\x`, uint32(s[i]), 2)
		case needsEscape(r):
			writeRune(&b, r)
		case lineStart && isCommandStart(s[i:]):
			writeHex(&b, `\x`, uint32(s[i]), 2)
		default:
			b.WriteString(s[i : i+size])
		}
		if r != ' ' && r != '\t' {
			lineStart = false
		}
		i += size
	}
	return b.String()
}

// clean reports whether s needs no escape: no byte that can start one, and no
// line that begins like a workflow command.
func clean(s string) bool {
	lineStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 && c != '\t', c == 0x7f, c >= 0x80:
			return false
		case lineStart && (c == ':' || c == '#'):
			if isCommandStart(s[i:]) {
				return false
			}
		}
		if c != ' ' && c != '\t' {
			lineStart = false
		}
	}
	return true
}

// isCommandStart reports whether s begins with the prefix of a workflow command
// of GitHub Actions ("::error ...::") or Azure Pipelines ("##[error]", "##vso[").
func isCommandStart(s string) bool {
	return strings.HasPrefix(s, "::") || strings.HasPrefix(s, "##[") || strings.HasPrefix(s, "##vso[")
}

// needsEscape reports whether r is a control character (Cc, the tab aside), a
// format character (Cf: the bidirectional controls, zero-width characters,
// the byte order mark) or a line or paragraph separator (Zl, Zp).
func needsEscape(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func writeRune(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	default:
		if r < 0x80 {
			writeHex(b, `\x`, uint32(r), 2)
		} else {
			writeHex(b, `\u`, uint32(r), 4)
		}
	}
}

func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	const hex = "0123456789abcdef"
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hex[v>>uint(shift)&0xf])
	}
}

// Thousands writes n with a comma between thousands: 2,000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Cut cuts s to at most n characters, ending with "…" when cut.
func Cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}
