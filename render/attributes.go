package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// mergeAttributes builds the cluster's editable attributes and the expression models:
// the release's groups; a group per plugin compatible with the release, named after
// it, whose metadata.enabled says whether this cluster enables it; the `bind` of every
// chosen component; the cluster's `settings:` last.
func (b *builder) mergeAttributes(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	attrs, pluginGroup := b.pluginGroups(m)
	clusterModel := map[string]any{
		"name":             c.Name,
		"mode":             nailgunMode(c.Mode),
		"net_provider":     "neutron",
		"net_segment_type": "vlan",
		"status":           "new",
	}
	attrs, bound := b.applyBinds(m, attrs, clusterModel)

	// The cluster's settings: each must name an existing attribute.
	for _, s := range c.SettingsKeys {
		diags = append(diags, b.checkSetting(m, attrs, pluginGroup, s)...)
	}
	if c.Settings != nil {
		attrs = loader.DeepMerge(attrs, c.Settings)
	}
	m.Attributes = attrs
	for _, g := range attrs.Fields {
		for _, a := range fields(g.Value) {
			if a.Value.Get("type").String() == "password" {
				m.Sensitive[g.Key+"."+a.Key] = true
			}
		}
	}
	m.Models = b.expressionModels(m, clusterModel)
	// The settings as nailgun checks them when they are saved.
	diags = append(diags, b.checkSettings(m, pluginGroup, bound)...)
	return diags
}

// pluginGroups returns the release's attributes with a group per plugin compatible
// with the release, named after it, whose metadata.enabled says whether the
// cluster enables it; and those plugins by group name.
func (b *builder) pluginGroups(m *Model) (*loader.Value, map[string]*loader.Plugin) {
	attrs := m.Release.Attributes
	if !attrs.IsMap() {
		attrs = loader.NewMap(m.Release.Range)
	}
	pluginGroup := map[string]*loader.Plugin{}
	for _, p := range CompatiblePlugins(b.repo, m.Release) {
		pluginGroup[p.Name] = p
		group := p.Attributes
		if !group.IsMap() {
			group = loader.NewMap(p.NameRange)
		}
		meta := group.Get("metadata")
		if !meta.IsMap() {
			meta = loader.NewMap(group.Range)
		}
		meta = meta.With("enabled", meta.Range, boolValue(m.Plugin(p.Name) != nil, meta.Range))
		attrs = attrs.With(p.Name, p.NameRange, group.With("metadata", group.Range, meta))
	}
	return attrs, pluginGroup
}

// applyBinds applies the binds of the chosen components: settings:a.b.c to attrs
// (which it returns), cluster:x to clusterModel. bound remembers which components:
// entry set each attribute (group.attribute), for the settings checks.
func (b *builder) applyBinds(m *Model, attrs *loader.Value, clusterModel map[string]any) (_ *loader.Value, bound map[string]hcl.Range) {
	bindRef := map[hcl.Range]hcl.Range{}
	for _, ref := range m.Cluster.Components {
		for _, bd := range m.Registry.Binds([]string{ref.Name}) {
			bindRef[bd.Range] = ref.Range
		}
	}
	bound = map[string]hcl.Range{}
	for _, bd := range m.Registry.Binds(m.Selected) {
		val := bd.Value
		if val == nil {
			val = boolValue(true, bd.Range)
		}
		model, path, _ := strings.Cut(bd.Path, ":")
		switch model {
		case "settings":
			parts := strings.Split(path, ".")
			attrs = loader.DeepMerge(attrs, nested(parts, val, bd.Range))
			if len(parts) >= 2 {
				bound[parts[0]+"."+parts[1]] = bindRef[bd.Range]
			}
		case "cluster":
			clusterModel[path] = val.Interface()
		default:
			b.dataDiag(errorAt(bd.Range, "bind: %q must start with settings: or cluster:", bd.Path))
		}
	}
	return attrs, bound
}

// expressionModels are the models restrictions and conditions read: settings (the
// merged attributes), cluster, networking_parameters, version, release and
// node_attributes.
func (b *builder) expressionModels(m *Model, clusterModel map[string]any) expr.Models {
	featureGroups := make([]any, len(b.repo.Settings.FeatureGroups))
	for i, g := range b.repo.Settings.FeatureGroups {
		featureGroups[i] = g
	}
	nodeAttrs := map[string]any{}
	if na, ok := m.Release.Data.Get("node_attributes").Interface().(map[string]any); ok {
		nodeAttrs = na
	}
	return expr.Models{
		"settings": m.Attributes.Interface(),
		"cluster":  clusterModel,
		"networking_parameters": map[string]any{
			"segmentation_type": clusterModel["net_segment_type"],
			"net_l23_provider":  "ovs",
		},
		"version": map[string]any{"feature_groups": featureGroups},
		"release": map[string]any{
			"name":             m.Release.Name,
			"version":          m.Release.Version,
			"operating_system": m.Release.OperatingSystem,
		},
		"node_attributes": nodeAttrs,
	}
}

// checkSetting checks one value of the cluster's `settings:`: its group and
// attribute exist, plugin settings belong to an enabled plugin, and a checkbox gets a
// boolean and a select or radio one of its values.
func (b *builder) checkSetting(m *Model, attrs *loader.Value, pluginGroup map[string]*loader.Plugin, s loader.Setting) hcl.Diagnostics {
	name := m.Cluster.Name
	dotted := strings.Join(s.Path, ".")
	group := attrs.Get(s.Path[0])
	if group == nil {
		d := errorAt(s.Range, "cluster %s: settings: unknown group %q", name, s.Path[0])
		if p := b.repo.FindPlugin(s.Path[0]); p != nil {
			return hcl.Diagnostics{withDetail(d, "Plugin %s is not compatible with release %s, so it has no settings here.", p.Name, m.Release.Version)}
		}
		return hcl.Diagnostics{suggest(d, s.Path[0], attrs.Keys(), "groups")}
	}
	if len(s.Path) < 3 {
		return hcl.Diagnostics{withDetail(errorAt(s.Range, "cluster %s: settings: %q names no attribute value", name, dotted),
			"Write the full path of the value: group.attribute.value, e.g. common.debug.value: true.")}
	}
	if s.Path[1] == "metadata" && pluginGroup[s.Path[0]] != nil {
		return hcl.Diagnostics{withDetail(errorAt(s.Range, "cluster %s: settings: %q is managed by fuelsync", name, dotted),
			"A plugin's metadata group says whether it is enabled; enable a plugin with plugins: or by choosing one of its components.")}
	}
	attr := group.Get(s.Path[1])
	if attr == nil {
		keys := slices.DeleteFunc(group.Keys(), func(k string) bool { return k == "metadata" })
		return hcl.Diagnostics{suggest(errorAt(s.Range, "cluster %s: settings: group %s has no attribute %q", name, s.Path[0], s.Path[1]), s.Path[1], keys, "attributes")}
	}
	if !attr.Has(s.Path[2]) {
		return hcl.Diagnostics{suggest(errorAt(s.Range, "cluster %s: settings: attribute %s.%s has no key %q", name, s.Path[0], s.Path[1], s.Path[2]), s.Path[2], attr.Keys(), "keys")}
	}
	var diags hcl.Diagnostics
	if p := pluginGroup[s.Path[0]]; p != nil && m.Plugin(p.Name) == nil {
		diags = append(diags, withDetail(warnAt(s.Range, "cluster %s: settings: %s sets an attribute of plugin %s, which is not enabled", name, dotted, p.Name),
			"The value is kept, but nothing uses it until the plugin is enabled (plugins:)."))
	}
	if len(s.Path) == 3 && s.Path[2] == "value" {
		diags = append(diags, checkSettingChoice(name, dotted, attr, s.Value)...)
	}
	return diags
}

// checkSettingChoice checks that a select or radio setting is one of the
// attribute's values (the type of every value is checked with the settings).
func checkSettingChoice(cluster, dotted string, attr, v *loader.Value) hcl.Diagnostics {
	if v.Kind != loader.KindString {
		return nil // not a string: a type error (checkSettings)
	}
	switch attr.Get("type").String() {
	case "select", "radio":
		var allowed []string
		for _, it := range items(attr.Get("values")) {
			if d := it.Get("data"); d.IsScalar() {
				allowed = append(allowed, d.Text)
			}
		}
		if len(allowed) > 0 && (!v.IsScalar() || !slices.Contains(allowed, v.Text)) {
			return hcl.Diagnostics{withDetail(errorAt(v.Range, "cluster %s: settings: %s must be one of %s, not %s", cluster, dotted, strings.Join(allowed, ", "), describe(v)),
				"The attribute's values: list gives the choices.")}
		}
	}
	return nil
}

func describe(v *loader.Value) string {
	if v.IsScalar() {
		return fmt.Sprintf("%q", v.Text)
	}
	return "a " + v.Kind.String()
}

// suggest adds a "did you mean" or the list of candidates to d.
func suggest(d *hcl.Diagnostic, name string, candidates []string, what string) *hcl.Diagnostic {
	if best := loader.Suggest(name, candidates); best != "" {
		d.Summary += fmt.Sprintf("; did you mean %q?", best)
		return d
	}
	slices.Sort(candidates)
	if len(candidates) > 20 {
		candidates = append(candidates[:20:20], "…")
	}
	d.Detail = fmt.Sprintf("Known %s: %s.", what, strings.Join(candidates, ", "))
	return d
}

// nested returns the mapping {p0: {p1: … val}}, every key at r.
func nested(path []string, val *loader.Value, r hcl.Range) *loader.Value {
	for i := len(path) - 1; i >= 0; i-- {
		val = &loader.Value{Kind: loader.KindMap, Range: r, Fields: []loader.Field{{Key: path[i], KeyRange: r, Value: val}}}
	}
	return val
}

func boolValue(b bool, r hcl.Range) *loader.Value {
	return &loader.Value{Kind: loader.KindBool, Bool: b, Text: fmt.Sprint(b), Range: r}
}
