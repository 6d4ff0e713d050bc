package loader

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// releaseKeys maps each alternative spelling of a release key to the spelling the
// nailgun fixture uses (either is accepted, both in one record is an error).
var releaseKeys = [][2]string{
	{"roles", "roles_metadata"},
	{"tags", "tags_metadata"},
	{"components", "components_metadata"},
	{"volumes", "volumes_metadata"},
	{"networks", "networks_metadata"},
	{"network_roles", "network_roles_metadata"},
	{"attributes", "attributes_metadata"},
	{"node_attributes_metadata", "node_attributes"},
	{"nic_attributes_metadata", "nic_attributes"},
	{"bond_attributes_metadata", "bond_attributes"},
	{"os", "operating_system"},
}

// normalizeRelease renames alternative keys to the fixture's spelling.
func normalizeRelease(c *checker, m *Value, what string) *Value {
	if !m.IsMap() {
		return m
	}
	out := m
	for _, kv := range releaseKeys {
		alt, canon := kv[0], kv[1]
		af := out.Field(alt)
		if af == nil {
			continue
		}
		if out.Has(canon) {
			c.errf(af.KeyRange, "%s: both %s and %s are set; they are the same field, keep one", what, alt, canon)
			continue
		}
		v := af.Value
		out = out.Without(alt).With(canon, af.KeyRange, v)
	}
	return out
}

// recordOnlyKeys are keys of a release record that describe how to build the release
// rather than release data.
var recordOnlyKeys = []string{"is_release", "base_release", "base_release_path", "graphs", "fixture_pk", "release_name"}

// buildRelease builds the release a plugin's `is_release: true` record defines.
func (l *loadCtx) buildRelease(c *checker, p *Plugin, rec *Value) *Release {
	rec = normalizeRelease(c, rec, "release record")
	r := &Release{Plugin: p, Range: rec.Range}
	what := "release"
	var ok bool
	if r.Name, ok = c.str(rec, "release_name", what, true); ok {
		r.Range = rec.Get("release_name").Range
		what = fmt.Sprintf("release %q", r.Name)
	}
	r.Description, _ = c.str(rec, "description", what, true)
	r.OperatingSystem, _ = c.str(rec, "operating_system", what, true)
	r.Version, _ = c.str(rec, "version", what, true)
	if r.Name == "" || r.Version == "" || r.OperatingSystem == "" {
		return nil
	}

	// The base: a plain mapping, or one item of a nailgun fixture.
	data := NewMap(rec.Range)
	if base := rec.Get("base_release"); !base.IsNull() {
		switch base.Kind {
		case KindMap:
			if base.Has("fields") && base.Has("model") {
				base = base.Get("fields")
			}
			data = normalizeRelease(c, base, "base release")
		case KindList:
			if item := pickFixture(c, base, rec, r); item != nil {
				data = normalizeRelease(c, item, "base release")
			}
		default:
			c.errf(base.Range, "%s: base_release must be a mapping or a nailgun fixture (a list), not a %s", what, base.Kind)
		}
	}
	own := rec
	for _, k := range recordOnlyKeys {
		own = own.Without(k)
	}
	own = own.With("name", where(rec, "release_name"), NewString(r.Name, rec.Get("release_name").Range))
	data = DeepMerge(data, own)
	r.Data = data

	// The parts every later stage reads.
	file := rec.Range.Filename
	r.Roles = checkRoles(c, data.Get("roles_metadata"), what, false)
	r.Tags = checkTagsMeta(c, data.Get("tags_metadata"), what)
	r.Components = checkComponents(c, data.Get("components_metadata"), what, false)
	if rct := data.Get("required_component_types"); !rct.IsNull() {
		r.RequiredComponentTypes, _ = c.strList(data, "required_component_types", what, false, false)
	}
	if vols := data.Get("volumes_metadata"); !vols.IsNull() && checkVolumes(c, vols, what+" volumes") {
		r.Volumes = vols
	}
	if nr := data.Get("network_roles_metadata"); !nr.IsNull() && checkNetworkRoles(c, nr, what+" network roles") {
		r.NetworkRoles = nr
	}
	if attrs := data.Get("attributes_metadata"); attrs.IsMap() {
		r.Attributes = attrs.Get("editable")
	}
	r.Graphs = releaseGraphs(c, rec, data, what, file)
	return r
}

// pickFixture chooses the nailgun fixture item a release record is based on:
// items without pk are templates; `extend` chains are deep-merged; then the item is
// chosen by fixture_pk, else version + operating_system, then release name.
func pickFixture(c *checker, fixture, rec *Value, r *Release) *Value {
	type cand struct {
		pk     string
		fields *Value
	}
	var cands []cand
	for _, it := range fixture.Items {
		if !it.IsMap() || it.Get("pk").IsNull() {
			continue
		}
		resolved, err := resolveExtend(it, 0)
		if err != "" {
			c.errf(it.Range, "base release fixture: %s", err)
			continue
		}
		f := resolved.Get("fields")
		if !f.IsMap() {
			continue
		}
		cands = append(cands, cand{pk: it.Get("pk").String(), fields: f})
	}
	describe := func(cs []cand) string {
		parts := make([]string, len(cs))
		for i, x := range cs {
			parts[i] = fmt.Sprintf("pk %s %q (%s, %s)", x.pk, x.fields.Get("name").String(), x.fields.Get("version").String(), x.fields.Get("operating_system").String())
		}
		return strings.Join(parts, "; ")
	}
	// Problems point at base_release_path in the record, not into the fixture.
	base := where(rec, "base_release")
	if pk := rec.Get("fixture_pk"); !pk.IsNull() {
		for _, x := range cands {
			if x.pk == pk.String() {
				return x.fields
			}
		}
		c.errf(pk.Range, "fixture_pk %s: no such item in the base release fixture; candidates: %s", pk.String(), describe(cands))
		return nil
	}
	var match []cand
	for _, x := range cands {
		if x.fields.Get("version").String() == r.Version && strings.EqualFold(x.fields.Get("operating_system").String(), r.OperatingSystem) {
			match = append(match, x)
		}
	}
	if len(match) > 1 {
		var byName []cand
		for _, x := range match {
			if x.fields.Get("name").String() == r.Name {
				byName = append(byName, x)
			}
		}
		if len(byName) > 0 {
			match = byName
		}
	}
	switch len(match) {
	case 1:
		return match[0].fields
	case 0:
		c.add(withDetail(errorAt(base, "no item of the base release fixture has version %q and operating_system %q; candidates: %s", r.Version, r.OperatingSystem, describe(cands)),
			"The release record's version and operating_system choose the fixture item; fixture_pk: N names one directly."))
	default:
		c.add(withDetail(errorAt(base, "%d items of the base release fixture match version %q and operating_system %q and none is named %q; candidates: %s", len(match), r.Version, r.OperatingSystem, r.Name, describe(match)),
			"Set release_name to the fixture item's name, or name the item with fixture_pk: N."))
	}
	return nil
}

// resolveExtend deep-merges an item over the chain of items it extends.
func resolveExtend(it *Value, depth int) (*Value, string) {
	ext := it.Get("extend")
	if ext.IsNull() {
		return it, ""
	}
	if depth > 32 {
		return nil, "extend chain is deeper than 32 items (a cycle?)"
	}
	if !ext.IsMap() {
		return nil, fmt.Sprintf("extend must be a fixture item (a mapping, usually an alias such as *base_release), not a %s", ext.Kind)
	}
	base, err := resolveExtend(ext, depth+1)
	if err != "" {
		return nil, err
	}
	return DeepMerge(base, it.Without("extend")), ""
}

// releaseGraphs reads the record's `graphs:` (after `_path` loading) and the data's
// deployment_tasks, which become the default graph when no graph has that type.
func releaseGraphs(c *checker, rec, data *Value, what, file string) []*Graph {
	var graphs []*Graph
	seen := map[string]hcl.Range{}
	if g := rec.Get("graphs"); !g.IsNull() {
		if g.Kind != KindList {
			c.errf(g.Range, "%s: graphs must be a list of {type, tasks_path | tasks}, not a %s", what, g.Kind)
		} else {
			for _, it := range g.Items {
				if !c.mapping(it, "each graph") {
					continue
				}
				typ, ok := c.str(it, "type", what+": graph", true)
				if !ok {
					continue
				}
				if !c.pattern(it.Get("type").Range, nameMatcher{}, typ, "graph type", nameRule("graph types")) {
					continue
				}
				if prev, dup := seen[typ]; dup {
					c.errf(where(it, "type"), "%s: graph type %q is defined twice (also at line %d)", what, typ, prev.Start.Line)
					continue
				}
				seen[typ] = it.Get("type").Range
				gr := &Graph{Type: typ, Range: it.Get("type").Range}
				gr.Name, _ = c.str(it, "name", what+": graph "+typ, false)
				gr.Metadata = it.Get("metadata")
				tasks := it.Get("tasks")
				if tasks == nil && !it.Has("tasks_path") { // a failed tasks_path is reported already
					c.errf(it.Range, "%s: graph %s needs tasks or tasks_path", what, typ)
				}
				gr.Tasks = checkTaskList(c, tasks, what+": graph "+typ)
				graphs = append(graphs, gr)
			}
		}
	}
	if dt := data.Get("deployment_tasks"); !dt.IsNull() {
		if _, ok := seen["default"]; ok {
			c.warnf(where(data, "deployment_tasks"), "%s: deployment_tasks is ignored because graphs has a default graph", what)
		} else {
			graphs = append(graphs, &Graph{Type: "default", Tasks: checkTaskList(c, dt, file), Range: dt.Range})
		}
	}
	return graphs
}
