package loader

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

var reNodeName matcher = nameMatcher{}

var ruleNodeName = nameRule("node names")

// ReservedNodeNames are the pseudo nodes of the artifacts.
var ReservedNodeNames = map[string]string{
	"master": "the Fuel master node",
	"sync":   "the stage tasks' synchronisation node",
}

var knownClusterKeys = map[string]bool{
	"cluster": true, "release": true, "mode": true, "plugins": true, "components": true, "settings": true,
	"resolution": true, "tags": true, "roles": true, "instances": true, "nodes": true, "tasks_path": true,
	"tasks": true, "environments": true, "requires": true, "resource_registry": true,
	"sync": true, "suspend": true, "depends_on": true, "deploy": true,
}

var knownNodeKeys = map[string]bool{"id": true, "roles": true, "tags": true}

// loadCluster reads one cluster spec, YAML or HCL.
func (l *loadCtx) loadCluster(file string) (*Cluster, hcl.Diagnostics) {
	var v *Value
	var diags hcl.Diagnostics
	if strings.HasSuffix(file, ".hcl") {
		v, diags = l.r.value(asClusterHCL, file, fileRange(file))
	} else {
		v, diags = l.r.data(file, fileRange(file))
	}
	if v == nil || diags.HasErrors() {
		return nil, diags
	}
	c, d := l.clusterFromValue(file, v)
	// A node written twice is an error of the cluster's (defined twice), not
	// also the decoder's "the last one wins" warning.
	if nodes := v.Get("nodes"); nodes.IsMap() {
		var dups []hcl.Range
		for _, f := range nodes.Overridden {
			dups = append(dups, f.KeyRange, where(nodes, f.Key))
		}
		diags = dropDuplicateKeyWarnings(diags, dups)
	}
	return c, append(diags, d...)
}

// defaultClusterName is the file name without extension, or the directory name for
// clusters/<name>/cluster.yaml.
func defaultClusterName(file string) string {
	base := path.Base(file)
	stem := strings.TrimSuffix(base, path.Ext(base))
	if stem == "cluster" && path.Dir(file) != "clusters" {
		return path.Base(path.Dir(file))
	}
	return stem
}

// clusterFromValue builds the cluster model from its data tree. YAML specs and HCL
// specs (converted to the same tree) go through here, so twins give equal models.
func (l *loadCtx) clusterFromValue(file string, v *Value) (*Cluster, hcl.Diagnostics) {
	c := &checker{}
	if v.IsNull() {
		c.errf(v.Range, "%s: the cluster spec is empty", file)
		return nil, c.diags
	}
	if !c.mapping(v, "a cluster spec") {
		return nil, c.diags
	}
	cl := &Cluster{File: file, Name: defaultClusterName(file), NameRange: fileRange(file), Mode: "ha", Resolution: "tags"}
	what := clusterName(c, v, cl)
	clusterChoices(c, v, cl, what)
	cl.Plugins = refs(c, v, "plugins", what)
	cl.Components = refs(c, v, "components", what)
	cl.Environments = refs(c, v, "environments", what)
	if s := v.Get("settings"); !s.IsNull() && c.mapping(s, what+": settings") {
		cl.Settings = expandDotted(c, s)
		cl.SettingsKeys = settingLeaves(cl.Settings, nil, nil)
	}
	if t := v.Get("tags"); !t.IsNull() {
		cl.Tags = checkTagsMeta(c, t, what)
	}
	cl.RoleTags = clusterRoleTags(c, v.Get("roles"), what)
	cl.Instances = clusterInstances(c, v.Get("instances"), what)
	cl.Nodes = clusterNodes(c, v.Get("nodes"), what)
	cl.NodesRange = cl.NameRange
	if f := v.Field("nodes"); f != nil {
		cl.NodesRange = f.KeyRange
	}
	cl.TasksPath, cl.Tasks = l.clusterTasks(c, v, file, what)
	if r := v.Get("requires"); !r.IsNull() && c.mapping(r, what+": requires") {
		cl.Requires = r
	}
	if r := v.Get("resource_registry"); !r.IsNull() && c.mapping(r, what+": resource_registry") {
		cl.ResourceRegistry = r
	}
	clusterPolicy(c, v, cl, what)
	for _, f := range v.Fields {
		if !knownClusterKeys[f.Key] {
			c.unknownKey(f, knownClusterKeys, what)
		}
	}
	return cl, c.diags
}

// clusterName reads the spec's cluster: name into cl (else cl keeps the one
// its file gives), checks it is a valid name and not a reserved one, and
// returns how errors name the cluster ("cluster prod").
func clusterName(c *checker, v *Value, cl *Cluster) (what string) {
	what = "cluster " + cl.Name
	if name, ok := c.str(v, "cluster", "cluster", false); ok {
		cl.Name, cl.NameRange = name, v.Get("cluster").Range
		what = "cluster " + name
	}
	if c.pattern(cl.NameRange, nameMatcher{}, cl.Name, "cluster name", nameRule("cluster names")) {
		if why, reserved := ReservedClusterNames[cl.Name]; reserved {
			c.errf(cl.NameRange, "cluster name %q is reserved for %s", cl.Name, why)
		}
	}
	return what
}

// clusterChoices reads the release (required), the mode (ha or multinode) and
// the resolution (tags or roles) into cl.
func clusterChoices(c *checker, v *Value, cl *Cluster, what string) {
	if rel, ok := c.str(v, "release", what, true); ok {
		cl.Release, cl.ReleaseRange = rel, v.Get("release").Range
	}
	if mode, ok := c.str(v, "mode", what, false); ok {
		if mode != "ha" && mode != "multinode" {
			c.errf(v.Get("mode").Range, "%s: mode must be ha or multinode, not %q", what, mode)
		}
		cl.Mode = mode
	}
	if res, ok := c.str(v, "resolution", what, false); ok {
		if res != "tags" && res != "roles" {
			c.errf(v.Get("resolution").Range, "%s: resolution must be tags or roles, not %q", what, res)
		}
		cl.Resolution = res
	}
}

// clusterRoleTags reads roles: (r, null when not written), each role's list
// of tags.
func clusterRoleTags(c *checker, r *Value, what string) []RoleTags {
	if r.IsNull() || !c.mapping(r, what+": roles") {
		return nil
	}
	var out []RoleTags
	for _, f := range r.Fields {
		if !c.mapping(f.Value, what+": roles."+f.Key) {
			continue
		}
		tags, _ := c.strList(f.Value, "tags", what+": roles."+f.Key, true, false)
		out = append(out, RoleTags{Role: f.Key, Tags: tags, Range: f.KeyRange})
	}
	return out
}

// clusterInstances reads instances: (in, null when not written), a positive
// count per tag.
func clusterInstances(c *checker, in *Value, what string) []Instance {
	if in.IsNull() || !c.mapping(in, what+": instances") {
		return nil
	}
	var out []Instance
	for _, f := range in.Fields {
		if f.Value.Kind != KindInt || f.Value.Int < 1 {
			c.errf(f.Value.Range, "%s: instances.%s must be a positive integer", what, f.Key)
			continue
		}
		out = append(out, Instance{Tag: f.Key, Count: int(f.Value.Int), Range: f.KeyRange})
	}
	return out
}

// clusterTasks reads the cluster's own deployment tasks: written inline
// (tasks:) or loaded from the file tasks_path: names, relative to the spec.
func (l *loadCtx) clusterTasks(c *checker, v *Value, file, what string) (tasksPath string, tasks []*Task) {
	if tp, ok := c.str(v, "tasks_path", what, false); ok {
		tv := &Value{Kind: KindMap, Range: v.Range, Fields: []Field{*v.Field("tasks_path")}}
		loaded, d := l.paths.walk(tv, file, []string{file})
		c.add(d...)
		if t := loaded.Get("tasks"); t != nil {
			tasks = checkTaskList(c, t, file)
		}
		return tp, tasks
	}
	if t := v.Get("tasks"); !t.IsNull() {
		tasks = checkTaskList(c, t, file)
	}
	return "", tasks
}

// deployPolicy reads a deploy: policy (auto or manual; "" when not written).
func deployPolicy(c *checker, v *Value, what, detail string) string {
	s, ok := c.str(v, "deploy", what, false)
	if !ok {
		return ""
	}
	if s != "auto" && s != "manual" {
		c.add(withDetail(errorAt(v.Get("deploy").Range, "%s: deploy must be auto or manual, not %s", what, quoteShort(s)), detail))
		return ""
	}
	return s
}

// clusterPolicy reads the cluster's sync policy: sync, suspend and depends_on
// (a list of cluster names, or of {cluster: NAME, healthy: BOOL}). The names are
// checked against the other clusters, and for cycles, by checkClusterSet.
func clusterPolicy(c *checker, v *Value, cl *Cluster, what string) {
	if s, ok := c.str(v, "sync", what, false); ok {
		if s != "auto" && s != "manual" {
			c.add(withDetail(errorAt(v.Get("sync").Range, "%s: sync must be auto or manual, not %s", what, quoteShort(s)),
				"sync: auto applies every valid commit; sync: manual plans it and waits for fuelsync approve --cluster."))
		} else {
			cl.Sync, cl.SyncRange = s, v.Get("sync").Range
		}
	}
	cl.Suspend, cl.SuspendSet = c.boolean(v, "suspend", what)
	cl.Deploy = deployPolicy(c, v, what, "deploy: auto starts a deployment run after each apply that changes the cluster (serve with agents); deploy: manual waits for fuelsync deploy.")
	d := v.Get("depends_on")
	if d.IsNull() {
		return
	}
	if d.Kind != KindList {
		c.errf(d.Range, "%s: depends_on must be a list of cluster names, not a %s", what, d.Kind)
		return
	}
	for _, it := range d.Items {
		if s, ok := it.Str(); ok && it.IsScalar() {
			cl.DependsOn = append(cl.DependsOn, Dependency{Cluster: s, Range: it.Range})
			continue
		}
		if !it.IsMap() {
			c.errf(it.Range, "%s: every item of depends_on must be a cluster name or {cluster: NAME, healthy: true}, not a %s", what, it.Kind)
			continue
		}
		name, ok := c.str(it, "cluster", what+": depends_on", true)
		if !ok {
			continue
		}
		dep := Dependency{Cluster: name, Range: it.Get("cluster").Range}
		dep.Healthy, _ = c.boolean(it, "healthy", what+": depends_on")
		for _, f := range it.Fields {
			if f.Key != "cluster" && f.Key != "healthy" {
				c.unknownKey(f, map[string]bool{"cluster": true, "healthy": true}, what+": depends_on")
			}
		}
		cl.DependsOn = append(cl.DependsOn, dep)
	}
}

// settingLeaves lists the leaves of the settings tree with their dotted paths. A
// list or an empty mapping is a leaf (it is a value, not more settings).
func settingLeaves(v *Value, path []string, out []Setting) []Setting {
	for _, f := range v.Fields {
		p := append(append([]string(nil), path...), f.Key)
		if f.Value.IsMap() && len(f.Value.Fields) > 0 {
			out = settingLeaves(f.Value, p, out)
			continue
		}
		out = append(out, Setting{Path: p, Value: f.Value, Range: f.KeyRange})
	}
	return out
}

// refs reads a list of names.
func refs(c *checker, m *Value, key, what string) []Ref {
	names, ok := c.strList(m, key, what, false, false)
	if !ok {
		return nil
	}
	out := make([]Ref, len(names))
	for i, n := range names {
		out[i] = Ref{Name: n, Range: m.Get(key).Items[i].Range}
	}
	return out
}

// expandDotted turns `a.b.c: v` keys into nested mappings, merged with nested keys
// written the long way.
func expandDotted(c *checker, m *Value) *Value {
	out := NewMap(m.Range)
	for _, f := range m.Fields {
		val := f.Value
		if val.IsMap() {
			val = expandDotted(c, val)
		}
		parts := strings.Split(f.Key, ".")
		for i := len(parts) - 1; i > 0; i-- {
			val = &Value{Kind: KindMap, Range: f.KeyRange, Fields: []Field{{Key: parts[i], KeyRange: f.KeyRange, Value: val}}}
		}
		out = DeepMerge(out, &Value{Kind: KindMap, Range: m.Range, Fields: []Field{{Key: parts[0], KeyRange: f.KeyRange, Value: val}}})
	}
	return out
}

// clusterNodes reads `nodes:`: a mapping of node name to {id, roles, tags}.
func clusterNodes(c *checker, v *Value, what string) []*Node {
	if v.IsNull() {
		return nil
	}
	if !v.IsMap() {
		c.errf(v.Range, "%s: nodes must be a mapping of node name to {id, roles, tags}, not a %s", what, v.Kind)
		return nil
	}
	// Every definition of a repeated name, in file order: YAML keeps the last in
	// Fields and the earlier ones in Overridden, HCL the first and the later ones.
	occ := map[string][]hcl.Range{}
	for _, f := range v.Overridden {
		occ[f.Key] = append(occ[f.Key], f.KeyRange)
	}
	for _, f := range v.Fields {
		if _, dup := occ[f.Key]; dup {
			occ[f.Key] = append(occ[f.Key], f.KeyRange)
		}
	}
	for _, key := range sortedKeys(occ) {
		rs := occ[key]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Start.Byte < rs[j].Start.Byte })
		for _, r := range rs[1:] {
			c.add(withDetail(errorAt(r, "%s: node %q is defined twice (first at line %d)", what, key, rs[0].Start.Line),
				"Each node name appears once under nodes:."))
		}
	}
	var nodes []*Node
	byID := map[int]*Node{}
	for i, f := range v.Fields {
		n := &Node{Name: f.Key, NameRange: f.KeyRange, ID: i + 1}
		nw := what + ": node " + f.Key
		if c.pattern(f.KeyRange, reNodeName, f.Key, "node name", ruleNodeName) {
			if why, reserved := ReservedNodeNames[f.Key]; reserved {
				c.errf(f.KeyRange, "%s: node name %q is reserved for %s", what, f.Key, why)
			}
		}
		body := f.Value
		if body.IsNull() {
			body = NewMap(f.Value.Range)
		}
		if !c.mapping(body, nw) {
			continue
		}
		if id := body.Get("id"); !id.IsNull() {
			if id.Kind != KindInt || id.Int < 1 {
				c.errf(id.Range, "%s: id must be a positive integer", nw)
			} else {
				n.ID = int(id.Int)
			}
		}
		if prev, dup := byID[n.ID]; dup {
			c.errf(where(body, "id"), "%s: id %d is already used by node %s", nw, n.ID, prev.Name)
		} else {
			byID[n.ID] = n
		}
		n.Roles = refs(c, body, "roles", nw)
		if t := body.Get("tags"); !t.IsNull() && c.mapping(t, nw+": tags") {
			n.Assign = refs(c, t, "assign", nw+": tags")
			n.Unassign = refs(c, t, "unassign", nw+": tags")
			for _, tf := range t.Fields {
				if tf.Key != "assign" && tf.Key != "unassign" {
					hint := ""
					if best := closestShort(tf.Key, map[string]bool{"assign": true, "unassign": true}); best != "" {
						hint = fmt.Sprintf("; did you mean %q?", best)
					}
					c.errf(tf.KeyRange, "%s: tags has assign and unassign lists, not %q%s", nw, tf.Key, hint)
				}
			}
		}
		for _, bf := range body.Fields {
			if !knownNodeKeys[bf.Key] {
				c.unknownKey(bf, knownNodeKeys, nw)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}
