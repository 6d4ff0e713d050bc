package components

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// Component is one entry of the registry.
type Component struct {
	Name, Label, Description string
	// Weight orders components within a wizard pane; 0 when absent.
	Weight    int
	HasWeight bool
	Default   bool
	// Compatible and Incompatible are the relations as written followed by those the
	// registry added to make them symmetric (Relation.Added).
	Compatible, Incompatible []Relation
	// Requires holds the plain form entries ({name}) and the predicates
	// ({one_of|any_of|none_of|all_of: {items}}) in the order written.
	Requires []Requirement
	Bind     []Bind
	// Plugin is the name of the plugin that owns the component; "" for the release.
	Plugin string
	// Range is where the component's name is written.
	Range hcl.Range
	Data  *loader.Value
}

// Relation is an entry of a component's compatible or incompatible list.
type Relation struct {
	// Name is a component name or a pattern (a '*' makes it a prefix match, see Match).
	Name    string
	Message string
	// Range is where the name is written; for an added relation, the entry of the other
	// component it mirrors.
	Range hcl.Range
	// Added is true for a relation the registry made symmetric, not written.
	Added bool
}

// Requirement is an entry of a component's requires list.
type Requirement struct {
	// Predicate is "" for the plain form {name: X} (Names holds X), or one of one_of,
	// any_of, none_of, all_of (Names holds the items).
	Predicate string
	Names     []string
	Message   string
	// Range is where the name (plain form) or the predicate key is written.
	Range hcl.Range
}

// Bind is an attribute a component sets when it is chosen.
type Bind struct {
	// Path is "settings:<group>.<attribute>.<field>" or "cluster:<attribute>".
	Path string
	// Value is the value to set; nil for the string form, which sets true.
	Value *loader.Value
	Range hcl.Range
}

// Source is a set of components owned by the release (Plugin == "") or a plugin.
type Source struct {
	Plugin     string
	Components []*loader.Component
}

// Registry is the component registry of one release: the release's components and
// those of the plugins compatible with it, relations made symmetric.
type Registry struct {
	comps  []*Component
	byName map[string]*Component
}

// Predicate names of the requires predicate form, in nailgun's order.
var predicates = []string{"one_of", "any_of", "none_of", "all_of"}

// New builds the registry from the release's components and the components of the
// plugins compatible with it, in the order given (the release's sources first).
//
// A component named like one of the release or of another plugin is nailgun's
// overlap error, at the later component. Then compatible and incompatible are made
// symmetric: when A lists a pattern that matches B and B lists nothing that matches
// A, B gets {name: A} (compatible) or {name: A, message: "Not compatible with <A's
// label or name>"} (incompatible). Malformed entries that the loader has already
// reported are skipped; a malformed weight, default or bind is an error here.
func New(sources []Source) (*Registry, hcl.Diagnostics) {
	return build(sources, true)
}

func build(sources []Source, symmetric bool) (*Registry, hcl.Diagnostics) {
	r := &Registry{byName: map[string]*Component{}}
	var diags hcl.Diagnostics
	ordered := make([]Source, 0, len(sources))
	for _, s := range sources {
		if s.Plugin == "" {
			ordered = append(ordered, s)
		}
	}
	for _, s := range sources {
		if s.Plugin != "" {
			ordered = append(ordered, s)
		}
	}
	for _, s := range ordered {
		for _, lc := range s.Components {
			if lc == nil {
				continue
			}
			if prev := r.byName[lc.Name]; prev != nil {
				if prev.Plugin == s.Plugin {
					// nailgun keeps the first of a plugin's repeated names.
					diags = append(diags, withDetail(warnAt(lc.Range, "duplicate component name %q: only the first, at %s, is used", lc.Name, at(prev.Range)),
						"Component names are unique within a release and its plugins."))
					continue
				}
				owner := "release"
				if prev.Plugin != "" {
					owner = prev.Plugin
				}
				diags = append(diags, withDetail(errorAt(lc.Range, "Plugin %s is overlapping with %s by introducing the same component with name %q", s.Plugin, owner, lc.Name),
					fmt.Sprintf("The component is already defined at %s. Rename one of them, or do not enable both plugins for this release.", at(prev.Range))))
				continue
			}
			c, ds := parseComponent(lc, s.Plugin)
			diags = append(diags, ds...)
			r.comps = append(r.comps, c)
			r.byName[c.Name] = c
		}
	}
	if symmetric {
		r.makeSymmetric()
	}
	return r, diags
}

// makeSymmetric completes compatible and incompatible the way nailgun's
// Release.get_all_components does.
func (r *Registry) makeSymmetric() {
	written := make(map[*Component][2]int, len(r.comps))
	for _, c := range r.comps {
		written[c] = [2]int{len(c.Compatible), len(c.Incompatible)}
	}
	for _, a := range r.comps {
		for _, e := range a.Incompatible[:written[a][1]] {
			for _, b := range r.comps {
				if b == a || !Match(e.Name, b.Name) || lists(b.Incompatible, a.Name) {
					continue
				}
				b.Incompatible = append(b.Incompatible, Relation{Name: a.Name, Message: "Not compatible with " + a.labelOrName(), Range: e.Range, Added: true})
			}
		}
		for _, e := range a.Compatible[:written[a][0]] {
			for _, b := range r.comps {
				if b == a || !Match(e.Name, b.Name) || lists(b.Compatible, a.Name) {
					continue
				}
				b.Compatible = append(b.Compatible, Relation{Name: a.Name, Range: e.Range, Added: true})
			}
		}
	}
}

func (c *Component) labelOrName() string {
	if c.Label != "" {
		return c.Label
	}
	return c.Name
}

// lists reports whether an entry of rels matches name.
func lists(rels []Relation, name string) bool {
	for _, e := range rels {
		if Match(e.Name, name) {
			return true
		}
	}
	return false
}

// All returns the components in registry order: the release's, then each plugin's.
func (r *Registry) All() []*Component { return r.comps }

// Get returns the component named name, or nil.
func (r *Registry) Get(name string) *Component { return r.byName[name] }

// Match reports whether a relation pattern matches a component name. A pattern with a
// '*' matches by prefix on everything before the first '*' (hypervisor:* matches
// every hypervisor, a:*:b every name starting with "a:"), as nailgun does; any other
// pattern must equal the name.
func Match(pattern, name string) bool {
	if i := strings.IndexByte(pattern, '*'); i >= 0 {
		return strings.HasPrefix(name, pattern[:i])
	}
	return pattern == name
}

// typeOf is a component's type: the part of its name before the first ':'.
func typeOf(name string) string {
	t, _, _ := strings.Cut(name, ":")
	return t
}

func parseComponent(lc *loader.Component, plugin string) (*Component, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	v := lc.Data
	c := &Component{Name: lc.Name, Plugin: plugin, Range: lc.Range, Data: v}
	what := "component " + lc.Name
	c.Label, _ = v.Get("label").Str()
	c.Description, _ = v.Get("description").Str()
	if w := v.Get("weight"); !w.IsNull() {
		n, ok := intOf(w)
		if ok {
			c.Weight, c.HasWeight = n, true
		} else {
			diags = append(diags, errorAt(w.Range, "%s: weight must be an integer, not %s", what, describe(w)))
		}
	}
	if d := v.Get("default"); !d.IsNull() {
		if d.Kind == loader.KindBool {
			c.Default = d.Bool
		} else {
			diags = append(diags, errorAt(d.Range, "%s: default must be true or false, not %s", what, describe(d)))
		}
	}
	c.Compatible = relations(v.Get("compatible"))
	c.Incompatible = relations(v.Get("incompatible"))
	c.Requires = requirements(v.Get("requires"))
	var ds hcl.Diagnostics
	c.Bind, ds = binds(v.Get("bind"), what)
	diags = append(diags, ds...)
	return c, diags
}

func intOf(v *loader.Value) (int, bool) {
	switch v.Kind {
	case loader.KindInt:
		return int(v.Int), true
	case loader.KindFloat:
		if v.Float == float64(int(v.Float)) {
			return int(v.Float), true
		}
	case loader.KindString:
		if n, err := strconv.Atoi(strings.TrimSpace(v.Text)); err == nil {
			return n, true
		}
	}
	return 0, false
}

func describe(v *loader.Value) string {
	if v.IsScalar() {
		return fmt.Sprintf("the %s %q", v.Kind, v.Text)
	}
	return "a " + v.Kind.String()
}

// relations reads a compatible or incompatible list: mappings {name, message?} (and,
// leniently, bare names). Entries without a name were reported by the loader.
func relations(v *loader.Value) []Relation {
	if !v.IsList() {
		return nil
	}
	var out []Relation
	for _, it := range v.Items {
		if s, ok := it.Str(); ok && it.Kind == loader.KindString {
			out = append(out, Relation{Name: s, Range: it.Range})
			continue
		}
		n := it.Get("name")
		name, ok := n.Str()
		if !ok {
			continue
		}
		msg, _ := it.Get("message").Str()
		out = append(out, Relation{Name: name, Message: msg, Range: n.Range})
	}
	return out
}

// requirements reads a requires list: {name, message?} entries and predicate entries
// {<predicate>: {items: [...], message?}, message?} (the message may be written on
// the entry or, as fuel-ui reads it, inside the predicate).
func requirements(v *loader.Value) []Requirement {
	if !v.IsList() {
		return nil
	}
	var out []Requirement
	for _, it := range v.Items {
		if !it.IsMap() {
			continue
		}
		msg, _ := it.Get("message").Str()
		found := false
		for _, f := range it.Fields {
			if !isPredicate(f.Key) {
				continue
			}
			found = true
			items := f.Value.Get("items")
			names, ok := items.Strings()
			if !ok {
				continue
			}
			m := msg
			if m == "" {
				m, _ = f.Value.Get("message").Str()
			}
			out = append(out, Requirement{Predicate: f.Key, Names: names, Message: m, Range: f.KeyRange})
		}
		if found {
			continue
		}
		n := it.Get("name")
		if name, ok := n.Str(); ok {
			out = append(out, Requirement{Names: []string{name}, Message: msg, Range: n.Range})
		}
	}
	return out
}

func isPredicate(key string) bool {
	for _, p := range predicates {
		if p == key {
			return true
		}
	}
	return false
}

const bindForms = `A bind entry is a path string ("settings:<group>.<attribute>.<field>", set to true), a pair [path, value] (what YAML's !!pairs gives), or a one-key mapping {path: value}.`

// binds reads a component's bind: a list of path strings, pairs and one-key mappings
// (a !!pairs list decodes to pairs), or a mapping of paths to values.
func binds(v *loader.Value, what string) ([]Bind, hcl.Diagnostics) {
	if v.IsNull() {
		return nil, nil
	}
	var out []Bind
	var diags hcl.Diagnostics
	add := func(path string, pathRange hcl.Range, val *loader.Value, r hcl.Range) {
		if d := checkBindPath(path, pathRange, what); d != nil {
			diags = append(diags, d)
			return
		}
		out = append(out, Bind{Path: path, Value: val, Range: r})
	}
	bad := func(it *loader.Value) {
		diags = append(diags, withDetail(errorAt(it.Range, "%s: bind entry must be a path, a [path, value] pair or a {path: value} mapping, not %s", what, describe(it)), bindForms))
	}
	entry := func(it *loader.Value) {
		switch {
		case it.Kind == loader.KindString:
			add(it.Text, it.Range, nil, it.Range)
		case it.Kind == loader.KindList && len(it.Items) == 2 && it.Items[0].Kind == loader.KindString:
			add(it.Items[0].Text, it.Items[0].Range, it.Items[1], it.Range)
		case it.Kind == loader.KindMap && len(it.Fields) == 1:
			f := it.Fields[0]
			add(f.Key, f.KeyRange, f.Value, it.Range)
		default:
			bad(it)
		}
	}
	switch v.Kind {
	case loader.KindList:
		for _, it := range v.Items {
			entry(it)
		}
	case loader.KindMap:
		for _, f := range v.Fields {
			add(f.Key, f.KeyRange, f.Value, f.KeyRange)
		}
	case loader.KindString:
		entry(v)
	default:
		bad(v)
	}
	return out, diags
}

func checkBindPath(path string, r hcl.Range, what string) *hcl.Diagnostic {
	model, rest, ok := strings.Cut(path, ":")
	if ok && rest != "" && (model == "settings" || model == "cluster") {
		if model == "cluster" || !strings.Contains(rest, "..") && !strings.HasPrefix(rest, ".") && !strings.HasSuffix(rest, ".") {
			return nil
		}
	}
	return withDetail(errorAt(r, "%s: bind path %q must be settings:<group>.<attribute>.<field> or cluster:<attribute>", what, path), bindForms)
}

func errorAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(summary, args...), Subject: &r}
}

func warnAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(summary, args...), Subject: &r}
}

func withDetail(d *hcl.Diagnostic, detail string) *hcl.Diagnostic {
	d.Detail = detail
	return d
}

// at returns "file:line" of r, for messages that name a second place.
func at(r hcl.Range) string {
	if r.Filename == "" {
		return "(unknown)"
	}
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}
