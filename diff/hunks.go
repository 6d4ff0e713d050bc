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
// without one. The line matching is lineOps': Myers' algorithm (go-diff's) with
// no time limit, so the output does not depend on the machine, or the patience
// algorithm on large files.
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
	for i := 0; ; {
		start, stop, ok := nextHunk(ops, i, context)
		if !ok {
			break
		}
		oldN, newN := sideLines(ops[pos:start])
		oldLine, newLine, pos = oldLine+oldN, newLine+newN, start
		fd.writeHunk(&out, ops[start:stop], oldLine, newLine)
		i = stop
	}
	fd.Text = out.String()
	return fd
}

// nextHunk returns the bounds of the first hunk of ops from i on: context lines
// before its first change, to context lines after the last change that fewer than
// 2*context+1 equal lines follow. ok is false when no change is left.
func nextHunk(ops []lineOp, i, context int) (start, stop int, ok bool) {
	j := equalRun(ops, i) // the next change
	if j == len(ops) {
		return 0, 0, false
	}
	start = max(j-context, i)
	end := j
	for k := j; k < len(ops); {
		if ops[k].op != diffmatchpatch.DiffEqual {
			k++
			end = k
			continue
		}
		eq := equalRun(ops, k)
		if eq == len(ops) || eq-k > 2*context {
			break
		}
		k = eq
	}
	return start, min(end+context, len(ops)), true
}

// equalRun returns the end of the run of equal lines of ops from i on.
func equalRun(ops []lineOp, i int) int {
	for i < len(ops) && ops[i].op == diffmatchpatch.DiffEqual {
		i++
	}
	return i
}

// sideLines counts the lines of ops on each side: old (equal or deleted) and new
// (equal or inserted).
func sideLines(ops []lineOp) (oldN, newN int) {
	for _, l := range ops {
		if l.op != diffmatchpatch.DiffInsert {
			oldN++
		}
		if l.op != diffmatchpatch.DiffDelete {
			newN++
		}
	}
	return oldN, newN
}

// writeHunk writes the hunk of ops, which start at line oldLine of old and
// newLine of new, header "@@ -l,s +l,s @@" then a line each, and adds its
// insertions and deletions to fd's counts.
func (fd *FileDiff) writeHunk(out *strings.Builder, ops []lineOp, oldLine, newLine int) {
	oldN, newN := sideLines(ops)
	fd.Added += len(ops) - oldN
	fd.Removed += len(ops) - newN
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(oldLine, oldN), hunkRange(newLine, newN))
	for _, l := range ops {
		prefix := " "
		switch l.op {
		case diffmatchpatch.DiffInsert:
			prefix = "+"
		case diffmatchpatch.DiffDelete:
			prefix = "-"
		}
		out.WriteString(prefix)
		out.WriteString(l.text)
		if !strings.HasSuffix(l.text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// lineOp is one line of a diff: kept, deleted or inserted.
type lineOp struct {
	op   diffmatchpatch.Operation
	text string
}

// runeDiffLines is the most lines (old and new together, those found on both
// sides) matched by go-diff's Myers algorithm, whose time grows with the
// number of lines times the number of differences. Larger files are matched as
// git diff --patience does (matchPatience), in time close to linear, which
// hands stretches of at most stretchDiffLines lines to Myers' algorithm.
const (
	runeDiffLines    = 100_000
	stretchDiffLines = 10_000
)

// maxRuneID is the number of line ids that map to distinct valid runes (all of
// Unicode but the surrogates): go-diff matches runes, one per line.
const maxRuneID = utf8.MaxRune + 1 - 0x800

// lineOps matches the lines of old and new and returns them in order,
// deletions before insertions in each change. As xdiff and GNU diff do, lines
// found on one side only are left out of the matching: they are a deletion or
// an insertion in any diff, and the matching, quadratic in the number of
// differences, stays fast when a large file is rewritten. The rest is matched
// by go-diff (Myers' algorithm, with no time limit so that the result does not
// depend on the machine), or by matchPatience above runeDiffLines lines, so that
// the time stays bounded.
//
// Lines are numbered here, not by go-diff's DiffLinesToRunes, which gives each
// distinct line a rune and panics past some 1.1 million distinct lines (the
// DOT file of a cluster of a few hundred nodes).
func lineOps(old, new string) []lineOp {
	oldLines, newLines := splitLines(old), splitLines(new)
	a, b, distinct := numberLines(oldLines, newLines)
	inA, inB := linesIn(a, distinct), linesIn(b, distinct)
	matchA, matchB := keepLines(a, inB), keepLines(b, inA)
	var matched []diffmatchpatch.Operation
	if len(matchA)+len(matchB) <= runeDiffLines {
		matched = matchRunes(matchA, matchB, nil)
	} else {
		matched = matchPatience(matchA, matchB, nil)
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
	for _, op := range matched {
		unmatched()
		switch op {
		case diffmatchpatch.DiffEqual:
			ops = append(ops, lineOp{op, oldLines[i]})
			i++
			j++
		case diffmatchpatch.DiffDelete:
			ops = append(ops, lineOp{op, oldLines[i]})
			i++
		case diffmatchpatch.DiffInsert:
			ops = append(ops, lineOp{op, newLines[j]})
			j++
		}
	}
	unmatched()
	deletionsFirst(ops)
	return ops
}

// numberLines gives each distinct line of old and new an id, from 0 in the order
// they come (old first), and returns the lines' ids and how many there are.
func numberLines(old, new []string) (a, b []int32, distinct int) {
	ids := make(map[string]int32, len(old))
	number := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	a = number(old)
	b = number(new)
	return a, b, len(ids)
}

// linesIn returns, per line id of distinct, whether lines has it.
func linesIn(lines []int32, distinct int) []bool {
	in := make([]bool, distinct)
	for _, id := range lines {
		in[id] = true
	}
	return in
}

// keepLines returns the lines that keep says are on the other side too.
func keepLines(lines []int32, keep []bool) []int32 {
	var out []int32
	for _, id := range lines {
		if keep[id] {
			out = append(out, id)
		}
	}
	return out
}

// deletionsFirst puts the deletions of each change before its insertions, as
// diff -u and git print them.
func deletionsFirst(ops []lineOp) {
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
}

// matchRunes appends to out the matching of the line ids a and b by go-diff, one
// operation per line: equal (a line of each), delete (of a) or insert (of b).
// When a and b have more distinct lines than there are runes, every line is
// deleted and inserted (matchPatience only calls it on few lines).
func matchRunes(a, b []int32, out []diffmatchpatch.Operation) []diffmatchpatch.Operation {
	// Renumber the lines from 0, and skip the surrogates.
	local := map[int32]rune{}
	toRunes := func(ids []int32) []rune {
		rs := make([]rune, len(ids))
		for i, id := range ids {
			r, ok := local[id]
			if !ok {
				r = rune(len(local))
				if r >= 0xD800 {
					r += 0x800
				}
				local[id] = r
			}
			rs[i] = r
		}
		return rs
	}
	ra, rb := toRunes(a), toRunes(b)
	if len(local) > maxRuneID {
		return deleteInsert(len(a), len(b), out)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		for range utf8.RuneCountInString(d.Text) {
			out = append(out, d.Type)
		}
	}
	return out
}

// deleteInsert appends the deletion of n lines and the insertion of m.
func deleteInsert(n, m int, out []diffmatchpatch.Operation) []diffmatchpatch.Operation {
	for range n {
		out = append(out, diffmatchpatch.DiffDelete)
	}
	for range m {
		out = append(out, diffmatchpatch.DiffInsert)
	}
	return out
}

// matchPatience appends to out the matching of the line ids a and b as git diff
// --patience makes it: the common first and last lines are kept; the lines found
// exactly once on each side, in the longest run in the same order on both, are
// kept too, and the stretches between them are matched the same way. A stretch
// without such lines goes to go-diff when it is small, else is deleted and
// inserted whole.
func matchPatience(a, b []int32, out []diffmatchpatch.Operation) []diffmatchpatch.Operation {
	// Common first and last lines.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	for range pre {
		out = append(out, diffmatchpatch.DiffEqual)
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	out = matchMiddle(ma, mb, out)
	for range suf {
		out = append(out, diffmatchpatch.DiffEqual)
	}
	return out
}

// matchMiddle is matchPatience without common first and last lines.
func matchMiddle(a, b []int32, out []diffmatchpatch.Operation) []diffmatchpatch.Operation {
	if len(a) == 0 || len(b) == 0 {
		return deleteInsert(len(a), len(b), out)
	}
	// Lines found once on each side: their position in a (or -1 when more).
	type count struct{ inA, inB, posA int32 }
	counts := make(map[int32]*count, len(a))
	for i, id := range a {
		c := counts[id]
		if c == nil {
			c = &count{posA: int32(i)}
			counts[id] = c
		}
		c.inA++
	}
	for _, id := range b {
		if c := counts[id]; c != nil {
			c.inB++
		}
	}
	// Their positions in a, in the order of b; the longest increasing run of
	// them (patience sorting) are the anchors.
	var posB, posA []int32
	for j, id := range b {
		if c := counts[id]; c != nil && c.inA == 1 && c.inB == 1 {
			posA = append(posA, c.posA)
			posB = append(posB, int32(j))
		}
	}
	if len(posA) == 0 {
		if len(a)+len(b) <= stretchDiffLines {
			return matchRunes(a, b, out)
		}
		return deleteInsert(len(a), len(b), out)
	}
	anchors := longestIncreasing(posA)
	i, j := 0, 0
	for _, k := range anchors {
		ai, bj := int(posA[k]), int(posB[k])
		out = matchPatience(a[i:ai], b[j:bj], out)
		out = append(out, diffmatchpatch.DiffEqual)
		i, j = ai+1, bj+1
	}
	return matchPatience(a[i:], b[j:], out)
}

// longestIncreasing returns the indexes of a longest strictly increasing
// subsequence of xs, in order (patience sorting, n log n).
func longestIncreasing(xs []int32) []int {
	var tops []int               // tops[l]: index of the smallest end of a run of length l+1
	prev := make([]int, len(xs)) // the element before xs[i] in its run
	for i, x := range xs {
		l, _ := slices.BinarySearchFunc(tops, x, func(t int, x int32) int { return cmp.Compare(xs[t], x) })
		if l > 0 {
			prev[i] = tops[l-1]
		} else {
			prev[i] = -1
		}
		if l == len(tops) {
			tops = append(tops, i)
		} else {
			tops[l] = i
		}
	}
	out := make([]int, len(tops))
	for k, i := len(tops)-1, tops[len(tops)-1]; k >= 0; k, i = k-1, prev[i] {
		out[k] = i
	}
	return out
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
