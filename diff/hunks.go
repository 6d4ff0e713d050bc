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
	ids := make(map[string]int32, len(oldLines))
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
	a, b := number(oldLines), number(newLines)
	inA, inB := make([]bool, len(ids)), make([]bool, len(ids))
	for _, id := range a {
		inA[id] = true
	}
	for _, id := range b {
		inB[id] = true
	}
	var matchA, matchB []int32
	for _, id := range a {
		if inB[id] {
			matchA = append(matchA, id)
		}
	}
	for _, id := range b {
		if inA[id] {
			matchB = append(matchB, id)
		}
	}
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
