package loader

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// checker collects diagnostics while walking a Value tree. It never stops at the
// first problem: fuel-plugin-builder did, fuelsync reports everything.
type checker struct {
	diags hcl.Diagnostics
}

func (c *checker) add(d ...*hcl.Diagnostic) { c.diags = append(c.diags, d...) }

func (c *checker) errf(r hcl.Range, format string, args ...any) {
	c.diags = append(c.diags, errorAt(r, format, args...))
}

func (c *checker) warnf(r hcl.Range, format string, args ...any) {
	c.diags = append(c.diags, warnAt(r, format, args...))
}

// where returns the range to blame for key of mapping m: the key when present, else
// the mapping itself.
func where(m *Value, key string) hcl.Range {
	if f := m.Field(key); f != nil {
		return f.KeyRange
	}
	return m.Range
}

// mapping checks that v is a mapping; what names it in the message.
func (c *checker) mapping(v *Value, what string) bool {
	if v.IsMap() {
		return true
	}
	if v.IsNull() {
		c.errf(v.Range, "%s is empty; it must be a mapping", what)
		return false
	}
	c.errf(v.Range, "%s must be a mapping, not a %s", what, v.Kind)
	return false
}

// str returns the string at key. A missing required key, or a value that is not a
// scalar, is an error naming what.
func (c *checker) str(m *Value, key, what string, required bool) (string, bool) {
	v := m.Get(key)
	if v.IsNull() {
		if required {
			c.errf(m.Range, "%s: missing required field %q", what, key)
		}
		return "", false
	}
	s, ok := v.Str()
	if !ok {
		c.errf(v.Range, "%s: %s must be a string, not a %s", what, key, v.Kind)
		return "", false
	}
	return s, true
}

// strList returns the strings of a list at key (a single string is accepted when
// single is true).
func (c *checker) strList(m *Value, key, what string, required, single bool) ([]string, bool) {
	v := m.Get(key)
	if v.IsNull() {
		if required {
			c.errf(m.Range, "%s: missing required field %q", what, key)
		}
		return nil, false
	}
	if v.Kind != KindList && !(single && v.IsScalar()) {
		c.errf(v.Range, "%s: %s must be a list of strings, not a %s", what, key, v.Kind)
		return nil, false
	}
	out, ok := v.Strings()
	if !ok {
		for _, it := range v.Items {
			if !it.IsScalar() {
				c.errf(it.Range, "%s: every item of %s must be a string, not a %s", what, key, it.Kind)
			}
		}
		return nil, false
	}
	return out, true
}

// boolean checks an optional boolean at key.
func (c *checker) boolean(m *Value, key, what string) (bool, bool) {
	v := m.Get(key)
	if v.IsNull() {
		return false, false
	}
	if v.Kind != KindBool {
		c.errf(v.Range, "%s: %s must be true or false, not %q", what, key, v.Text)
		return false, false
	}
	return v.Bool, true
}

// pattern checks s against re; what and rule are used in the message.
func (c *checker) pattern(r hcl.Range, re matcher, s, what, rule string) bool {
	if re.MatchString(s) {
		return true
	}
	c.errf(r, "invalid %s %s: %s", what, quoteShort(s), rule)
	return false
}

// quoteShort quotes s for a message, cut to 200 bytes (a name can be a whole
// line of input).
func quoteShort(s string) string {
	if len(s) <= 200 {
		return strconv.Quote(s)
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// misspelled warns about keys of m that are not known but are close to a known
// key (real data has `cross-depened-by`); other unknown keys are allowed silently.
func (c *checker) misspelled(m *Value, known map[string]bool, what string) {
	for _, f := range m.Fields {
		if known[f.Key] {
			continue
		}
		if best := closest(f.Key, known); best != "" {
			c.add(withDetail(warnAt(f.KeyRange, "%s: unknown key %q, did you mean %q?", what, f.Key, best),
				"Unknown keys are kept but ignored; this one looks like a misspelling of a key that has a meaning."))
		}
	}
}

// unknownKey warns that f is not one of the known keys of what and is ignored,
// with the closest known key as a suggestion when there is one.
func (c *checker) unknownKey(f Field, known map[string]bool, what string) {
	if best := closestShort(f.Key, known); best != "" {
		c.warnf(f.KeyRange, "%s: unknown key %q is ignored; did you mean %q?", what, f.Key, best)
		return
	}
	c.warnf(f.KeyRange, "%s: unknown key %q is ignored", what, f.Key)
}

// closestShort is closest, and for keys too short for it (idd, rol) a known key
// one edit away. Only for places that warn about every unknown key anyway: the
// hint then costs no new warning.
func closestShort(k string, known map[string]bool) string {
	if best := closest(k, known); best != "" || len(k) >= 4 || len(k) < 2 {
		return best
	}
	for _, kk := range sortedKeys(known) {
		if editDistance(strings.ToLower(k), kk) == 1 {
			return kk
		}
	}
	return ""
}

// Suggest returns the candidate closest to name within a small edit distance (for
// "did you mean" hints), or "".
func Suggest(name string, candidates []string) string {
	known := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		known[c] = true
	}
	return closest(name, known)
}

// closest returns the known key within a small edit distance of k, or "".
func closest(k string, known map[string]bool) string {
	if len(k) < 4 {
		return ""
	}
	keys := make([]string, 0, len(known))
	for kk := range known {
		keys = append(keys, kk)
	}
	sort.Strings(keys)
	best, bestD := "", 3
	for _, kk := range keys {
		limit := 2
		if len(kk) < 7 {
			limit = 1
		}
		if d := editDistance(strings.ToLower(k), kk); d <= limit && d < bestD {
			best, bestD = kk, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions, deletions,
// substitutions and transpositions of adjacent letters (rolse, roles) cost 1.
func editDistance(a, b string) int {
	if a == b {
		return 0
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
