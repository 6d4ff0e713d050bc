package diff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileDiff is the unified diff of one file.
type FileDiff struct {
	Name           string
	Added, Removed int    // lines
	Text           string // "" when the contents are the same
}

// File returns the unified diff of old and new as git diff prints it: headers
// "--- a/name" and "+++ b/name" ("/dev/null" for a side that is nil: a new or a
// deleted file), hunks "@@ -l,s +l,s @@" with context lines of context (merged when
// closer than twice that), and "\ No newline at end of file" after a last line
// without one. The line matching is go-diff's (diffmatchpatch in line mode), with
// no time limit, so the output does not depend on the machine.
func File(name string, old, new []byte, context int) FileDiff {
	fd := FileDiff{Name: name}
	if string(old) == string(new) && (old == nil) == (new == nil) {
		return fd
	}
	type line struct {
		op   diffmatchpatch.Operation
		text string
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	a, b, lines := dmp.DiffLinesToRunes(string(old), string(new))
	var ops []line
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMainRunes(a, b, false), lines) {
		for _, l := range splitLines(d.Text) {
			ops = append(ops, line{d.Type, l})
		}
	}
	var out strings.Builder
	oldName, newName := "a/"+name, "b/"+name
	if old == nil {
		oldName = "/dev/null"
	}
	if new == nil {
		newName = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// Walk the ops, cutting hunks around the changes.
	for i := 0; i < len(ops); {
		// the next change
		j := i
		for j < len(ops) && ops[j].op == diffmatchpatch.DiffEqual {
			j++
		}
		if j == len(ops) {
			break
		}
		start := max(j-context, i)
		// the end of the hunk: after the last change followed by fewer than
		// 2*context+1 equal lines
		end := j
		for k := j; k < len(ops); {
			if ops[k].op != diffmatchpatch.DiffEqual {
				k++
				end = k
				continue
			}
			eq := k
			for eq < len(ops) && ops[eq].op == diffmatchpatch.DiffEqual {
				eq++
			}
			if eq == len(ops) || eq-k > 2*context {
				break
			}
			k = eq
		}
		stop := min(end+context, len(ops))
		// line numbers of the hunk's first line
		oldLine, newLine := 1, 1
		for _, l := range ops[:start] {
			if l.op != diffmatchpatch.DiffInsert {
				oldLine++
			}
			if l.op != diffmatchpatch.DiffDelete {
				newLine++
			}
		}
		var oldN, newN int
		var body strings.Builder
		for _, l := range ops[start:stop] {
			prefix := " "
			switch l.op {
			case diffmatchpatch.DiffInsert:
				prefix = "+"
				newN++
				fd.Added++
			case diffmatchpatch.DiffDelete:
				prefix = "-"
				oldN++
				fd.Removed++
			default:
				oldN++
				newN++
			}
			body.WriteString(prefix)
			body.WriteString(l.text)
			if !strings.HasSuffix(l.text, "\n") {
				body.WriteString("\n\\ No newline at end of file\n")
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(oldLine, oldN), hunkRange(newLine, newN))
		out.WriteString(body.String())
		i = stop
	}
	fd.Text = out.String()
	return fd
}

// hunkRange is git's "l,s": "l" alone for one line, and the line before for none.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// splitLines splits s after each newline; a last line without one is kept.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
