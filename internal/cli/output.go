package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// formatVersion is the version of every JSON document fuelsync prints.
const formatVersion = "1"

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// writeTable prints a table: the head, then each row, in columns two spaces
// apart. The caller escapes the cells (safetext) that quote the repository.
func writeTable(w io.Writer, head []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, row := range append([][]string{head}, rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func severityName(s hcl.DiagnosticSeverity) string {
	if s == hcl.DiagError {
		return "error"
	}
	return "warning"
}

// writeDiagnosticsText prints each diagnostic as `file:line:col: error: summary`,
// then the source line with the range marked and the detail, as compilers do.
func writeDiagnosticsText(w io.Writer, diags hcl.Diagnostics, files map[string]*hcl.File, prefix string, color bool) {
	for _, d := range diags {
		sev := severityName(d.Severity)
		if color {
			c := ansiRed
			if d.Severity != hcl.DiagError {
				c = ansiYellow
			}
			sev = c + ansiBold + sev + ansiReset
		}
		// The summary, the file name and the detail may quote the repository:
		// each is escaped (safetext), so that none can print a line of its own.
		if d.Subject == nil {
			fmt.Fprintf(w, "%s: %s\n", sev, safetext.Line(d.Summary))
		} else {
			s := d.Subject
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", safetext.Line(prefix+s.Filename), s.Start.Line, s.Start.Column, sev, safetext.Line(d.Summary))
			if f, ok := files[s.Filename]; ok {
				writeSnippet(w, f.Bytes, *s)
			}
		}
		if d.Detail != "" {
			for _, line := range strings.Split(d.Detail, "\n") {
				fmt.Fprintf(w, "  %s\n", safetext.Line(line))
			}
		}
	}
}

// maxSnippetWidth is the most of a source line a snippet shows: a longer line
// (minified JSON, a generated flow list) is cut around the range, with "..." for
// what is left out.
const maxSnippetWidth = 160

// writeSnippet prints the subject's first line with a marker under the range.
func writeSnippet(w io.Writer, src []byte, r hcl.Range) {
	raw, ok := sourceLine(src, r.Start.Line)
	if !ok {
		return
	}
	line := strings.TrimRight(string(raw), "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	col := max(r.Start.Column, 1) // 1-based, in runes
	width := 1
	if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
		width = r.End.Column - r.Start.Column
	} else if r.End.Line > r.Start.Line {
		width = utf8.RuneCountInString(line) - col + 1
	}
	width = max(width, 1)
	if n := utf8.RuneCountInString(line); n > maxSnippetWidth {
		from := max(0, min(col-1-maxSnippetWidth/4, n-maxSnippetWidth))
		to := from + maxSnippetWidth
		shown := runeSlice(line, from, to)
		if from > 0 {
			shown = "..." + shown
			col = col - from + 3
		}
		if to < n {
			shown += "..."
		}
		width = max(1, min(width, to-(r.Start.Column-1)))
		line = shown
	}
	line = strings.ReplaceAll(line, "\t", " ")
	// The line is printed escaped (safetext), the marker under the escaped
	// text of the range.
	n := utf8.RuneCountInString(line)
	start, end := min(max(col-1, 0), n), min(max(col-1, 0)+width, n)
	before := safetext.Line(runeSlice(line, 0, start))
	marked := safetext.Line(runeSlice(line, start, end))
	pad := utf8.RuneCountInString(before) + max(col-1-n, 0)
	carets := utf8.RuneCountInString(marked) + width - (end - start)
	num := fmt.Sprint(r.Start.Line)
	fmt.Fprintf(w, "  %s | %s%s%s\n", num, before, marked, safetext.Line(runeSlice(line, end, n)))
	fmt.Fprintf(w, "  %s | %s%s\n", strings.Repeat(" ", len(num)), strings.Repeat(" ", pad), strings.Repeat("^", max(carets, 1)))
}

// runeSlice returns the runes [from, to) of s.
func runeSlice(s string, from, to int) string {
	start, i := len(s), 0
	for off := range s {
		if i == from {
			start = off
		}
		if i == to {
			return s[start:off]
		}
		i++
	}
	return s[start:]
}

// sourceLine returns line n (1-based) of src without copying the file.
func sourceLine(src []byte, n int) ([]byte, bool) {
	if n < 1 {
		return nil, false
	}
	for i := 1; i < n; i++ {
		nl := bytes.IndexByte(src, '\n')
		if nl < 0 {
			return nil, false
		}
		src = src[nl+1:]
	}
	if nl := bytes.IndexByte(src, '\n'); nl >= 0 {
		src = src[:nl]
	}
	return src, true
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonDiagnostic struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *jsonRange `json:"range,omitempty"`
}

func toJSONDiagnostics(diags hcl.Diagnostics, prefix string) []jsonDiagnostic {
	out := make([]jsonDiagnostic, 0, len(diags))
	for _, d := range diags {
		jd := jsonDiagnostic{Severity: severityName(d.Severity), Summary: d.Summary, Detail: d.Detail}
		if s := d.Subject; s != nil {
			jd.Range = &jsonRange{
				Filename: prefix + s.Filename,
				Start:    jsonPos{s.Start.Line, s.Start.Column, s.Start.Byte},
				End:      jsonPos{s.End.Line, s.End.Column, s.End.Byte},
			}
		}
		out = append(out, jd)
	}
	return out
}

// writeDiagnosticsJSON prints the machine-readable result of validate.
func writeDiagnosticsJSON(w io.Writer, diags hcl.Diagnostics, prefix string, valid bool) error {
	nerr, nwarn := 0, 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			nerr++
		} else {
			nwarn++
		}
	}
	return writeJSON(w, struct {
		FormatVersion string           `json:"format_version"`
		Valid         bool             `json:"valid"`
		ErrorCount    int              `json:"error_count"`
		WarningCount  int              `json:"warning_count"`
		Diagnostics   []jsonDiagnostic `json:"diagnostics"`
	}{formatVersion, valid, nerr, nwarn, toJSONDiagnostics(diags, prefix)})
}

// GitHub workflow commands escape their data and property values.
var (
	ghData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// writeDiagnosticsGitHub prints GitHub Actions annotations (::error file=…,line=…::msg).
func writeDiagnosticsGitHub(w io.Writer, diags hcl.Diagnostics, prefix string) {
	for _, d := range diags {
		msg := d.Summary
		if d.Detail != "" {
			msg += "\n" + d.Detail
		}
		msg = ghData.Replace(safetext.Lines(msg))
		if s := d.Subject; s != nil {
			fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d,title=fuelsync::%s\n",
				severityName(d.Severity), ghProperty.Replace(safetext.Line(prefix+s.Filename)), s.Start.Line, s.Start.Column,
				s.End.Line, s.End.Column, msg)
		} else {
			fmt.Fprintf(w, "::%s title=fuelsync::%s\n", severityName(d.Severity), msg)
		}
	}
}

// Warnings of one kind (the same summary but for quoted names and numbers) are
// summarised past warningsShown+warningsSpare of them: the first warningsShown
// are printed, then a line saying how many more there are.
const (
	warningsShown = 3
	warningsSpare = 2
)

// kindREs are compiled on first use, not at start-up.
var kindREs = sync.OnceValues(func() (quoted, number *regexp.Regexp) {
	return regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'[^']*'`), regexp.MustCompile(`\d+`)
})

// warningKind is what warnings of one kind share: their summary with quoted
// names and numbers taken out ("duplicate key "x" (first at line 8)").
func warningKind(d *hcl.Diagnostic) string {
	quoted, number := kindREs()
	return number.ReplaceAllString(quoted.ReplaceAllString(d.Summary, `"…"`), "N")
}

// writeDiagnostics prints diagnostics for a person on w: none of the warnings
// with -q, and past a few warnings of one kind a count of the others instead
// (validate --format json lists every one).
func (g *globals) writeDiagnostics(w io.Writer, diags hcl.Diagnostics, files map[string]*hcl.File, prefix string) {
	g.failure.note(diags, prefix)
	total := map[string]int{}
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			total[warningKind(d)]++
		}
	}
	hint := "run 'fuelsync validate --format json' for all"
	if g.command == "validate" {
		hint = "use --format json for all"
	}
	seen := map[string]int{}
	var batch hcl.Diagnostics
	flush := func() {
		writeDiagnosticsText(w, batch, files, prefix, g.useColor(w))
		batch = nil
	}
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			batch = append(batch, d)
			continue
		}
		if g.quiet {
			continue
		}
		k := warningKind(d)
		seen[k]++
		n := total[k]
		switch {
		case n <= warningsShown+warningsSpare || seen[k] < warningsShown:
			batch = append(batch, d)
		case seen[k] == warningsShown:
			batch = append(batch, d)
			flush()
			fmt.Fprintf(w, "… and %d more like this (%s)\n", n-warningsShown, hint)
		}
	}
	flush()
}
