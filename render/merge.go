package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render/components"
	"github.com/hashicorp/hcl/v2"
)

// Build merges one cluster of repo into its model and checks it. The model is nil
// when the cluster's release cannot be told (the loader has reported why).
func Build(repo *loader.Repo, c *loader.Cluster) (*Model, hcl.Diagnostics) {
	b := newBuilder(repo)
	m, diags := b.build(c)
	return m, loader.SortDiagnostics(append(b.data, diags...))
}

// Check builds the model of every cluster of repo and checks the data of every
// release (expressions, component registry) even when no cluster uses it. It
// returns the models by cluster name and every problem, sorted. Task graphs are not
// resolved: Render does that, with these checks first.
func Check(repo *loader.Repo) (map[string]*Model, hcl.Diagnostics) {
	b := newBuilder(repo)
	b.checkData()
	models := map[string]*Model{}
	var diags hcl.Diagnostics
	for _, c := range repo.Clusters {
		m, d := b.build(c)
		diags = append(diags, d...)
		if m != nil {
			models[c.Name] = m
		}
		_, d = resolveRegistry(repo, c)
		diags = append(diags, d...)
	}
	return models, loader.SortDiagnostics(append(b.data, diags...))
}

// checkData checks what releases and plugins hold whether or not a cluster uses
// it: every release's component registry, every role's restrictions and limits.
func (b *builder) checkData() {
	for _, r := range b.repo.Releases {
		b.registry(r)
		for _, role := range r.Roles {
			b.rules(role, nil)
		}
	}
	for _, p := range b.repo.Plugins {
		for _, role := range p.Roles {
			b.rules(role, p)
		}
	}
}

// builder holds what several clusters share: parsed expressions, role rules and
// component registries, and the problems found in release and plugin data (each
// reported once however many clusters meet it).
type builder struct {
	repo       *loader.Repo
	exprs      map[*loader.Value]*expr.Expr
	roleRules  map[*loader.Role]*roleRules
	registries map[*loader.Release]*components.Registry
	data       hcl.Diagnostics
	state      AppliedState
	// attrRules are the parsed restrictions of attributes, by restrictions list;
	// regexes the compiled attribute regexes, by source; regexReported the regex
	// sources already reported as not compiling.
	attrRules     map[*loader.Value][]*Restriction
	regexes       map[string]*compiledRegex
	regexReported map[*loader.Value]bool
	// pluginSets are the plugins' graphs with nailgun's task defaults.
	pluginSets map[*loader.Plugin]*pluginTaskSet
}

func newBuilder(repo *loader.Repo) *builder {
	return &builder{
		repo:       repo,
		exprs:      map[*loader.Value]*expr.Expr{},
		roleRules:  map[*loader.Role]*roleRules{},
		registries: map[*loader.Release]*components.Registry{},

		attrRules:     map[*loader.Value][]*Restriction{},
		regexes:       map[string]*compiledRegex{},
		regexReported: map[*loader.Value]bool{},
		pluginSets:    map[*loader.Plugin]*pluginTaskSet{},
	}
}

func (b *builder) dataDiag(d ...*hcl.Diagnostic) { b.data = append(b.data, d...) }

// registry returns the component registry of release r: its components and those of
// every plugin compatible with it.
func (b *builder) registry(r *loader.Release) *components.Registry {
	if reg, ok := b.registries[r]; ok {
		return reg
	}
	sources := []components.Source{{Components: r.Components}}
	for _, p := range CompatiblePlugins(b.repo, r) {
		sources = append(sources, components.Source{Plugin: p.Name, Components: p.Components})
	}
	reg, diags := components.New(sources)
	b.dataDiag(diags...)
	b.registries[r] = reg
	return reg
}

// Registry returns the component registry of release r: its components and those of
// every plugin of repo compatible with it, with the problems of that data (overlaps).
func Registry(repo *loader.Repo, r *loader.Release) (*components.Registry, hcl.Diagnostics) {
	b := newBuilder(repo)
	return b.registry(r), loader.SortDiagnostics(b.data)
}

// CompatiblePlugins returns the plugins of repo that extend release r,
// in repository order. Release plugins are not among them.
func CompatiblePlugins(repo *loader.Repo, r *loader.Release) []*loader.Plugin {
	var out []*loader.Plugin
	for _, p := range repo.Plugins {
		if len(p.Defines) == 0 && p.Name != "" && compatibleRecord(p, r, "") != nil {
			out = append(out, p)
		}
	}
	return out
}

// compatibleRecord returns the first compatibility record of p that matches release
// r (and, when mode is not "", the cluster mode), or nil.
func compatibleRecord(p *loader.Plugin, r *loader.Release, mode string) *loader.Compat {
	for _, cp := range p.Compatible {
		if !strings.EqualFold(cp.OS, r.OperatingSystem) || !versionMatch(cp.Version, r.Version) {
			continue
		}
		if mode != "" && len(cp.Mode) > 0 && !slices.ContainsFunc(cp.Mode, func(m string) bool { return strings.HasPrefix(mode, m) }) {
			continue
		}
		return cp
	}
	return nil
}

// versionMatch is nailgun's check: "mitaka-9.0" splits into an OpenStack name and a
// version, and each part of the plugin's must be a prefix of the release's.
func versionMatch(plugin, release string) bool {
	pn, pv, pok := strings.Cut(plugin, "-")
	rn, rv, rok := strings.Cut(release, "-")
	if pok && rok {
		return strings.HasPrefix(rn, pn) && strings.HasPrefix(rv, pv)
	}
	return strings.HasPrefix(release, plugin)
}

// nailgunMode is the cluster mode as nailgun's models name it.
func nailgunMode(mode string) string {
	if mode == "multinode" {
		return "multinode"
	}
	return "ha_compact"
}

// build merges and checks one cluster.
func (b *builder) build(c *loader.Cluster) (*Model, hcl.Diagnostics) {
	rels := b.repo.FindRelease(c.Release)
	if len(rels) != 1 {
		return nil, nil
	}
	m := &Model{
		Cluster:   c,
		Release:   rels[0],
		Tags:      map[string]*Tag{},
		Sensitive: map[string]bool{},
		roleIndex: map[string]*Role{},
		Registry:  b.registry(rels[0]),
	}
	var diags hcl.Diagnostics
	// Plugins listed in `plugins:`, each compatible with the release.
	diags = append(diags, b.listedPlugins(m)...)
	// The component selection; chosen components enable their plugins.
	diags = append(diags, b.selectComponents(m)...)
	// The enabled plugins' tasks, with the defaults nailgun adds to them.
	for _, ep := range m.Plugins {
		ep.tasks = b.pluginTasks(ep.Plugin)
	}
	diags = append(diags, pluginTaskOverlaps(m)...)
	// Roles and tags, volumes and network roles: release ← plugins ← cluster.
	diags = append(diags, b.mergeRoles(m)...)
	diags = append(diags, b.mergeTags(m)...)
	diags = append(diags, mergeVolumes(m)...)
	diags = append(diags, mergeNetworkRoles(m)...)
	// Attributes and the expression models they feed.
	diags = append(diags, b.mergeAttributes(m)...)
	// Role checks: per node, then per cluster.
	diags = append(diags, b.checkNodeRoles(m)...)
	diags = append(diags, b.checkLimits(m)...)
	// Node tags and primary tags.
	diags = append(diags, m.resolveTags(b.state)...)
	return m, diags
}

func (b *builder) listedPlugins(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	for _, ref := range c.Plugins {
		p := b.repo.FindPlugin(ref.Name)
		if p == nil || len(p.Defines) > 0 {
			continue // reported by the loader
		}
		if m.Plugin(p.Name) != nil {
			diags = append(diags, warnAt(ref.Range, "cluster %s: plugin %s is listed twice", c.Name, p.Name))
			continue
		}
		if compatibleRecord(p, m.Release, nailgunMode(c.Mode)) == nil {
			diags = append(diags, withDetail(errorAt(ref.Range, "Plugin %s is not compatible with release %s (%s on %s)", p.Name, m.Release.Name, m.Release.Version, m.Release.OperatingSystem),
				"A plugin extends a release when one of its releases: records has that os (any case) and a version that is a prefix of the release version%s. %s's records: %s.",
				modeNote(c.Mode), p.Name, compatList(p)))
			continue
		}
		m.Plugins = append(m.Plugins, &EnabledPlugin{Plugin: p, Cause: ref})
	}
	return diags
}

func modeNote(mode string) string {
	return fmt.Sprintf(", and a mode that fits the cluster's mode (%s)", nailgunMode(mode))
}

func compatList(p *loader.Plugin) string {
	if len(p.Compatible) == 0 {
		return "none"
	}
	parts := make([]string, len(p.Compatible))
	for i, cp := range p.Compatible {
		parts[i] = fmt.Sprintf("os %s, version %s", cp.OS, cp.Version)
		if len(cp.Mode) > 0 {
			parts[i] += ", mode " + strings.Join(cp.Mode, "|")
		}
		parts[i] += " (" + at(cp.Range) + ")"
	}
	return strings.Join(parts, "; ")
}

// ComponentProblems checks cluster c's component selection against the registry
// of its release: each problem at the selection entry that caused it.
func ComponentProblems(reg *components.Registry, c *loader.Cluster, rel *loader.Release) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var selected []string
	for _, ref := range c.Components {
		selected = append(selected, ref.Name)
	}
	for _, p := range reg.Validate(c.Components, rel.RequiredComponentTypes) {
		r := p.Range
		if r.Filename == "" {
			r = c.NameRange
		}
		diags = append(diags, withDetail(errorAt(r, "%s", p.Message), "Cluster %s selects components %s from release %s.", c.Name, strings.Join(selected, ", "), rel.Version))
	}
	return diags
}

func (b *builder) selectComponents(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	for _, ref := range c.Components {
		m.Selected = append(m.Selected, ref.Name)
	}
	diags = append(diags, ComponentProblems(m.Registry, c, m.Release)...)
	for _, name := range m.Registry.PluginsFor(m.Selected) {
		if m.Plugin(name) != nil {
			continue
		}
		p := b.repo.FindPlugin(name)
		if p == nil {
			continue
		}
		ep := &EnabledPlugin{Plugin: p}
		for _, ref := range c.Components {
			if comp := m.Registry.Get(ref.Name); comp != nil && comp.Plugin == name {
				ep.Cause, ep.Component = ref, ref.Name
				break
			}
		}
		if compatibleRecord(p, m.Release, nailgunMode(c.Mode)) == nil {
			diags = append(diags, withDetail(errorAt(ep.Cause.Range, "Plugin %s, enabled by component %s, is not compatible with a cluster in mode %s", p.Name, ep.Component, nailgunMode(c.Mode)),
				"%s's records: %s.", p.Name, compatList(p)))
			continue
		}
		m.Plugins = append(m.Plugins, ep)
	}
	m.States = m.Registry.States(m.Selected)
	return diags
}

// mergeRoles builds the role list: the release's roles, then each enabled plugin's;
// a plugin may not redefine a role (nailgun's "unable to register").
func (b *builder) mergeRoles(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(meta *loader.Role, p *loader.Plugin) {
		r := b.newRole(meta, p)
		m.Roles = append(m.Roles, r)
		m.roleIndex[r.Name] = r
	}
	for _, meta := range m.Release.Roles {
		add(meta, nil)
	}
	for _, ep := range m.Plugins {
		var clash []string
		var where []string
		for _, meta := range ep.Plugin.Roles {
			if prev := m.roleIndex[meta.Name]; prev != nil {
				clash = append(clash, meta.Name)
				where = append(where, fmt.Sprintf("%s is defined by the %s (%s) and by plugin %s (%s)", meta.Name, prev.Owner(), at(prev.Meta.Range), ep.Plugin.Name, at(meta.Range)))
				continue
			}
			add(meta, ep.Plugin)
		}
		if len(clash) > 0 {
			diags = append(diags, withDetail(errorAt(ep.Cause.Range, "Plugin %s is unable to register the following node roles: %s", ep.Plugin.Name, strings.Join(clash, ", ")),
				"A plugin cannot redefine a role of the release or of another enabled plugin: %s.", strings.Join(where, "; ")))
		}
	}
	// The cluster's per-role tag overrides.
	for _, rt := range m.Cluster.RoleTags {
		r := m.roleIndex[rt.Role]
		if r == nil {
			diags = append(diags, b.unknownRole(m, rt.Role, rt.Range, fmt.Sprintf("cluster %s: roles: unknown role %q", m.Cluster.Name, rt.Role)))
			continue
		}
		r.Tags, r.TagsRange = rt.Tags, rt.Range
	}
	return diags
}

func (b *builder) newRole(meta *loader.Role, p *loader.Plugin) *Role {
	r := &Role{Name: meta.Name, Meta: meta, Plugin: p, Tags: meta.Tags, TagsRange: meta.Range}
	if !meta.HasTags {
		r.Tags = []string{meta.Name}
	} else if t := meta.Data.Get("tags"); t != nil {
		r.TagsRange = t.Range
	}
	if cf := meta.Data.Get("conflicts"); cf != nil {
		if cf.Kind == loader.KindString && cf.Text == "*" {
			r.ConflictsAll = true
		} else {
			r.Conflicts, _ = cf.Strings()
		}
	}
	rules := b.rules(meta, p)
	r.Restrictions, r.Limits = rules.restrictions, rules.limits
	return r
}

// mergeTags merges tags metadata (release, plugins, cluster; later wins) and checks
// that every tag a role lists is declared.
func (b *builder) mergeTags(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	put := func(t *loader.TagMeta, owner string) {
		m.Tags[t.Name] = &Tag{Name: t.Name, HasPrimary: t.HasPrimary, Owner: owner, Range: t.Range}
	}
	for _, t := range m.Release.Tags {
		put(t, "release")
	}
	for _, ep := range m.Plugins {
		p := ep.Plugin
		owner := "plugin " + p.Name
		for _, t := range p.Tags {
			put(t, owner)
		}
		if len(p.Tags) == 0 {
			// nailgun's Plugin._process_tags: a plugin without tags metadata gets one tag
			// per tag-less role, carrying the role's has_primary.
			for _, role := range p.Roles {
				if !role.HasTags && m.roleIndex[role.Name] != nil && m.roleIndex[role.Name].Plugin == p {
					put(&loader.TagMeta{Name: role.Name, HasPrimary: role.HasPrimary, Range: role.Range}, owner)
				}
			}
		}
	}
	for _, t := range m.Cluster.Tags {
		put(t, "cluster")
	}
	for _, r := range m.Roles {
		if !r.Meta.HasTags && r.TagsRange == r.Meta.Range {
			continue // the implicit [role] tag
		}
		var missing []string
		for _, t := range r.Tags {
			if m.Tags[t] == nil && !slices.Contains(missing, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) == 0 {
			continue
		}
		d := withDetail(errorAt(r.TagsRange, "Tags %s are present for role %s, but absent in release tags metadata", strings.Join(missing, ", "), r.Name),
			"Declare each tag in the release's tags_metadata, a plugin's node_tags.yaml or the cluster's tags:.")
		if r.TagsRange.Filename == m.Cluster.File {
			diags = append(diags, d)
		} else {
			b.dataDiag(d)
		}
	}
	return diags
}

// mergeVolumes merges volumes metadata: a plugin may not redefine a volume id;
// roles mappings are updated (later wins); boot-disk rules are concatenated.
func mergeVolumes(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	v := &m.Volumes
	v.RolesMapping = map[string]*loader.Value{}
	owners := map[string]string{}
	ranges := map[string]hcl.Range{}
	addMapping := func(vols *loader.Value) {
		for _, f := range fields(vols.Get("volumes_roles_mapping")) {
			if _, ok := v.RolesMapping[f.Key]; !ok {
				v.RoleOrder = append(v.RoleOrder, f.Key)
			}
			v.RolesMapping[f.Key] = f.Value
		}
		v.BootDisk = append(v.BootDisk, items(vols.Get("rule_to_pick_boot_disk"))...)
	}
	if rv := m.Release.Volumes; rv != nil {
		for _, vol := range items(rv.Get("volumes")) {
			id := vol.Get("id").String()
			owners[id], ranges[id] = "release", vol.Range
			v.Volumes = append(v.Volumes, vol)
		}
		addMapping(rv)
	}
	for _, ep := range m.Plugins {
		pv := ep.Plugin.Volumes
		if pv == nil {
			continue
		}
		for _, vol := range items(pv.Get("volumes")) {
			id := vol.Get("id").String()
			if owner, dup := owners[id]; dup {
				diags = append(diags, withDetail(errorAt(ep.Cause.Range, "Plugin %s is overlapping with %s by introducing the same volume with id %q", ep.Plugin.Name, owner, id),
					"Volume %s is defined at %s and at %s. A plugin may map its roles to existing volumes in volumes_roles_mapping, but not define them again.", id, at(ranges[id]), at(vol.Range)))
				continue
			}
			owners[id], ranges[id] = "plugin "+ep.Plugin.Name, vol.Range
			v.Volumes = append(v.Volumes, vol)
		}
		addMapping(pv)
	}
	return diags
}

// mergeNetworkRoles merges the plugins' network roles into the release's: a role
// with a known id merges its properties, which must agree except for `vip`, whose
// entries are united by name (an entry of the same name must be identical).
func mergeNetworkRoles(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	index := map[string]int{}
	for _, nr := range items(m.Release.NetworkRoles) {
		index[nr.Get("id").String()] = len(m.NetworkRoles)
		m.NetworkRoles = append(m.NetworkRoles, nr)
	}
	for _, ep := range m.Plugins {
		var conflicts []string
		for _, nr := range items(ep.Plugin.NetworkRoles) {
			id := nr.Get("id").String()
			i, known := index[id]
			if !known {
				index[id] = len(m.NetworkRoles)
				m.NetworkRoles = append(m.NetworkRoles, nr)
				continue
			}
			merged, ok := mergeNetworkRole(m.NetworkRoles[i], nr)
			if !ok {
				conflicts = append(conflicts, id)
				continue
			}
			m.NetworkRoles[i] = merged
		}
		if len(conflicts) > 0 {
			diags = append(diags, withDetail(errorAt(ep.Cause.Range, "Cannot override existing network roles: '%s' in plugins: '%s'", strings.Join(conflicts, ", "), ep.Plugin.Name),
				"A plugin may add VIPs to an existing network role, but its other properties must equal the ones already defined."))
		}
	}
	return diags
}

func mergeNetworkRole(base, over *loader.Value) (*loader.Value, bool) {
	bp, op := base.Get("properties"), over.Get("properties")
	props := bp
	if props == nil {
		props = loader.NewMap(base.Range)
	}
	for _, f := range fields(op) {
		if f.Key != "vip" {
			if prev := bp.Get(f.Key); prev != nil && !equalValues(prev, f.Value) {
				return nil, false
			}
			props = props.With(f.Key, f.KeyRange, f.Value)
			continue
		}
		vips := bp.Get("vip")
		byName := map[string]*loader.Value{}
		for _, it := range items(vips) {
			byName[it.Get("name").String()] = it
		}
		list := append([]*loader.Value(nil), items(vips)...)
		for _, it := range items(f.Value) {
			name := it.Get("name").String()
			if prev, ok := byName[name]; ok {
				if !equalValues(prev, it) {
					return nil, false
				}
				continue
			}
			list = append(list, it)
		}
		props = props.With("vip", f.KeyRange, &loader.Value{Kind: loader.KindList, Range: f.Value.Range, Items: list})
	}
	return base.With("properties", base.Range, props), true
}

func equalValues(a, b *loader.Value) bool {
	return fmt.Sprint(a.Interface()) == fmt.Sprint(b.Interface())
}

// items returns the elements of a list Value, or nil for anything else.
func items(v *loader.Value) []*loader.Value {
	if v.IsList() {
		return v.Items
	}
	return nil
}

// fields returns the fields of a mapping Value, or nil for anything else.
func fields(v *loader.Value) []loader.Field {
	if v.IsMap() {
		return v.Fields
	}
	return nil
}
