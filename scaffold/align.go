package scaffold

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// alignHCL lines up the equals signs and the trailing comments of the HCL the
// templates write, as terraform fmt (hclwrite.Format) does: in a run of
// consecutive lines that each hold a whole attribute (name = value, its
// brackets closed on the line), the equals signs share a column; in a run of
// consecutive lines that each end in a comment after something else, the
// comments do. The templates write everything else — indentation, one space
// between tokens — as the formatter would; TestCreate checks the result against
// hclwrite.Format. (hclwrite itself is not linked into the binaries: its
// dependencies cost every start of fuelsync more than a file edit costs.)
func alignHCL(src []byte) []byte {
	tokens, diags := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	if diags.HasErrors() {
		return src // the loader reports it; TestCreate never lets it through
	}
	lines := hclLines(src, tokens)
	width := func(s string) int { return utf8.RuneCountInString(s) }
	// The equals signs, then the comments, whose column follows.
	eqPads := alignRuns(len(lines), func(k int) bool { return lines[k].assign != "" }, func(k int) int { return width(lines[k].lead) })
	body := make([]string, len(lines))
	for k, l := range lines {
		body[k] = l.lead
		if l.assign != "" {
			body[k] += strings.Repeat(" ", eqPads[k]+1) + l.assign
		}
	}
	commentPads := alignRuns(len(lines), func(k int) bool { return lines[k].comment != "" }, func(k int) int { return width(body[k]) })
	var b bytes.Buffer
	for k, l := range lines {
		b.WriteString(body[k])
		if l.comment != "" {
			b.WriteString(strings.Repeat(" ", commentPads[k]+1) + l.comment)
		}
		b.WriteByte('\n')
	}
	out := b.Bytes()
	if !bytes.HasSuffix(src, []byte("\n")) {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out
}

// hclLine is one line of HCL cut for alignment: lead is what comes before the
// equals sign of a whole attribute (all of the line but its comment when it
// holds none), assign that equals sign and its value, comment a trailing
// comment.
type hclLine struct {
	lead, assign, comment string
}

// hclLines cuts src, lexed into tokens, into its lines.
func hclLines(src []byte, tokens hclsyntax.Tokens) []hclLine {
	var lines []hclLine
	var cur []hclsyntax.Token
	flush := func(end int) {
		lines = append(lines, cutLine(src, cur, end))
		cur = cur[:0]
	}
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenNewline:
			flush(t.Range.Start.Byte)
		case hclsyntax.TokenEOF:
			if len(cur) > 0 {
				flush(t.Range.Start.Byte)
			}
		case hclsyntax.TokenComment:
			cur = append(cur, t)
			if bytes.HasSuffix(src[t.Range.Start.Byte:t.Range.End.Byte], []byte("\n")) {
				flush(t.Range.End.Byte - 1) // a # comment takes its newline
			}
		default:
			cur = append(cur, t)
		}
	}
	return lines
}

// cutLine cuts one line of src: toks are its tokens, its newline excluded;
// end is where its text ends.
func cutLine(src []byte, toks []hclsyntax.Token, end int) hclLine {
	l := hclLine{}
	if len(toks) == 0 {
		l.lead = string(src[bytes.LastIndexByte(src[:end], '\n')+1 : end])
		return l
	}
	lineStart := bytes.LastIndexByte(src[:toks[0].Range.Start.Byte], '\n') + 1
	if len(toks) > 1 && toks[len(toks)-1].Type == hclsyntax.TokenComment {
		c := toks[len(toks)-1]
		l.comment = strings.TrimRight(string(src[c.Range.Start.Byte:c.Range.End.Byte]), "\n")
		toks = toks[:len(toks)-1]
	}
	leadEnd := toks[len(toks)-1].Range.End.Byte
	if i := wholeAttribute(toks); i > 0 {
		l.assign = string(src[toks[i].Range.Start.Byte:leadEnd])
		leadEnd = toks[i-1].Range.End.Byte
	}
	l.lead = strings.TrimRight(string(src[lineStart:leadEnd]), "\n")
	return l
}

// wholeAttribute is the index of the line's first equals sign (not its first
// token) when the brackets opened after it close on the line, else -1.
func wholeAttribute(toks []hclsyntax.Token) int {
	for i, t := range toks {
		if i == 0 || t.Type != hclsyntax.TokenEqual {
			continue
		}
		net := 0
		for _, u := range toks[i:] {
			net += bracketChange(u.Type)
		}
		if net == 0 {
			return i
		}
		return -1
	}
	return -1
}

// alignRuns lines up each run of consecutive lines (of n) that take part:
// its pad is how much narrower a line is than the widest of its run (0 for
// the lines that do not take part).
func alignRuns(n int, part func(k int) bool, width func(k int) int) []int {
	pads := make([]int, n)
	for i := 0; i < n; {
		if !part(i) {
			i++
			continue
		}
		j, col := i, 0
		for ; j < n && part(j); j++ {
			col = max(col, width(j))
		}
		for k := i; k < j; k++ {
			pads[k] = col - width(k)
		}
		i = j
	}
	return pads
}

// bracketChange is +1 for a token that opens a bracket (or a template
// sequence), -1 for one that closes it.
func bracketChange(t hclsyntax.TokenType) int {
	switch t {
	case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenTemplateControl, hclsyntax.TokenTemplateInterp:
		return 1
	case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenTemplateSeqEnd:
		return -1
	}
	return 0
}
