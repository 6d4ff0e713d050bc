package components

import "github.com/fuelsync/fuelsync/loader"

// APIComponent is one component as nailgun's component-registry API
// (GET /api/v1/releases/<id>/components, Release.get_all_components) returns it: the
// component's keys as written, relations made symmetric, without `bind`. Keys that
// are not written are left out, as upstream does.
type APIComponent struct {
	Name         string           `json:"name"`
	Label        string           `json:"label,omitempty"`
	Description  string           `json:"description,omitempty"`
	Weight       *int             `json:"weight,omitempty"`
	Default      *bool            `json:"default,omitempty"`
	Compatible   []APIRelation    `json:"compatible,omitempty"`
	Incompatible []APIRelation    `json:"incompatible,omitempty"`
	Requires     []APIRequirement `json:"requires,omitempty"`
}

// APIRelation is an entry of compatible or incompatible.
type APIRelation struct {
	Name    string `json:"name"`
	Message string `json:"message,omitempty"`
}

// APIRequirement is an entry of requires: {name, message?} or one predicate
// {one_of|any_of|none_of|all_of: {items, message?}, message?}, the message where it
// is written.
type APIRequirement struct {
	Name    string        `json:"name,omitempty"`
	OneOf   *APIPredicate `json:"one_of,omitempty"`
	AnyOf   *APIPredicate `json:"any_of,omitempty"`
	NoneOf  *APIPredicate `json:"none_of,omitempty"`
	AllOf   *APIPredicate `json:"all_of,omitempty"`
	Message string        `json:"message,omitempty"`
}

// APIPredicate is the body of a predicate requirement.
type APIPredicate struct {
	Items   []string `json:"items"`
	Message string   `json:"message,omitempty"`
}

// API returns the registry as the component-registry API's JSON, in registry order.
func (r *Registry) API() []APIComponent {
	out := make([]APIComponent, 0, len(r.comps))
	for _, c := range r.comps {
		a := APIComponent{
			Name:         c.Name,
			Label:        c.Label,
			Description:  c.Description,
			Compatible:   apiRelations(c.Compatible),
			Incompatible: apiRelations(c.Incompatible),
			Requires:     apiRequires(c.Data.Get("requires")),
		}
		if c.HasWeight {
			w := c.Weight
			a.Weight = &w
		}
		if d := c.Data.Get("default"); d != nil && d.Kind == loader.KindBool {
			b := d.Bool
			a.Default = &b
		}
		out = append(out, a)
	}
	return out
}

func apiRelations(rels []Relation) []APIRelation {
	if len(rels) == 0 {
		return nil
	}
	out := make([]APIRelation, len(rels))
	for i, e := range rels {
		out[i] = APIRelation{Name: e.Name, Message: e.Message}
	}
	return out
}

func apiRequires(v *loader.Value) []APIRequirement {
	if !v.IsList() {
		return nil
	}
	var out []APIRequirement
	for _, it := range v.Items {
		if !it.IsMap() {
			continue
		}
		q := APIRequirement{}
		q.Name, _ = it.Get("name").Str()
		q.Message, _ = it.Get("message").Str()
		for _, f := range it.Fields {
			if !isPredicate(f.Key) {
				continue
			}
			items, ok := f.Value.Get("items").Strings()
			if !ok {
				continue
			}
			p := &APIPredicate{Items: append([]string{}, items...)}
			p.Message, _ = f.Value.Get("message").Str()
			switch f.Key {
			case "one_of":
				q.OneOf = p
			case "any_of":
				q.AnyOf = p
			case "none_of":
				q.NoneOf = p
			case "all_of":
				q.AllOf = p
			}
		}
		if q.Name == "" && q.OneOf == nil && q.AnyOf == nil && q.NoneOf == nil && q.AllOf == nil {
			continue
		}
		out = append(out, q)
	}
	return out
}

// PluginsFor returns the plugins that own a selected component, in registry order:
// choosing a plugin's component enables the plugin (nailgun's
// enable_plugins_by_components).
func (r *Registry) PluginsFor(selected []string) []string {
	want := map[string]bool{}
	for _, n := range selected {
		want[n] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range r.comps {
		if c.Plugin != "" && want[c.Name] && !seen[c.Plugin] {
			seen[c.Plugin] = true
			out = append(out, c.Plugin)
		}
	}
	return out
}

// Binds returns the binds of the selected components, in registry order and, within a
// component, in the order written.
func (r *Registry) Binds(selected []string) []Bind {
	want := map[string]bool{}
	for _, n := range selected {
		want[n] = true
	}
	var out []Bind
	for _, c := range r.comps {
		if want[c.Name] {
			out = append(out, c.Bind...)
		}
	}
	return out
}
