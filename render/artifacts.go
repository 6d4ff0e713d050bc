package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/loader"
)

// Rendered is one cluster, merged and resolved onto its nodes.
type Rendered struct {
	Model  *Model
	Graphs []*Graph
}

// Graph returns the graph of type typ, or nil.
func (r *Rendered) Graph(typ string) *Graph {
	for _, g := range r.Graphs {
		if g.Type == typ {
			return g
		}
	}
	return nil
}

// Options tune Render.
type Options struct {
	// Clusters limits rendering to these clusters (all when empty).
	Clusters []string
	// State is the applied state primary tags stick to (nil: empty).
	State AppliedState
}

// Render checks repo as Check does and resolves every cluster (or opts.Clusters)
// onto its nodes. Clusters whose model has errors are not rendered; the diagnostics
// say why.
func Render(repo *loader.Repo, opts Options) ([]*Rendered, hcl.Diagnostics) {
	b := newBuilder(repo)
	b.state = opts.State
	b.checkData()
	var out []*Rendered
	var diags hcl.Diagnostics
	for _, c := range repo.Clusters {
		if len(opts.Clusters) > 0 && !slices.Contains(opts.Clusters, c.Name) {
			continue
		}
		m, d := b.build(c)
		diags = append(diags, d...)
		if m == nil || d.HasErrors() {
			continue
		}
		graphs, d := m.RenderGraphs()
		diags = append(diags, d...)
		out = append(out, &Rendered{Model: m, Graphs: graphs})
	}
	return out, loader.SortDiagnostics(append(b.data, diags...))
}

// Files serialises rendered clusters into the artifact layout of SPEC §6, path →
// bytes, manifest.json included. Keys are sorted and nothing depends on time, so the
// same input gives the same bytes.
func Files(rs []*Rendered, revision, toolVersion string) (map[string][]byte, error) {
	files := map[string][]byte{}
	put := func(name string, v any) error {
		data, err := encodeYAML(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files[name] = data
		return nil
	}
	for _, r := range rs {
		name := r.Model.Cluster.Name
		if err := put(path.Join(name, "cluster.yaml"), clusterDoc(r)); err != nil {
			return nil, err
		}
		for _, g := range r.Graphs {
			for _, ng := range g.Nodes {
				if err := put(path.Join(name, "nodes", ng.Node, g.Type+".yaml"), nodeDoc(r.Model, g, ng)); err != nil {
					return nil, err
				}
			}
			files[path.Join(name, "graphs", g.Type+".dot")] = DOT(name, g)
		}
	}
	manifest, err := manifestDoc(files, revision, toolVersion)
	if err != nil {
		return nil, err
	}
	files["manifest.json"] = manifest
	return files, nil
}

func encodeYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func manifestDoc(files map[string][]byte, revision, toolVersion string) ([]byte, error) {
	type entry struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]entry, len(names))
	for i, n := range names {
		sum := sha256.Sum256(files[n])
		entries[i] = entry{n, hex.EncodeToString(sum[:])}
	}
	doc := struct {
		FormatVersion string  `json:"format_version"`
		Revision      string  `json:"revision"`
		ToolVersion   string  `json:"tool_version"`
		Files         []entry `json:"files"`
	}{"1", revision, toolVersion, entries}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func strs(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

func instancesDoc(in map[string][]string) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = strs(v)
	}
	return out
}

// clusterDoc is <cluster>/cluster.yaml.
func clusterDoc(r *Rendered) map[string]any {
	m := r.Model
	var plugins []any
	for _, p := range m.Plugins {
		plugins = append(plugins, p.Plugin.Name)
	}
	var comps []any
	for _, s := range m.States {
		c := map[string]any{"name": s.Name, "state": s.State}
		if s.Compatible {
			c["compatible"] = true
		}
		comps = append(comps, c)
	}
	nodes := map[string]any{}
	for _, nt := range m.nodeTagList() {
		nodes[nt.Node.Name] = map[string]any{
			"id":        nt.Node.ID,
			"roles":     strs(nt.Roles),
			"tags":      strs(nt.Resolution),
			"primary":   strs(nt.Primary),
			"instances": instancesDoc(nt.Instances),
			"volumes":   m.nodeVolumes(nt.Roles),
		}
	}
	var ft []any
	for _, g := range r.Graphs {
		for _, f := range g.FaultTolerance {
			entry := map[string]any{"name": f.Name, "nodes": strs(f.Nodes), "fault_tolerance": f.FaultTolerance}
			if g.Type != "default" {
				entry["graph"] = g.Type
			}
			ft = append(ft, entry)
		}
	}
	return map[string]any{
		"cluster":                m.Cluster.Name,
		"mode":                   m.Cluster.Mode,
		"release":                map[string]any{"name": m.Release.Name, "version": m.Release.Version},
		"plugins":                orEmpty(plugins),
		"components":             orEmpty(comps),
		"nodes":                  nodes,
		"fault_tolerance_groups": orEmpty(ft),
		"warnings":               strs(m.Warnings),
	}
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// nodeVolumes is the volumes_roles_mapping of the node's roles, in role order, the
// first allocation of each volume id.
func (m *Model) nodeVolumes(roles []string) []any {
	out := []any{}
	seen := map[string]bool{}
	for _, r := range roles {
		for _, it := range items(m.Volumes.RolesMapping[r]) {
			id := it.Get("id").String()
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, it.Interface())
		}
	}
	return out
}

// nodeDoc is <cluster>/nodes/<node>/<graph>.yaml.
func nodeDoc(m *Model, g *Graph, ng *NodeGraph) map[string]any {
	doc := map[string]any{
		"cluster": m.Cluster.Name,
		"node":    ng.Node,
		"graph":   g.Type,
	}
	if ng.Tags != nil {
		doc["roles"] = strs(ng.Tags.Roles)
		doc["tags"] = strs(ng.Tags.Resolution)
		doc["instances"] = instancesDoc(ng.Tags.Instances)
	} else {
		doc["roles"], doc["tags"], doc["instances"] = []any{}, []any{}, map[string]any{}
	}
	tasks := make([]any, 0, len(ng.Tasks))
	for _, pt := range ng.Tasks {
		t := map[string]any{"id": pt.ID, "type": pt.Type}
		data := pt.Def.Task.Data
		if pt.Type != "skipped" {
			if p := data.Get("parameters"); p.IsMap() {
				t["parameters"] = p.Interface()
			}
			if c := data.Get("condition"); c.IsMap() {
				t["condition"] = c.Interface() // yaql, for the deployer
			}
		}
		if len(pt.Requires) > 0 {
			var req []any
			for _, e := range pt.Requires {
				req = append(req, map[string]any{"task": e.Task, "node": e.Node})
			}
			t["requires"] = req
		}
		if len(pt.DynamicRequires) > 0 {
			t["dynamic_requires"] = pt.DynamicRequires
		}
		tasks = append(tasks, t)
	}
	doc["tasks"] = tasks
	return doc
}

// DOT renders a graph type of a cluster as Graphviz: one cluster box per node, an
// edge from each dependency to its dependent, cross-node edges included.
func DOT(cluster string, g *Graph) []byte {
	var b strings.Builder
	q := func(s string) string {
		return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
	}
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n", q(cluster+"/"+g.Type))
	for i, ng := range g.Nodes {
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n", i, q(ng.Node))
		for _, pt := range ng.Tasks {
			attrs := ""
			if pt.Type == "skipped" {
				attrs = ", style=dashed"
			}
			fmt.Fprintf(&b, "    %s [label=%s%s];\n", q(pt.ID+"@"+ng.Node), q(pt.ID), attrs)
		}
		b.WriteString("  }\n")
	}
	for _, ng := range g.Nodes {
		for _, pt := range ng.Tasks {
			for _, e := range pt.Requires {
				fmt.Fprintf(&b, "  %s -> %s;\n", q(e.Task+"@"+e.Node), q(pt.ID+"@"+ng.Node))
			}
		}
	}
	b.WriteString("}\n")
	return []byte(b.String())
}
