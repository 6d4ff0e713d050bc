package loader

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// pluginHCLBlocks are the blocks plugin.hcl may have at its top level.
var pluginHCLBlocks = []string{"locals", "plugin", "role", "tag", "component", "volume", "network_role", "task", "graph", "release"}

// releaseHCLBlocks are the blocks a release block may have.
var releaseHCLBlocks = []string{"graph", "role", "tag", "component", "network_role"}

// hclTaskKeys maps the HCL spelling of task keys that are not HCL identifiers to the
// YAML spelling.
var hclTaskKeys = map[string]string{"cross_depends": "cross-depends", "cross_depended_by": "cross-depended-by"}

// hclEntity describes how one kind of labelled block becomes data.
type hclEntity struct {
	block string // block type
	file  string // fixed file it fills at the top level ("" = not allowed there)
	key   string // release record key it fills inside a release block ("" = not allowed there)
	// labelKey is the key the label is stored under in a list item; "" means the
	// entries form a mapping keyed by the label.
	labelKey string
	form     string // the block written out, for messages
	// lists are nested block types that become list items under their type's name.
	lists  []string
	rename map[string]string
}

var (
	hclRole        = hclEntity{block: "role", file: "node_roles.yaml", key: "roles", form: `role "<name>" { name = "..." description = "..." }`}
	hclTag         = hclEntity{block: "tag", file: "node_tags.yaml", key: "tags", form: `tag "<name>" { has_primary = false }`}
	hclComponent   = hclEntity{block: "component", file: "components.yaml", key: "components", labelKey: "name", form: `component "<type>:<name>" { label = "..." }`, lists: []string{"requires", "compatible", "incompatible"}}
	hclNetworkRole = hclEntity{block: "network_role", file: "network_roles.yaml", key: "network_roles", labelKey: "id", form: `network_role "<id>" { default_mapping = "..." properties = {...} }`}
	hclVolume      = hclEntity{block: "volume", labelKey: "id", form: `volume "<id>" { type = "vg" ... }`}
	hclTask        = hclEntity{block: "task", labelKey: "id", form: `task "<id>" { type = "puppet" ... }`, lists: []string{"cross_depends", "cross_depended_by"}, rename: hclTaskKeys}
)

// pluginHCL is the state of converting one plugin.hcl. The conversion depends on
// the file alone (a Cache shares it between loads); the `_path` keys it leaves are
// loaded afterwards by pluginFromHCL.
type pluginHCL struct {
	file  string
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

// pluginHCLDecoded is a plugin.hcl converted, before its `_path` keys are loaded.
// It is shared by the loads of a Cache and never changed.
type pluginHCLDecoded struct {
	meta *Value // metadata.yaml's tree, `_path` keys as written
	// files and fileNames are pluginDoc's, without deployment_tasks.yaml when it
	// comes from defaultGraph.
	files     map[string]*Value
	fileNames map[string]string
	// defaultGraph is graph "default" when it has a tasks_path: its tasks are
	// deployment_tasks.yaml once the path is loaded.
	defaultGraph *Value
}

// pluginFromHCL reads a plugin package written as one plugin.hcl and
// converts it into the data trees its YAML files would decode to, so that
// buildPlugin validates both forms the same way:
//
//   - plugin "<name>" { ... }: the attributes are metadata.yaml (name = the label),
//     except `attributes` (environment_config.yaml's attributes) and
//     `volumes_roles_mapping` (volumes.yaml);
//   - role / tag blocks: entries of node_roles.yaml / node_tags.yaml, keyed by label;
//   - component / network_role / volume blocks: items of components.yaml /
//     network_roles.yaml / volumes.yaml's volumes, with the label as name / id / id;
//     a component's requires, compatible and incompatible may be repeated blocks;
//   - task blocks (top level) or graph "default" { task ... }: deployment_tasks.yaml;
//     a task's cross_depends / cross_depended_by become cross-depends /
//     cross-depended-by;
//   - release "<version>" { ... }: a releases: record with is_release = true; its
//     graph, role, tag, component and network_role blocks fill graphs, roles, tags,
//     components and network_roles. A graph of another type than default outside a
//     release goes into the plugin's only release block.
//
// `_path` keys of the metadata are then loaded like metadata.yaml's. Every fixed file
// is reported as coming from plugin.hcl. The doc is nil when there is nothing to
// validate (unreadable file, syntax error, no plugin block).
func (l *loadCtx) pluginFromHCL(metaFile string) (*pluginDoc, hcl.Diagnostics) {
	v, diags := l.r.decoded(asPluginHCL, metaFile, fileRange(metaFile))
	dec, _ := v.(*pluginHCLDecoded)
	if dec == nil {
		return nil, diags
	}
	// The decoded form is shared: copy what this load fills in.
	doc := &pluginDoc{metaFile: metaFile, files: maps.Clone(dec.files), fileNames: maps.Clone(dec.fileNames)}
	stack := []string{metaFile}
	if dec.defaultGraph != nil {
		g, d := l.paths.walk(dec.defaultGraph, metaFile, stack)
		diags = append(diags, d...)
		if t := g.Get("tasks"); t != nil {
			doc.files["deployment_tasks.yaml"] = t
			doc.fileNames["deployment_tasks.yaml"] = metaFile
		}
	}
	meta, d := l.paths.walk(dec.meta, metaFile, stack)
	doc.meta = meta
	return doc, append(diags, d...)
}

// decodePluginHCL converts a plugin.hcl as far as the file alone allows; nil when
// there is nothing to validate (syntax error, no plugin block).
func decodePluginHCL(file string, src []byte) (*pluginHCLDecoded, hcl.Diagnostics) {
	body, diags := parseHCL(file, src)
	if body == nil {
		return nil, diags
	}
	ctx, more := hclContext(body)
	p := &pluginHCL{file: file, ctx: ctx, diags: append(diags, more...)}
	dec := p.convert(body)
	return dec, p.diags
}

func (p *pluginHCL) errf(r hcl.Range, format string, args ...any) *hcl.Diagnostic {
	d := errorAt(r, format, args...)
	p.diags = append(p.diags, d)
	return d
}

// convert turns the top-level body into the data trees of a pluginDoc.
func (p *pluginHCL) convert(body *hclsyntax.Body) *pluginHCLDecoded {
	for _, a := range sortedAttributes(body) {
		withDetail(p.errf(a.NameRange, "unexpected attribute %q outside a block", a.Name),
			`Plugin metadata goes in the plugin "<name>" { ... } block; locals go in a locals block.`)
	}
	var plugin *hclsyntax.Block
	byType := map[string][]*hclsyntax.Block{}
	for _, b := range body.Blocks {
		switch {
		case b.Type == "locals":
			if len(b.Labels) > 0 {
				p.errf(b.LabelRanges[0], "a locals block takes no label")
			}
			for _, nb := range b.Body.Blocks {
				p.errf(nb.TypeRange, "unexpected block %q in locals; locals holds attributes", nb.Type)
			}
		case b.Type == "plugin" && plugin != nil:
			p.errf(b.TypeRange, "%s holds one plugin block (the first is at line %d)", p.file, plugin.TypeRange.Start.Line)
		case b.Type == "plugin":
			plugin = b
		case slices.Contains(pluginHCLBlocks, b.Type):
			byType[b.Type] = append(byType[b.Type], b)
		default:
			withDetail(p.errf(b.TypeRange, "unexpected block %q; the blocks of plugin.hcl are %s", b.Type, strings.Join(pluginHCLBlocks, ", ")),
				`A plugin.hcl has one plugin "<name>" { ... } block and role, tag, component, volume, network_role, task, graph and release blocks.`)
		}
	}
	if plugin == nil {
		start := hcl.Range{Filename: p.file, Start: hcl.InitialPos, End: hcl.InitialPos}
		withDetail(p.errf(start, "no plugin \"<name>\" block in %s", p.file),
			`A plugin.hcl needs exactly one plugin "<name>" { version = "..." package_version = "..." ... } block.`)
		return nil
	}

	doc := &pluginHCLDecoded{files: map[string]*Value{}, fileNames: map[string]string{}}
	meta := p.pluginMeta(plugin)
	setFile := func(name string, v *Value) {
		if v != nil {
			doc.files[name] = v
			doc.fileNames[name] = p.file
		}
	}
	if f := meta.Field("attributes"); f != nil {
		env := NewMap(f.KeyRange)
		env.Fields = []Field{*f}
		setFile("environment_config.yaml", env)
		meta = meta.Without("attributes")
	}
	for _, e := range []hclEntity{hclRole, hclTag, hclComponent, hclNetworkRole} {
		setFile(e.file, p.entities(byType[e.block], e))
	}
	setFile("volumes.yaml", p.volumes(byType["volume"], meta.Field("volumes_roles_mapping")))
	meta = meta.Without("volumes_roles_mapping")

	// Graphs outside a release: default → deployment_tasks.yaml, others → the release.
	tasks, outer := p.topGraphs(byType["task"], byType["graph"], len(byType["release"]), doc)
	setFile("deployment_tasks.yaml", tasks)
	doc.meta = p.releases(meta, byType["release"], outer)
	return doc
}

// pluginMeta converts the plugin block into metadata.yaml's tree.
func (p *pluginHCL) pluginMeta(b *hclsyntax.Block) *Value {
	meta := p.mapping(b.Body, b.DefRange(), "the plugin block", hclEntity{})
	name, nameRange, ok := p.label(b, "name", `plugin "<name>" { version = "..." package_version = "..." ... }`)
	if !ok {
		return meta
	}
	return p.withLabel(meta, "plugin", "name", name, nameRange)
}

// label returns the one label of b; what names it in the message.
func (p *pluginHCL) label(b *hclsyntax.Block, what, form string) (string, hcl.Range, bool) {
	if len(b.Labels) == 1 {
		return b.Labels[0], b.LabelRanges[0], true
	}
	r := b.TypeRange
	if len(b.Labels) > 1 {
		r = b.LabelRanges[1]
	}
	withDetail(p.errf(r, "a %s block takes one label, its %s", b.Type, what), "Write "+form+".")
	return "", hcl.Range{}, false
}

// withLabel returns m with key = label as its first field; an attribute of the same
// name is an error (the label already says it).
func (p *pluginHCL) withLabel(m *Value, block, key, label string, r hcl.Range) *Value {
	if f := m.Field(key); f != nil {
		withDetail(p.errf(f.KeyRange, "%s %q: %s is the block label; do not set it again", block, label, key),
			fmt.Sprintf("The label of a %s block is its %s.", block, key))
		m = m.Without(key)
	}
	out := *m
	out.Fields = append([]Field{{Key: key, KeyRange: r, Value: NewString(label, r)}}, m.Fields...)
	return &out
}

// unique records name in seen and reports a duplicate at r.
func (p *pluginHCL) unique(seen map[string]hcl.Range, what, name string, r hcl.Range) bool {
	if prev, dup := seen[name]; dup {
		withDetail(p.errf(r, "duplicate %s %q (the first is at line %d)", what, name, prev.Start.Line),
			"Each label of a block type is used once.")
		return false
	}
	seen[name] = r
	return true
}

// mapping converts a block body: attributes in source order (renamed by e.rename),
// and nested blocks whose type is in e.lists as a list of mappings under that name,
// placed where the first such block is. Other nested blocks are an error.
func (p *pluginHCL) mapping(body *hclsyntax.Body, r hcl.Range, what string, e hclEntity) *Value {
	out := NewMap(r)
	for _, a := range sortedAttributes(body) {
		v, d := exprToValue(a.Expr, p.ctx)
		p.diags = append(p.diags, d...)
		if v == nil {
			continue
		}
		key := a.Name
		if k, ok := e.rename[key]; ok {
			key = k
		}
		out.Fields = append(out.Fields, Field{Key: key, KeyRange: a.NameRange, Value: v})
	}
	lists := map[string]*Value{}
	for _, nb := range body.Blocks {
		if !slices.Contains(e.lists, nb.Type) {
			p.unexpectedBlock(nb, what, e.lists)
			continue
		}
		if len(nb.Labels) > 0 {
			p.errf(nb.LabelRanges[0], "%s: a %s block takes no label", what, nb.Type)
			continue
		}
		if a, ok := body.Attributes[nb.Type]; ok {
			withDetail(p.errf(nb.TypeRange, "%s: %s is set both as an attribute (line %d) and as blocks", what, nb.Type, a.NameRange.Start.Line),
				fmt.Sprintf("Write %s = [ {...}, ... ] or repeated %s { ... } blocks, not both.", nb.Type, nb.Type))
			continue
		}
		key := nb.Type
		if k, ok := e.rename[key]; ok {
			key = k
		}
		item := p.mapping(nb.Body, nb.DefRange(), what+": "+nb.Type, hclEntity{})
		list := lists[key]
		if list == nil {
			list = &Value{Kind: KindList, Range: nb.DefRange()}
			lists[key] = list
			out.Fields = append(out.Fields, Field{Key: key, KeyRange: nb.TypeRange, Value: list})
		}
		list.Items = append(list.Items, item)
	}
	sortFields(out)
	return out
}

// sortFields orders the fields of m by where they are written.
func sortFields(m *Value) {
	sort.SliceStable(m.Fields, func(i, j int) bool { return m.Fields[i].KeyRange.Start.Byte < m.Fields[j].KeyRange.Start.Byte })
}

func (p *pluginHCL) unexpectedBlock(b *hclsyntax.Block, what string, allowed []string) {
	if what == "the plugin block" && slices.Contains(pluginHCLBlocks, b.Type) {
		withDetail(p.errf(b.TypeRange, "unexpected block %q in the plugin block; %s blocks go at the top level of plugin.hcl", b.Type, b.Type),
			`The plugin block holds the metadata attributes; role, tag, component, volume, network_role, task, graph and release blocks are written next to it.`)
		return
	}
	if len(allowed) == 0 {
		withDetail(p.errf(b.TypeRange, "unexpected block %q in %s; it takes no blocks", b.Type, what),
			fmt.Sprintf("Write %s = { ... } as an attribute.", b.Type))
		return
	}
	p.errf(b.TypeRange, "unexpected block %q in %s; the blocks here are %s", b.Type, what, strings.Join(allowed, ", "))
}

// entity converts one labelled block of kind e. For a mapping kind it returns the
// entry's key (the label) and value; for a list kind the label is stored under
// e.labelKey.
func (p *pluginHCL) entity(b *hclsyntax.Block, e hclEntity, seen map[string]hcl.Range) (string, hcl.Range, *Value) {
	noun := e.labelKey
	if noun == "" {
		noun = "name"
	}
	label, r, ok := p.label(b, noun, e.form)
	if !ok || !p.unique(seen, e.block, label, r) {
		return "", r, nil
	}
	v := p.mapping(b.Body, b.DefRange(), fmt.Sprintf("%s %q", e.block, label), e)
	if e.labelKey != "" {
		v = p.withLabel(v, e.block, e.labelKey, label, r)
	}
	return label, r, v
}

// entities converts the blocks of kind e into a mapping keyed by label, or a list;
// nil when there are none.
func (p *pluginHCL) entities(blocks []*hclsyntax.Block, e hclEntity) *Value {
	if len(blocks) == 0 {
		return nil
	}
	kind := KindList
	if e.labelKey == "" {
		kind = KindMap
	}
	out := &Value{Kind: kind, Range: blocks[0].DefRange()}
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		label, r, v := p.entity(b, e, seen)
		if v == nil {
			continue
		}
		if kind == KindMap {
			out.Fields = append(out.Fields, Field{Key: label, KeyRange: r, Value: v})
		} else {
			out.Items = append(out.Items, v)
		}
	}
	return out
}

// volumes builds volumes.yaml from volume blocks and the plugin's
// volumes_roles_mapping; nil when there is neither.
func (p *pluginHCL) volumes(blocks []*hclsyntax.Block, mapping *Field) *Value {
	if len(blocks) == 0 && mapping == nil {
		return nil
	}
	vols := p.entities(blocks, hclVolume)
	var out *Value
	if vols == nil {
		// No volume blocks: the plugin adds no volumes (volumes: []).
		vols = &Value{Kind: KindList, Range: mapping.KeyRange}
		out = NewMap(mapping.KeyRange)
		out.Fields = append(out.Fields, Field{Key: "volumes", KeyRange: mapping.KeyRange, Value: vols})
	} else {
		out = NewMap(vols.Range)
		out.Fields = append(out.Fields, Field{Key: "volumes", KeyRange: blocks[0].TypeRange, Value: vols})
	}
	if mapping != nil {
		out.Fields = append(out.Fields, *mapping)
	}
	return out
}

// task converts a task block.
func (p *pluginHCL) task(b *hclsyntax.Block, seen map[string]hcl.Range) *Value {
	_, _, v := p.entity(b, hclTask, seen)
	return v
}

// graph converts a graph block into a graphs: item {type, ..., tasks}.
func (p *pluginHCL) graph(b *hclsyntax.Block) (string, *Value) {
	typ, tr, ok := p.label(b, "type", `graph "<type>" { task "<id>" { ... } }`)
	if !ok {
		return "", nil
	}
	what := fmt.Sprintf("graph %q", typ)
	out := NewMap(b.DefRange())
	for _, a := range sortedAttributes(b.Body) {
		v, d := exprToValue(a.Expr, p.ctx)
		p.diags = append(p.diags, d...)
		if v != nil {
			out.Fields = append(out.Fields, Field{Key: a.Name, KeyRange: a.NameRange, Value: v})
		}
	}
	var tasks *Value
	seen := map[string]hcl.Range{}
	for _, nb := range b.Body.Blocks {
		if nb.Type != "task" {
			p.unexpectedBlock(nb, what, []string{"task"})
			continue
		}
		if tasks == nil {
			for _, k := range []string{"tasks", "tasks_path"} {
				if f := out.Field(k); f != nil {
					withDetail(p.errf(nb.TypeRange, "%s: the tasks are written both as %s (line %d) and as task blocks", what, k, f.KeyRange.Start.Line),
						"A graph has task blocks, or tasks = [...], or tasks_path = \"<file or glob>\".")
				}
			}
			if out.Has("tasks") || out.Has("tasks_path") {
				break
			}
			tasks = &Value{Kind: KindList, Range: nb.DefRange()}
			out.Fields = append(out.Fields, Field{Key: "tasks", KeyRange: nb.TypeRange, Value: tasks})
		}
		if t := p.task(nb, seen); t != nil {
			tasks.Items = append(tasks.Items, t)
		}
	}
	sortFields(out)
	return typ, p.withLabel(out, "graph", "type", typ, tr)
}

// topGraphs converts the task and graph blocks outside a release: top-level tasks or
// graph "default" become deployment_tasks.yaml; other graphs are returned to go into
// the release block (when there is exactly one). A graph "default" with a tasks_path
// is left in doc.defaultGraph, for each load to load the path.
func (p *pluginHCL) topGraphs(taskBlocks, graphBlocks []*hclsyntax.Block, releases int, doc *pluginHCLDecoded) (*Value, []*hclsyntax.Block) {
	var tasks *Value
	if len(taskBlocks) > 0 {
		tasks = &Value{Kind: KindList, Range: taskBlocks[0].DefRange()}
		seen := map[string]hcl.Range{}
		for _, b := range taskBlocks {
			if t := p.task(b, seen); t != nil {
				tasks.Items = append(tasks.Items, t)
			}
		}
	}
	var outer []*hclsyntax.Block
	types := map[string]hcl.Range{}
	for _, b := range graphBlocks {
		if len(b.Labels) == 1 && b.Labels[0] != "default" {
			if releases == 1 {
				outer = append(outer, b) // checked with the release's own graphs
				continue
			}
			if releases == 0 {
				withDetail(p.errf(b.LabelRanges[0], "graph %s needs a release block (package_version 5.0.0+)", b.Labels[0]),
					`Outside a release block only graph "default" is allowed (it is the plugin's deployment_tasks.yaml); graphs of other types belong to a release "<version>" { ... } block.`)
			} else {
				withDetail(p.errf(b.LabelRanges[0], "graph %s outside a release block is ambiguous: this plugin has %d release blocks", b.Labels[0], releases),
					"Move the graph into the release block it belongs to.")
			}
			continue
		}
		typ, g := p.graph(b)
		if g == nil || !p.unique(types, "graph", typ, b.LabelRanges[0]) {
			continue
		}
		if len(taskBlocks) > 0 {
			withDetail(p.errf(b.TypeRange, "the plugin's default graph is written both as task blocks (line %d) and as graph \"default\"", taskBlocks[0].TypeRange.Start.Line),
				`Put the tasks in graph "default" { ... } or write them as top-level task blocks, not both.`)
			continue
		}
		for _, f := range g.Fields {
			if f.Key != "type" && f.Key != "tasks" && f.Key != "tasks_path" {
				withDetail(p.errf(f.KeyRange, "graph \"default\" outside a release block takes only task blocks, tasks or tasks_path, not %s", f.Key),
					"It becomes the plugin's deployment_tasks.yaml, which is a list of tasks.")
			}
		}
		if g.Has("tasks_path") {
			// Loading the path either replaces it by tasks or reports why not.
			doc.defaultGraph = g
			continue
		}
		if t := g.Get("tasks"); t != nil {
			tasks = t
		} else {
			withDetail(p.errf(b.DefRange(), "graph \"default\" needs task blocks, tasks or tasks_path"),
				"An empty graph is written tasks = [].")
		}
	}
	return tasks, outer
}

// releases appends a releases: record for each release block to the metadata.
func (p *pluginHCL) releases(meta *Value, blocks, outer []*hclsyntax.Block) *Value {
	if len(blocks) == 0 {
		return meta
	}
	var recs []*Value
	seen := map[string]hcl.Range{}
	for _, b := range blocks {
		if len(b.Labels) == 1 && !p.unique(seen, "release", b.Labels[0], b.LabelRanges[0]) {
			continue
		}
		if rec := p.release(b, outer); rec != nil {
			recs = append(recs, rec)
		}
	}
	f := meta.Field("releases")
	switch {
	case f == nil:
		list := &Value{Kind: KindList, Range: blocks[0].DefRange(), Items: recs}
		return meta.With("releases", blocks[0].TypeRange, list)
	case f.Value.Kind == KindList:
		list := *f.Value
		list.Items = append(slices.Clip(f.Value.Items), recs...)
		return meta.With("releases", f.KeyRange, &list)
	}
	withDetail(p.errf(f.KeyRange, "releases must be a list to add the release blocks to, not a %s", f.Value.Kind),
		"releases = [...] lists the releases the plugin extends; release blocks define releases.")
	return meta
}

// release converts a release block into a releases: record with is_release = true.
func (p *pluginHCL) release(b *hclsyntax.Block, outer []*hclsyntax.Block) *Value {
	version, vr, ok := p.label(b, "version", `release "<version>" { release_name = "..." operating_system = "..." ... }`)
	if !ok {
		return nil
	}
	what := fmt.Sprintf("release %q", version)
	rec := NewMap(b.DefRange())
	for _, a := range sortedAttributes(b.Body) {
		if a.Name == "is_release" {
			withDetail(p.errf(a.NameRange, "%s: is_release is implied by the release block", what), "Remove it.")
			continue
		}
		v, d := exprToValue(a.Expr, p.ctx)
		p.diags = append(p.diags, d...)
		if v != nil {
			rec.Fields = append(rec.Fields, Field{Key: a.Name, KeyRange: a.NameRange, Value: v})
		}
	}
	byType := map[string][]*hclsyntax.Block{}
	for _, nb := range b.Body.Blocks {
		if !slices.Contains(releaseHCLBlocks, nb.Type) {
			p.unexpectedBlock(nb, what, releaseHCLBlocks)
			continue
		}
		byType[nb.Type] = append(byType[nb.Type], nb)
	}
	// Blocks become record keys; an attribute of the same key is an error.
	set := func(key string, first *hclsyntax.Block, v *Value) {
		if v == nil {
			return
		}
		if f := rec.Field(key); f != nil {
			withDetail(p.errf(first.TypeRange, "%s: %s is set both as an attribute (line %d) and by %s blocks", what, key, f.KeyRange.Start.Line, first.Type),
				"Use one form.")
			return
		}
		rec.Fields = append(rec.Fields, Field{Key: key, KeyRange: first.TypeRange, Value: v})
	}
	for _, e := range []hclEntity{hclRole, hclTag, hclComponent, hclNetworkRole} {
		if bs := byType[e.block]; len(bs) > 0 {
			set(e.key, bs[0], p.entities(bs, e))
		}
	}
	graphBlocks := append(slices.Clip(byType["graph"]), outer...)
	sort.SliceStable(graphBlocks, func(i, j int) bool { return graphBlocks[i].TypeRange.Start.Byte < graphBlocks[j].TypeRange.Start.Byte })
	if len(graphBlocks) > 0 {
		graphs := &Value{Kind: KindList, Range: graphBlocks[0].DefRange()}
		types := map[string]hcl.Range{}
		for _, gb := range graphBlocks {
			typ, g := p.graph(gb)
			if g != nil && p.unique(types, "graph", typ, gb.LabelRanges[0]) {
				graphs.Items = append(graphs.Items, g)
			}
		}
		set("graphs", graphBlocks[0], graphs)
	}
	sortFields(rec)
	rec = p.withLabel(rec, "release", "version", version, vr)
	isRel := &Value{Kind: KindBool, Bool: true, Text: "true", Range: b.TypeRange}
	rec.Fields = append([]Field{{Key: "is_release", KeyRange: b.TypeRange, Value: isRel}}, rec.Fields...)
	return rec
}
