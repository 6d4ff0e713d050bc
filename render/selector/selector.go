package selector

import (
	"cmp"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"sync"

	"github.com/fuelsync/fuelsync/loader"
)

// Master is the name of the master pseudo node.
const Master = "master"

// star is the selector string that selects every node.
const star = "*"

// Node is a node as the resolver sees it: its name, id and resolution tags (already
// with primary-<tag> substitution done by the caller). The pseudo node "master" is
// never in this list; the resolver returns the name "master" for the item 'master'.
type Node struct {
	Name string
	ID   int
	Tags []string
}

// Match is one selector item that selects a node, with the node's tag it matched:
// the tag itself for an exact item, the first (in sorted order) of the node's tags
// that a regular expression item matched, "*" for the string "*" and "master" for
// the item 'master' on the master pseudo node.
type Match struct {
	Item, Tag string
}

// Index answers selector queries over a cluster's nodes. Build it with NewIndex once
// per cluster; it is safe for concurrent use.
type Index struct {
	names  []string         // node names, by position (ascending id)
	byName map[string]int32 // node name → position

	tags     []string         // distinct tags, sorted
	tagID    map[string]int32 // tag → index in tags
	tagNodes [][]int32        // per tag: positions of the nodes carrying it, ascending
	nodeTags [][]int32        // per position: the node's tag indexes, ascending

	words   int       // length of a node bitset
	scratch sync.Pool // *[]uint64 node bitsets for unions, all zero when in the pool

	mu      sync.RWMutex
	regexes map[string]*regexEntry // by item ("/re/")
}

// regexEntry is a regular expression item resolved against the cluster's tags.
type regexEntry struct {
	tagMatch []bool  // per tag index: whether the expression matches the tag
	nodes    []int32 // positions of the nodes having a matching tag, ascending
}

// NewIndex indexes nodes by tag. Node ids are expected to be unique (ties are broken
// by name); a tag listed twice on a node counts once.
func NewIndex(nodes []Node) *Index {
	sorted := slices.Clone(nodes)
	slices.SortStableFunc(sorted, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name))
	})

	ix := &Index{
		names:   make([]string, len(sorted)),
		byName:  make(map[string]int32, len(sorted)),
		tagID:   map[string]int32{},
		words:   (len(sorted) + 63) / 64,
		regexes: map[string]*regexEntry{},
	}
	for pos, n := range sorted {
		ix.names[pos] = n.Name
		if _, dup := ix.byName[n.Name]; !dup {
			ix.byName[n.Name] = int32(pos)
		}
		for _, t := range n.Tags {
			if _, seen := ix.tagID[t]; !seen {
				ix.tagID[t] = 0
				ix.tags = append(ix.tags, t)
			}
		}
	}
	sort.Strings(ix.tags)
	for i, t := range ix.tags {
		ix.tagID[t] = int32(i)
	}

	ix.tagNodes = make([][]int32, len(ix.tags))
	ix.nodeTags = make([][]int32, len(sorted))
	for pos, n := range sorted {
		ids := make([]int32, 0, len(n.Tags))
		for _, t := range n.Tags {
			ids = append(ids, ix.tagID[t])
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		ix.nodeTags[pos] = ids
		for _, id := range ids {
			ix.tagNodes[id] = append(ix.tagNodes[id], int32(pos))
		}
	}

	words := ix.words
	ix.scratch.New = func() any {
		b := make([]uint64, words)
		return &b
	}
	return ix
}

// Resolve returns the nodes a selector value selects, sorted by node id (master first
// when selected), without duplicates. ok is false when the selector is null, absent,
// a mapping or a non-string scalar (nothing is selected), or is a list with an item
// that is not a string (the item is ignored, the other items still select), so the
// caller can warn. An empty list selects nothing and is fine.
//
// A cross dependency's policy is the caller's: with policy any, nailgun keeps one
// node of this result, and fuelsync's render chooses it by the tasks the nodes run.
func (ix *Index) Resolve(sel *loader.Value) (nodes []string, ok bool) {
	switch {
	case sel.IsNull():
		return nil, false
	case sel.Kind == loader.KindString:
		if sel.Text == star {
			return ix.every(), true
		}
		return resolveItems(ix, oneItem(sel.Text))
	case sel.Kind == loader.KindList:
		return resolveItems(ix, valueItems(sel.Items))
	}
	return nil, false
}

// ResolveNames is Resolve for a selector already extracted into strings: star is true
// for the string "*" form (items are then ignored), else items is the list.
func (ix *Index) ResolveNames(items []string, star bool) []string {
	if star {
		return ix.every()
	}
	nodes, _ := resolveItems(ix, stringItems(items))
	return nodes
}

// Matches reports which items of the selector select the node named node, for
// provenance: for each such item, the item and the tag it matched (see Match). The
// string "*" gives {"*", "*"} for every node but the master; the item 'master' gives
// {"master", "master"} for the master. An unknown node or a malformed selector gives
// nothing. An item written twice is reported once.
func (ix *Index) Matches(sel *loader.Value, node string) []Match {
	pos, known := ix.byName[node]
	if !known && node != Master {
		return nil
	}
	if !known {
		pos = -1
	}
	switch {
	case sel.IsNull():
		return nil
	case sel.Kind == loader.KindString:
		if sel.Text == star {
			if pos < 0 {
				return nil
			}
			return []Match{{Item: star, Tag: star}}
		}
		if m, ok := ix.matchItem(sel.Text, pos); ok {
			return []Match{m}
		}
	case sel.Kind == loader.KindList:
		var out []Match
		for _, it := range sel.Items {
			if it == nil || it.Kind != loader.KindString {
				continue
			}
			if m, ok := ix.matchItem(it.Text, pos); ok && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

// matchItem reports whether item selects the node at pos (-1: the master).
func (ix *Index) matchItem(item string, pos int32) (Match, bool) {
	if item == Master {
		return Match{Item: item, Tag: Master}, pos < 0
	}
	if pos < 0 {
		return Match{}, false
	}
	if isRegex(item) {
		e := ix.regex(item)
		if e.tagMatch == nil {
			return Match{}, false
		}
		for _, id := range ix.nodeTags[pos] {
			if e.tagMatch[id] {
				return Match{Item: item, Tag: ix.tags[id]}, true
			}
		}
		return Match{}, false
	}
	id, ok := ix.tagID[item]
	if !ok {
		return Match{}, false
	}
	if _, found := slices.BinarySearch(ix.nodeTags[pos], id); !found {
		return Match{}, false
	}
	return Match{Item: item, Tag: item}, true
}

// every is the result of the string "*": all nodes, never the master.
func (ix *Index) every() []string {
	if len(ix.names) == 0 {
		return nil
	}
	return slices.Clone(ix.names)
}

// lookup returns the positions of the nodes that a non-master item selects.
func (ix *Index) lookup(item string) []int32 {
	if isRegex(item) {
		return ix.regex(item).nodes
	}
	if id, ok := ix.tagID[item]; ok {
		return ix.tagNodes[id]
	}
	return nil
}

// isRegex reports whether a selector item is a regular expression, written "/re/".
func isRegex(item string) bool {
	return len(item) >= 2 && item[0] == '/' && item[len(item)-1] == '/'
}

// regex returns the resolved regular expression item, compiling and matching it
// against the cluster's tags on first use. An expression that does not compile
// matches nothing (the loader reports it).
func (ix *Index) regex(item string) *regexEntry {
	ix.mu.RLock()
	e := ix.regexes[item]
	ix.mu.RUnlock()
	if e != nil {
		return e
	}

	e = &regexEntry{}
	if re := compileAnchored(item[1 : len(item)-1]); re != nil {
		e.tagMatch = make([]bool, len(ix.tags))
		var set []uint64
		found := false
		for id, t := range ix.tags {
			if !re.MatchString(t) {
				continue
			}
			e.tagMatch[id] = true
			if !found {
				set = make([]uint64, ix.words)
				found = true
			}
			for _, pos := range ix.tagNodes[id] {
				set[pos>>6] |= 1 << (pos & 63)
			}
		}
		if found {
			e.nodes = make([]int32, 0, popcount(set))
			e.nodes = appendPositions(e.nodes, set)
		}
	}

	ix.mu.Lock()
	if prev := ix.regexes[item]; prev != nil {
		e = prev
	} else {
		ix.regexes[item] = e
	}
	ix.mu.Unlock()
	return e
}

// compileAnchored compiles pattern so that it matches at the start of a string only,
// as Python's re.match does; nil when the pattern does not compile. The pattern is
// compiled on its own first, so that a pattern such as `a)(b` that only becomes valid
// inside the anchoring group is still rejected.
func compileAnchored(pattern string) *regexp.Regexp {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)`)
	if err != nil {
		return nil
	}
	return re
}

// items is a selector list as resolveItems reads it; at reports false for an item
// that is not a string.
type items interface {
	len() int
	at(i int) (string, bool)
}

type oneItem string

func (s oneItem) len() int              { return 1 }
func (s oneItem) at(int) (string, bool) { return string(s), true }

type stringItems []string

func (s stringItems) len() int                { return len(s) }
func (s stringItems) at(i int) (string, bool) { return s[i], true }

type valueItems []*loader.Value

func (s valueItems) len() int { return len(s) }
func (s valueItems) at(i int) (string, bool) {
	v := s[i]
	if v == nil || v.Kind != loader.KindString {
		return "", false
	}
	return v.Text, true
}

// resolveItems resolves a selector list. A single selecting item (the usual case) is
// answered from the index directly; several are merged through a pooled bitset.
func resolveItems[L items](ix *Index, list L) ([]string, bool) {
	ok := true
	master := false
	var first []int32
	several := false
	n := list.len()
	for i := 0; i < n; i++ {
		item, isStr := list.at(i)
		switch {
		case !isStr:
			ok = false
		case item == Master:
			master = true
		default:
			l := ix.lookup(item)
			switch {
			case len(l) == 0:
			case first == nil:
				first = l
			case &l[0] != &first[0] || len(l) != len(first):
				several = true
			}
		}
	}

	if !several {
		return ix.namesOf(first, master), ok
	}

	bp := ix.scratch.Get().(*[]uint64)
	set := *bp
	for i := 0; i < n; i++ {
		item, isStr := list.at(i)
		if !isStr || item == Master {
			continue
		}
		for _, pos := range ix.lookup(item) {
			set[pos>>6] |= 1 << (pos & 63)
		}
	}
	cnt := popcount(set)
	if master {
		cnt++
	}
	out := make([]string, 0, cnt)
	if master {
		out = append(out, Master)
	}
	for w, word := range set {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, ix.names[w<<6|b])
			word &= word - 1
		}
	}
	clear(set)
	ix.scratch.Put(bp)
	return out, ok
}

// namesOf returns the names of the nodes at positions (ascending), after the master
// when master is set.
func (ix *Index) namesOf(positions []int32, master bool) []string {
	if len(positions) == 0 && !master {
		return nil
	}
	cnt := len(positions)
	if master {
		cnt++
	}
	out := make([]string, 0, cnt)
	if master {
		out = append(out, Master)
	}
	for _, pos := range positions {
		out = append(out, ix.names[pos])
	}
	return out
}

func popcount(set []uint64) int {
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	return n
}

func appendPositions(dst []int32, set []uint64) []int32 {
	for w, word := range set {
		for word != 0 {
			dst = append(dst, int32(w<<6|bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return dst
}
