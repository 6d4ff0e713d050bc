// Package capabilities implements Heat resource capabilities (the heat-specs
// "resource-capabilities" design, which upstream Heat never implemented):
// templates that declare `capabilities:` (tags such as deployment: docker, and the
// resource types they implement), introspection over them (find, summary), and
// environments whose registry lists are resolved by `requires`, merged by Heat's
// own environment rules.
package capabilities

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

var reKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// ResourceType is the reserved capability naming the types a template implements.
const ResourceType = "resource_type"

// Template is a Heat template (a document with heat_template_version) and its
// capabilities.
type Template struct {
	Path string
	// Keys are the capability keys in the order written; Values each key's values
	// (one for a string); List says which were written as lists.
	Keys   []string
	Values map[string][]string
	List   map[string]bool
	Ranges map[string]hcl.Range // of each key
}

// Has reports whether the template declares key, and with value when value is not
// "" (equality, or membership of a list).
func (t *Template) Has(key, value string) bool {
	vals, ok := t.Values[key]
	if !ok {
		return false
	}
	return value == "" || slices.Contains(vals, value)
}

// JSON is the capabilities as written: strings and lists of strings.
func (t *Template) JSON() map[string]any {
	out := map[string]any{}
	for _, k := range t.Keys {
		if t.List[k] {
			out[k] = t.Values[k]
		} else {
			out[k] = t.Values[k][0]
		}
	}
	return out
}

// ParseTemplate reads file name: ok is false when it is not a Heat template (no
// heat_template_version at its top level). The capabilities are validated; every
// problem is a diagnostic at its place.
func ParseTemplate(name string, src []byte) (t *Template, ok bool, diags hcl.Diagnostics) {
	v, diags := loader.DecodeYAML(name, src)
	if diags.HasErrors() {
		return nil, false, diags
	}
	if !v.IsMap() || !v.Has("heat_template_version") {
		return nil, false, nil
	}
	t = &Template{Path: name, Values: map[string][]string{}, List: map[string]bool{}, Ranges: map[string]hcl.Range{}}
	f := v.Field("capabilities")
	if f == nil {
		return t, true, diags
	}
	bad := func(r hcl.Range, format string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, args...), Subject: r.Ptr()})
	}
	if !f.Value.IsMap() {
		if !f.Value.IsNull() {
			bad(f.Value.Range, "capabilities must map keys to a string or list of strings")
		}
		return t, true, diags
	}
	for _, c := range f.Value.Fields {
		if !reKey().MatchString(c.Key) {
			bad(c.KeyRange, "capability key %q must match %s", c.Key, reKey())
			continue
		}
		var vals []string
		switch {
		case c.Value.Kind == loader.KindString:
			vals = []string{c.Value.Text}
		case c.Value.IsList() && len(c.Value.Items) > 0:
			t.List[c.Key] = true
			for _, it := range c.Value.Items {
				if it.Kind != loader.KindString {
					bad(it.Range, "capabilities must map keys to a string or list of strings; %s has a %s", c.Key, kindName(it))
					vals = nil
					break
				}
				vals = append(vals, it.Text)
			}
		default:
			bad(c.Value.Range, "capabilities must map keys to a string or list of strings; %s is a %s", c.Key, kindName(c.Value))
		}
		if vals == nil {
			continue
		}
		if c.Key == ResourceType {
			for i, typ := range vals {
				if !strings.Contains(typ, "::") {
					bad(c.Value.Range, "resource_type %q is not a resource type (Vendor::Service::Type)", vals[i])
				}
			}
		}
		t.Keys = append(t.Keys, c.Key)
		t.Values[c.Key] = vals
		t.Ranges[c.Key] = c.KeyRange
	}
	return t, true, diags
}

func kindName(v *loader.Value) string {
	switch v.Kind {
	case loader.KindNull:
		return "null"
	case loader.KindBool:
		return "boolean"
	case loader.KindInt, loader.KindFloat:
		return "number"
	case loader.KindList:
		return "list"
	case loader.KindMap:
		return "mapping"
	}
	return "string"
}

// Cond is one -c of capabilities find: key=value, or a bare key (present).
type Cond struct {
	Key, Value string
}

// ParseCond reads key=value or key.
func ParseCond(s string) (Cond, error) {
	k, v, _ := strings.Cut(s, "=")
	if !reKey().MatchString(k) {
		return Cond{}, fmt.Errorf("-c %q: the key must match %s", s, reKey())
	}
	return Cond{Key: k, Value: v}, nil
}

// Matches reports whether t satisfies every condition.
func (t *Template) Matches(conds []Cond) bool {
	for _, c := range conds {
		if !t.Has(c.Key, c.Value) {
			return false
		}
	}
	return true
}

// Summary is `capabilities summary`: every key but resource_type with its
// distinct values in first-seen order, and every declared resource type with
// the templates implementing it.
func Summary(templates []*Template) map[string][]string {
	out := map[string][]string{}
	add := func(k, v string) {
		if !slices.Contains(out[k], v) {
			out[k] = append(out[k], v)
		}
	}
	for _, t := range templates {
		for _, k := range t.Keys {
			for _, v := range t.Values[k] {
				if k == ResourceType {
					add(v, t.Path)
				} else {
					add(k, v)
				}
			}
		}
	}
	return out
}
