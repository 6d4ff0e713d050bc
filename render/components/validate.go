package components

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// Problem is one failed check of a cluster's selection, with the upstream message text.
type Problem struct {
	// Component is the selected component the check failed for; for names the release
	// does not offer, the first such name as selected; "" for missing types.
	Component string
	Message   string
	// Range is the selected entry that caused the problem (its loader.Ref.Range); for
	// missing types, the first selected entry, or the zero range for an empty selection.
	Range hcl.Range
}

// Validate checks a cluster's `components:` selection as nailgun's
// ComponentsRestrictions.validate_components does, with the same messages:
//
//  1. names the registry does not offer: "['a', 'b'] components are not related to
//     used release." (a Python list, sorted);
//  2. for each chosen component, in registry order: each incompatible entry matching
//     a chosen name; each requires type group (plain form: OR within a type, AND
//     across types) or predicate that fails, or the mixed-format error;
//  3. requiredTypes not covered by the chosen components' types.
//
// An entry's `message` is appended to the upstream text after a space, as fuel-ui
// shows it. nailgun stops at its first error; Validate goes on and reports every
// failed check in nailgun's order, so the first Problem is the one nailgun reports.
// Names of matches are sorted (nailgun prints an unordered set).
func (r *Registry) Validate(selected []loader.Ref, requiredTypes []string) []Problem {
	var probs []Problem
	first := map[string]loader.Ref{}
	var missing []string
	var firstMissing *loader.Ref
	for i, s := range selected {
		if _, dup := first[s.Name]; dup {
			continue
		}
		first[s.Name] = s
		if r.byName[s.Name] == nil {
			missing = append(missing, s.Name)
			if firstMissing == nil {
				firstMissing = &selected[i]
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		probs = append(probs, Problem{
			Component: firstMissing.Name,
			Message:   pyList(missing) + " components are not related to used release.",
			Range:     firstMissing.Range,
		})
	}
	chosen := r.chosen(keys(first))
	types := map[string]bool{}
	for _, c := range r.comps {
		ref, ok := first[c.Name]
		if !ok {
			continue
		}
		for _, m := range r.check(c, chosen) {
			probs = append(probs, Problem{Component: c.Name, Message: m, Range: ref.Range})
		}
		types[typeOf(c.Name)] = true
	}
	var absent []string
	seen := map[string]bool{}
	for _, t := range requiredTypes {
		if !types[t] && !seen[t] {
			seen[t] = true
			absent = append(absent, t)
		}
	}
	if len(absent) > 0 {
		sort.Strings(absent)
		var rng hcl.Range
		if len(selected) > 0 {
			rng = selected[0].Range
		}
		probs = append(probs, Problem{Message: "Components with " + pyList(absent) + " types are required but wasn't found in data.", Range: rng})
	}
	return probs
}

func keys(m map[string]loader.Ref) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// chosen returns the names of selected that the registry offers, sorted, without
// repeats.
func (r *Registry) chosen(selected []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range selected {
		if r.byName[n] != nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// matching returns the names (sorted when names is) that pattern matches.
func matching(pattern string, names []string) []string {
	var out []string
	for _, n := range names {
		if Match(pattern, n) {
			out = append(out, n)
		}
	}
	return out
}

// withMessages appends the non-empty messages to msg, each after a space.
func withMessages(msg string, messages ...string) string {
	for _, m := range messages {
		if m != "" {
			msg += " " + m
		}
	}
	return msg
}

// check returns the messages of c's incompatible and requires checks against the
// chosen names (sorted), in nailgun's order.
func (r *Registry) check(c *Component, chosen []string) []string {
	var out []string
	for _, e := range c.Incompatible {
		if m := matching(e.Name, chosen); len(m) > 0 {
			out = append(out, withMessages(fmt.Sprintf("Incompatible components were found: '%s' incompatible with %s.", c.Name, pyList(m)), e.Message))
		}
	}
	plain, pred := 0, 0
	for _, q := range c.Requires {
		if q.Predicate == "" {
			plain++
		} else {
			pred++
		}
	}
	switch {
	case plain > 0 && pred > 0:
		out = append(out, fmt.Sprintf("Component '%s' has mixed format of requires.", c.Name))
	case plain > 0:
		groups := append([]Requirement(nil), c.Requires...)
		sort.SliceStable(groups, func(i, j int) bool { return typeOf(groups[i].Names[0]) < typeOf(groups[j].Names[0]) })
		for i := 0; i < len(groups); {
			j := i
			for j < len(groups) && typeOf(groups[j].Names[0]) == typeOf(groups[i].Names[0]) {
				j++
			}
			group := groups[i:j]
			i = j
			ok := false
			for _, q := range group {
				if len(matching(q.Names[0], chosen)) > 0 {
					ok = true
					break
				}
			}
			if ok {
				continue
			}
			names := make([]string, len(group))
			msgs := make([]string, len(group))
			for k, q := range group {
				names[k], msgs[k] = q.Names[0], q.Message
			}
			sort.Strings(names)
			out = append(out, withMessages(fmt.Sprintf("Component '%s' requires any of components from %s set.", c.Name, pyList(names)), msgs...))
		}
	case pred > 0:
		for _, q := range c.Requires {
			if r.holds(q, chosen) {
				continue
			}
			items := append([]string(nil), q.Names...)
			sort.Strings(items)
			out = append(out, withMessages(fmt.Sprintf("Requirements was not satisfied for component '%s': %s(%s)", c.Name, q.Predicate, pyList(items)), q.Message))
		}
	}
	return out
}

// holds evaluates a predicate requirement: one_of needs exactly one chosen match,
// any_of at least one, none_of none, all_of every offered match chosen.
func (r *Registry) holds(q Requirement, chosen []string) bool {
	matched := map[string]bool{}
	for _, it := range q.Names {
		for _, n := range matching(it, chosen) {
			matched[n] = true
		}
	}
	switch q.Predicate {
	case "one_of":
		return len(matched) == 1
	case "any_of":
		return len(matched) > 0
	case "none_of":
		return len(matched) == 0
	case "all_of":
		for _, c := range r.comps {
			for _, it := range q.Names {
				if Match(it, c.Name) && !matched[c.Name] {
					return false
				}
			}
		}
	}
	return true
}

// pyList formats names as Python prints a list of strings: ['a', 'b'].
func pyList(names []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyRepr(n))
	}
	b.WriteByte(']')
	return b.String()
}

// pyRepr quotes s as Python 3's repr of a str does.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c == rune(q):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
			b.WriteString(`\x` + fmt.Sprintf("%02x", c))
		case !unicode.IsPrint(c) && c != ' ':
			if c <= 0xffff {
				b.WriteString(`\u` + fmt.Sprintf("%04x", c))
			} else {
				b.WriteString(`\U` + fmt.Sprintf("%08x", c))
			}
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// The states of a component for a selection.
const (
	StateSelected  = "selected"
	StateAvailable = "available"
	StateDisabled  = "disabled"
)

// State is a component's state for a selection: what the creation wizard shows.
type State struct {
	Name string
	// State is "selected", "available" or "disabled".
	State string
	// Reason says why a component is disabled: the messages Validate would report for
	// it if it were added to the selection.
	Reason string
	// Compatible is the green light: every other chosen component of the component's
	// own wizard pane or an earlier one matches one of its compatible entries.
	Compatible bool
}

// paneOrder is the order of the creation wizard's panes, by component type.
var paneOrder = map[string]int{"hypervisor": 0, "network": 1, "storage": 2, "additional_service": 3}

func pane(name string) int {
	if i, ok := paneOrder[typeOf(name)]; ok {
		return i
	}
	return len(paneOrder)
}

// States returns the state of every component, in registry order, for a selection,
// as fuel-ui's creation wizard computes it once every pane is decided:
//
//   - selected: the component is in the selection (names not offered are ignored);
//   - disabled: it is not, and adding it would fail its own checks: an incompatible
//     entry matches a chosen component (relations are symmetric, so this covers the
//     chosen components that declare it incompatible), or its requires do not hold
//     with it added. Reason holds the messages Validate would give;
//   - available: otherwise.
//
// Compatible (not for disabled components) is the wizard's green light
// (processCompatible): every other chosen component whose type's pane is not after
// the component's own (hypervisor, network, storage, additional_service) matches an
// entry of its compatible list.
func (r *Registry) States(selected []string) []State {
	chosen := r.chosen(selected)
	isChosen := map[string]bool{}
	for _, n := range chosen {
		isChosen[n] = true
	}
	out := make([]State, 0, len(r.comps))
	for _, c := range r.comps {
		st := State{Name: c.Name, State: StateAvailable}
		if isChosen[c.Name] {
			st.State = StateSelected
		} else {
			with := append(append([]string(nil), chosen...), c.Name)
			sort.Strings(with)
			if msgs := r.check(c, with); len(msgs) > 0 {
				st.State, st.Reason = StateDisabled, strings.Join(msgs, " ")
			}
		}
		if st.State != StateDisabled {
			st.Compatible = greenLight(c, chosen)
		}
		out = append(out, st)
	}
	return out
}

func greenLight(c *Component, chosen []string) bool {
	own := pane(c.Name)
	for _, n := range chosen {
		if n == c.Name || pane(n) > own {
			continue
		}
		if !lists(c.Compatible, n) {
			return false
		}
	}
	return true
}
