package specedit

import "bytes"

// utf8BOM is the UTF-8 byte order mark some Windows editors put at a file's start.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// keepConventions runs edit on src in the form the editors work on — without a
// UTF-8 byte order mark, lines ending in LF — and gives the result the file's own
// byte conventions back:
//   - a byte order mark stays;
//   - every line the edit did not change is written back exactly as it was, CRLF
//     or LF;
//   - a line the edit wrote ends as most of the file's lines do (CRLF when more of
//     them end in CRLF than in a bare LF, as in a file saved on Windows).
//
// A file with neither a mark nor a CRLF is passed through as it is.
func keepConventions(src []byte, edit func([]byte) ([]byte, error)) ([]byte, error) {
	bom := bytes.HasPrefix(src, utf8BOM)
	body := src
	if bom {
		body = src[len(utf8BOM):]
	}
	crlf := bytes.Count(body, []byte("\r\n"))
	if !bom && crlf == 0 {
		return edit(src)
	}
	norm := bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	out, err := edit(norm)
	if err != nil {
		return nil, err
	}
	eol := []byte("\n")
	if crlf > bytes.Count(norm, []byte("\n"))-crlf {
		eol = []byte("\r\n")
	}

	// The lines of the original (with their own endings), of its normalised form
	// (one to one with them) and of the edited text.
	orig, was, now := lines(body), lines(norm), lines(out)
	p := 0 // lines kept at the start
	for p < len(was) && p < len(now) && bytes.Equal(was[p], now[p]) {
		p++
	}
	s := 0 // lines kept at the end
	for s < len(was)-p && s < len(now)-p && bytes.Equal(was[len(was)-1-s], now[len(now)-1-s]) {
		s++
	}

	var b bytes.Buffer
	b.Grow(len(src) + len(out) - len(norm) + 64)
	if bom {
		b.Write(utf8BOM)
	}
	for _, l := range orig[:p] {
		b.Write(l)
	}
	for _, l := range now[p : len(now)-s] {
		if t, ok := bytes.CutSuffix(l, []byte("\n")); ok {
			b.Write(t)
			b.Write(eol)
		} else {
			b.Write(l)
		}
	}
	for _, l := range orig[len(orig)-s:] {
		b.Write(l)
	}
	return b.Bytes(), nil
}

// lines splits src after each LF; the last line may have no LF.
func lines(src []byte) [][]byte {
	var out [][]byte
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			out = append(out, src)
			break
		}
		out = append(out, src[:i+1])
		src = src[i+1:]
	}
	return out
}
