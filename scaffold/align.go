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
	type line struct {
		lead, assign, comment string
	}
	var lines []line
	var cur []hclsyntax.Token
	flush := func(end int) {
		// cur are the line's tokens, its newline excluded; end is where the
		// line's text ends.
		l := line{}
		lineStart := 0
		if len(cur) > 0 {
			lineStart = bytes.LastIndexByte(src[:cur[0].Range.Start.Byte], '\n') + 1
		}
		toks := cur
		if len(toks) > 1 && toks[len(toks)-1].Type == hclsyntax.TokenComment {
			c := toks[len(toks)-1]
			l.comment = strings.TrimRight(string(src[c.Range.Start.Byte:c.Range.End.Byte]), "\n")
			toks = toks[:len(toks)-1]
		}
		leadEnd := end
		if len(toks) > 0 {
			leadEnd = toks[len(toks)-1].Range.End.Byte
		}
		for i, t := range toks {
			if i == 0 || t.Type != hclsyntax.TokenEqual {
				continue
			}
			net := 0
			for _, u := range toks[i:] {
				net += bracketChange(u.Type)
			}
			if net == 0 {
				l.assign = string(src[t.Range.Start.Byte:leadEnd])
				leadEnd = toks[i-1].Range.End.Byte
			}
			break
		}
		if len(cur) > 0 {
			l.lead = strings.TrimRight(string(src[lineStart:leadEnd]), "\n")
		} else {
			l.lead = string(src[bytes.LastIndexByte(src[:end], '\n')+1 : end])
		}
		lines = append(lines, l)
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

	width := func(s string) int { return utf8.RuneCountInString(s) }
	// The equals signs, then the comments, whose column follows.
	pads := make([]int, len(lines))
	for i := 0; i < len(lines); {
		if lines[i].assign == "" {
			i++
			continue
		}
		j, col := i, 0
		for ; j < len(lines) && lines[j].assign != ""; j++ {
			col = max(col, width(lines[j].lead))
		}
		for k := i; k < j; k++ {
			pads[k] = col - width(lines[k].lead)
		}
		i = j
	}
	body := func(k int) string {
		if lines[k].assign == "" {
			return lines[k].lead
		}
		return lines[k].lead + strings.Repeat(" ", pads[k]+1) + lines[k].assign
	}
	var b bytes.Buffer
	for i := 0; i < len(lines); {
		if lines[i].comment == "" {
			b.WriteString(body(i) + "\n")
			i++
			continue
		}
		j, col := i, 0
		for ; j < len(lines) && lines[j].comment != ""; j++ {
			col = max(col, width(body(j)))
		}
		for k := i; k < j; k++ {
			b.WriteString(body(k) + strings.Repeat(" ", col-width(body(k))+1) + lines[k].comment + "\n")
		}
		i = j
	}
	out := b.Bytes()
	if !bytes.HasSuffix(src, []byte("\n")) {
		out = bytes.TrimSuffix(out, []byte("\n"))
	}
	return out
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
