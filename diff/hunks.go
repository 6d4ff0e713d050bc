package diff

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

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
	ops := lineOps(string(old), string(new))
	context = min(max(context, 0), len(ops)) // a negative context is none; 2*context must not overflow
	var out strings.Builder
	oldName, newName := "a/"+name, "b/"+name
	if old == nil {
		oldName = "/dev/null"
	}
	if new == nil {
		newName = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// Walk the ops, cutting hunks around the changes; oldLine and newLine are
	// the line numbers of ops[pos].
	oldLine, newLine, pos := 1, 1, 0
	advance := func(to int) {
		for ; pos < to; pos++ {
			if ops[pos].op != diffmatchpatch.DiffInsert {
				oldLine++
			}
			if ops[pos].op != diffmatchpatch.DiffDelete {
				newLine++
			}
		}
	}
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
		advance(start)
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

// lineOp is one line of a diff: kept, deleted or inserted.
type lineOp struct {
	op   diffmatchpatch.Operation
	text string
}

// lineOps matches the lines of old and new with go-diff in line mode, with no
// time limit so that the result does not depend on the machine, and returns
// them in order, deletions before insertions in each change. As xdiff and GNU
// diff do, lines found on one side only are left out of the matching: they are
// a deletion or an insertion in any diff, and the matching, quadratic in the
// number of differences, stays fast when a large file is rewritten.
func lineOps(old, new string) []lineOp {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	a, b, _ := dmp.DiffLinesToRunes(old, new)
	oldLines, newLines := splitLines(old), splitLines(new) // a[i] is oldLines[i]
	inA, inB := make(map[rune]bool, len(a)), make(map[rune]bool, len(b))
	for _, r := range a {
		inA[r] = true
	}
	for _, r := range b {
		inB[r] = true
	}
	var matchA, matchB []rune
	for _, r := range a {
		if inB[r] {
			matchA = append(matchA, r)
		}
	}
	for _, r := range b {
		if inA[r] {
			matchB = append(matchB, r)
		}
	}
	ops := make([]lineOp, 0, len(a)+len(b))
	i, j := 0, 0 // the next lines of old and new
	// unmatched adds the lines of old and new up to the next ones found on both sides.
	unmatched := func() {
		for ; i < len(a) && !inB[a[i]]; i++ {
			ops = append(ops, lineOp{diffmatchpatch.DiffDelete, oldLines[i]})
		}
		for ; j < len(b) && !inA[b[j]]; j++ {
			ops = append(ops, lineOp{diffmatchpatch.DiffInsert, newLines[j]})
		}
	}
	for _, d := range dmp.DiffMainRunes(matchA, matchB, false) {
		for range utf8.RuneCountInString(d.Text) {
			unmatched()
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				ops = append(ops, lineOp{d.Type, oldLines[i]})
				i++
				j++
			case diffmatchpatch.DiffDelete:
				ops = append(ops, lineOp{d.Type, oldLines[i]})
				i++
			case diffmatchpatch.DiffInsert:
				ops = append(ops, lineOp{d.Type, newLines[j]})
				j++
			}
		}
	}
	unmatched()
	// Deletions before insertions, as diff -u and git print them.
	for k := 0; k < len(ops); {
		if ops[k].op == diffmatchpatch.DiffEqual {
			k++
			continue
		}
		end := k
		for end < len(ops) && ops[end].op != diffmatchpatch.DiffEqual {
			end++
		}
		slices.SortStableFunc(ops[k:end], func(x, y lineOp) int {
			return cmp.Compare(x.op, y.op) // DiffDelete < DiffInsert
		})
		k = end
	}
	return ops
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
