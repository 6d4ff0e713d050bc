package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A cluster's graph as a deployer reads it: every node's tasks of one graph
// type, in order, with their requirements (the sync node's stages with their
// implied fan-in) and definitions, and the cluster's fault-tolerance groups.
// It is read from a stored artifact set of either format, so that what a
// deployment runs is exactly what was rendered and applied.

// MasterNode is the pseudo node of the tasks that run on Fuel's master.
const MasterNode = "master"

// ClusterGraph is a cluster's graph of one type, read by ReadClusterGraph.
type ClusterGraph struct {
	Cluster, Graph string
	// Nodes are the nodes with a file of the graph, in render's order: the
	// cluster's nodes by id, then master, then sync.
	Nodes []GraphNode
	// Groups are cluster.yaml's fault-tolerance groups (how many of its
	// nodes may fail before a deployment stops).
	Groups []FaultToleranceGroup
}

// GraphNode is one node of a ClusterGraph.
type GraphNode struct {
	Name string
	// ID is the node's id in cluster.yaml (0 for master and sync).
	ID    int
	Tasks []GraphTask
}

// GraphTask is one task of a node: its id, requirements and definition.
type GraphTask struct {
	ID       string
	Requires []Requirement
	Def      *DeployDef
}

// DeployDef is a task's definition: the entry of the task catalogue (or of the
// node file, when inline), as written.
type DeployDef struct {
	// Type is the task's type (puppet, shell, stage, skipped, ...).
	Type string
	// Stages are the sync node's stages the task comes before (format 2).
	Stages []string
	// params and before are the entry's parameters block and its condition
	// and dynamic_requires blocks, indented by four spaces (format 2); fields
	// are the decoded entry (format 1).
	params, before []byte
	fields         map[string]any
}

// Fields returns the definition's keys as the expanded view has them,
// decoded: condition, dynamic_requires, parameters, type (those present).
func (d *DeployDef) Fields() (map[string]any, error) {
	if d.fields != nil {
		return d.fields, nil
	}
	out := map[string]any{"type": d.Type}
	for _, block := range [][]byte{d.before, d.params} {
		if len(block) == 0 {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(dedent(block), &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// Parameters returns the definition's parameters (nil when it has none).
func (d *DeployDef) Parameters() (map[string]any, error) {
	f, err := d.Fields()
	if err != nil {
		return nil, err
	}
	p, _ := f["parameters"].(map[string]any)
	return p, nil
}

// dedent takes the four spaces a catalogue block is indented by off each line.
func dedent(block []byte) []byte {
	lines := bytes.SplitAfter(block, []byte("\n"))
	var out bytes.Buffer
	out.Grow(len(block))
	for _, l := range lines {
		out.Write(bytes.TrimPrefix(l, []byte("    ")))
	}
	return out.Bytes()
}

// ReadClusterGraph reads cluster's graph of type graph from the artifact set
// fsys (its root holds the clusters' directories), in format 1 or 2.
func ReadClusterGraph(fsys fs.FS, cluster, graph string) (*ClusterGraph, error) {
	cy, err := readClusterYAML(fsys, cluster)
	if err != nil {
		return nil, err
	}
	g := &ClusterGraph{Cluster: cluster, Graph: graph}
	for _, gr := range cy.Groups {
		g.Groups = append(g.Groups, FaultToleranceGroup{Name: gr.Name, Nodes: gr.Nodes, FaultTolerance: gr.FaultTolerance})
	}
	var cat *catalogue
	if data, err := fs.ReadFile(fsys, CataloguePath(cluster, graph)); err == nil {
		if cat, err = parsedCatalogue(data); err != nil {
			return nil, fmt.Errorf("%s: %w", CataloguePath(cluster, graph), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	defs := map[*catalogueEntryBlocks]*DeployDef{}
	for _, name := range cy.order() {
		data, err := fs.ReadFile(fsys, NodeAddress(cluster, name, graph).String())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		n, err := readGraphNode(data, cat, defs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NodeAddress(cluster, name, graph).String(), err)
		}
		if n.Name != name {
			return nil, fmt.Errorf("%s: the file is node %q's", NodeAddress(cluster, name, graph).String(), n.Name)
		}
		n.ID = cy.Nodes[name].ID
		g.Nodes = append(g.Nodes, *n)
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("cluster %s has no node with a graph %s", cluster, graph)
	}
	if cat != nil {
		g.implyStages()
	}
	return g, nil
}

// clusterYAML is what ReadClusterGraph reads of cluster.yaml.
type clusterYAML struct {
	Nodes map[string]struct {
		ID int `yaml:"id"`
	} `yaml:"nodes"`
	Groups []struct {
		Name           string   `yaml:"name"`
		FaultTolerance int      `yaml:"fault_tolerance"`
		Nodes          []string `yaml:"nodes"`
	} `yaml:"fault_tolerance_groups"`
}

func readClusterYAML(fsys fs.FS, cluster string) (*clusterYAML, error) {
	name := path.Join(cluster, "cluster.yaml")
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var cy clusterYAML
	if err := yaml.Unmarshal(data, &cy); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &cy, nil
}

// order lists the nodes as render orders them: by id, then master and sync.
func (cy *clusterYAML) order() []string {
	names := make([]string, 0, len(cy.Nodes)+2)
	for n := range cy.Nodes {
		if n != MasterNode && n != SyncNode {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(cy.Nodes[a].ID, cy.Nodes[b].ID), strings.Compare(a, b))
	})
	return append(names, MasterNode, SyncNode)
}

// readGraphNode reads one node file: format 2 against the catalogue cat
// (defs shares one DeployDef per entry), or format 1 with every definition
// inline.
func readGraphNode(data []byte, cat *catalogue, defs map[*catalogueEntryBlocks]*DeployDef) (*GraphNode, error) {
	nf, ok := ScanNodeFile(data)
	if !ok {
		var err error
		nf, err = ParseNodeFile(data)
		if errors.Is(err, ErrExpanded) {
			return readExpandedNode(data)
		}
		if err != nil {
			return nil, err
		}
	}
	if cat == nil {
		return nil, errors.New("a node file of format 2 without its task catalogue")
	}
	n := &GraphNode{Name: nf.Node, Tasks: make([]GraphTask, len(nf.Tasks))}
	for i, t := range nf.Tasks {
		ent := t.def
		if ent == nil {
			ent = cat.entries[t.ID]
		}
		if ent == nil {
			return nil, fmt.Errorf("task %s is not in the task catalogue", t.ID)
		}
		def := defs[ent]
		if def == nil {
			var err error
			if def, err = newDeployDef(ent); err != nil {
				return nil, fmt.Errorf("task %s: %w", t.ID, err)
			}
			defs[ent] = def
		}
		n.Tasks[i] = GraphTask{ID: t.ID, Requires: t.Requires, Def: def}
	}
	return n, nil
}

func newDeployDef(ent *catalogueEntryBlocks) (*DeployDef, error) {
	var typ struct {
		Type string `yaml:"type"`
	}
	if err := yaml.Unmarshal(dedent(ent.typ), &typ); err != nil {
		return nil, fmt.Errorf("type: %w", err)
	}
	return &DeployDef{Type: typ.Type, Stages: ent.stages, params: ent.params, before: ent.before}, nil
}

// readExpandedNode reads a node file of format 1 (the expanded view).
func readExpandedNode(data []byte) (*GraphNode, error) {
	var doc struct {
		Node  string           `yaml:"node"`
		Tasks []map[string]any `yaml:"tasks"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	n := &GraphNode{Name: doc.Node}
	for i, t := range doc.Tasks {
		id, _ := t["id"].(string)
		typ, _ := t["type"].(string)
		if id == "" || typ == "" {
			return nil, fmt.Errorf("task %d has no id or type", i+1)
		}
		gt := GraphTask{ID: id}
		reqs, _ := t["requires"].([]any)
		for _, r := range reqs {
			m, _ := r.(map[string]any)
			task, _ := m["task"].(string)
			node, _ := m["node"].(string)
			if task == "" || node == "" {
				return nil, fmt.Errorf("task %s: a requirement is not {node, task}", id)
			}
			gt.Requires = append(gt.Requires, Requirement{Task: task, Node: node})
		}
		fields := map[string]any{}
		for _, k := range []string{"condition", "dynamic_requires", "parameters", "type"} {
			if v, ok := t[k]; ok {
				fields[k] = v
			}
		}
		gt.Def = &DeployDef{Type: typ, fields: fields}
		n.Tasks = append(n.Tasks, gt)
	}
	return n, nil
}

// implyStages adds to the sync node's stages the requirements the catalogue
// implies (format 2's stage rule): on every other node, each task whose
// definition lists the stage, unless that node has a task of the stage's id.
// They come after the stage's written requirements, in node order.
func (g *ClusterGraph) implyStages() {
	si := slices.IndexFunc(g.Nodes, func(n GraphNode) bool { return n.Name == SyncNode })
	if si < 0 {
		return
	}
	sync := &g.Nodes[si]
	stage := make(map[string]int, len(sync.Tasks))
	for i, t := range sync.Tasks {
		stage[t.ID] = i
	}
	for _, n := range g.Nodes {
		if n.Name == SyncNode {
			continue
		}
		has := make(map[string]bool, len(n.Tasks))
		for _, t := range n.Tasks {
			has[t.ID] = true
		}
		for _, t := range n.Tasks {
			for _, s := range t.Def.Stages {
				if i, ok := stage[s]; ok && !has[s] {
					sync.Tasks[i].Requires = append(sync.Tasks[i].Requires, Requirement{Task: t.ID, Node: n.Name})
				}
			}
		}
	}
}

// NewDeployDef returns a definition of type typ with the given keys of the
// expanded view (condition, dynamic_requires, parameters), for programs that
// build a ClusterGraph themselves (tests, simulations).
func NewDeployDef(typ string, fields map[string]any) *DeployDef {
	f := map[string]any{"type": typ}
	for k, v := range fields {
		f[k] = v
	}
	return &DeployDef{Type: typ, fields: f}
}
