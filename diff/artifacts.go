package diff

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/render"
)

// The artifacts as the change set reads them: decoded from their bytes,
// so that a plan compares the applied files on disk with a new render the same way
// a diff compares two renders.

// clusterDoc is <cluster>/cluster.yaml.
type clusterDoc struct {
	Cluster string `yaml:"cluster"`
	Mode    string `yaml:"mode"`
	Release struct {
		Name    string `yaml:"name"`
		Version string `yaml:"version"`
	} `yaml:"release"`
	Plugins    []string `yaml:"plugins"`
	Components []struct {
		Name  string `yaml:"name"`
		State string `yaml:"state"`
	} `yaml:"components"`
	Nodes map[string]*clusterNode `yaml:"nodes"`
}

type clusterNode struct {
	ID        int                 `yaml:"id"`
	Roles     []string            `yaml:"roles"`
	Tags      []string            `yaml:"tags"`
	Primary   []string            `yaml:"primary"`
	Instances map[string][]string `yaml:"instances"`
}

// nodeDoc is <cluster>/nodes/<node>/<graph>.yaml in the expanded layout
// (format 1): every task with its definition inline.
type nodeDoc struct {
	Tasks []*nodeTaskV1 `yaml:"tasks"`
}

type nodeTaskV1 struct {
	ID       string `yaml:"id"`
	taskDef  `yaml:",inline"`
	Requires []requirement `yaml:"requires"`
}

// taskDoc is a task of a node with its definition: a task entry of format 1, or
// one of format 2 joined with its catalogue entry. It holds its definition by
// pointer: a plan of a release change compares millions of them.
type taskDoc struct {
	ID       string
	Requires []requirement
	// def is the task's definition: the task catalogue's entry it was joined
	// with (format 2), shared by every node of the graph that runs the task
	// (shared), or its own (format 1, or inline in format 2).
	def    *taskDef
	shared bool
}

// definition is the task's definition (an empty one when it has none).
func (td *taskDoc) definition() *taskDef {
	if td.def == nil {
		return &taskDef{}
	}
	return td.def
}

// taskDef is what a task catalogue's entry holds (stages aside: the stages' fan-in
// is not part of the change set).
type taskDef struct {
	Type            string    `yaml:"type"`
	Parameters      yaml.Node `yaml:"parameters"`
	Condition       yaml.Node `yaml:"condition"`
	DynamicRequires yaml.Node `yaml:"dynamic_requires"`
}

// requirement is an edge of a task: it requires Task on Node (yaml.v3 reads
// the keys task and node of format 1 into it by their lower-case names).
type requirement = render.Requirement

// nodeDocV2 is a node file of format 2: task ids with task@node requirements, a
// definition inline only where it is not the catalogue's.
type nodeDocV2 struct {
	Node  string        `yaml:"node"`
	Tasks []*nodeTaskV2 `yaml:"tasks"`
}

type nodeTaskV2 struct {
	ID       string `yaml:"id"`
	taskDef  `yaml:",inline"`
	Requires []string `yaml:"requires"`
}

// catalogueDoc is <cluster>/tasks/<graph>.yaml, the task catalogue of format 2.
type catalogueDoc struct {
	Tasks map[string]*taskDef `yaml:"tasks"`
}

// artifactPath splits an artifact path: kind is "cluster" (cluster.yaml), "node"
// (a node's graph), "tasks" (a graph's task catalogue, graph set), or "" for
// anything else (manifest.json, DOT files).
func artifactPath(name string) (kind, cluster, node, graph string) {
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 2 && parts[1] == "cluster.yaml":
		return "cluster", parts[0], "", ""
	case len(parts) == 4:
		if a, err := render.ParseAddress(name); err == nil {
			return "node", a.Cluster, a.Node, a.Graph
		}
	case len(parts) == 3 && parts[1] == "tasks" && path.Ext(parts[2]) == ".yaml":
		return "tasks", parts[0], "", strings.TrimSuffix(parts[2], ".yaml")
	}
	return "", "", "", ""
}

// isFormat2 reports whether a node file is of format 2 (it has a top-level
// format_version; the expanded layout has none).
func isFormat2(data []byte) bool {
	return bytes.HasPrefix(data, []byte("format_version:")) || bytes.Contains(data, []byte("\nformat_version:"))
}

func decodeCatalogue(name string, data []byte) (*catalogueDoc, error) {
	var doc catalogueDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &doc, nil
}

// decodeNodeV2 decodes a node file of format 2, each task joined with its
// definition: inline, else the entry of catalogue (read when needed).
func decodeNodeV2(name string, data []byte, catalogue func() (*catalogueDoc, error)) ([]*taskDoc, error) {
	doc, err := readNodeV2(name, data)
	if err != nil {
		return nil, err
	}
	return joinCatalogue(name, doc, catalogue)
}

// joinCatalogue joins the tasks of a node file of format 2 read by readNodeV2
// with their entries of the task catalogue.
func joinCatalogue(name string, doc []*taskDoc, catalogue func() (*catalogueDoc, error)) ([]*taskDoc, error) {
	for _, td := range doc {
		if td.def != nil {
			continue // its definition inline
		}
		cat, err := catalogue()
		if err != nil {
			return nil, err
		}
		def := cat.Tasks[td.ID]
		if def == nil {
			return nil, fmt.Errorf("%s: task %s is not in the task catalogue", name, td.ID)
		}
		td.def, td.shared = def, true
	}
	return doc, nil
}

// readNodeV2 reads the tasks of a node file of format 2, not yet joined with the
// catalogue: by render.ScanNodeFile when it can, else as YAML.
func readNodeV2(name string, data []byte) ([]*taskDoc, error) {
	if nf, ok := render.ScanNodeFile(data); ok {
		out := make([]*taskDoc, len(nf.Tasks))
		for i, t := range nf.Tasks {
			out[i] = &taskDoc{ID: t.ID, Requires: t.Requires}
		}
		return out, nil
	}
	return yamlNodeV2(name, data)
}

// yamlNodeV2 is readNodeV2 by yaml.v3.
func yamlNodeV2(name string, data []byte) ([]*taskDoc, error) {
	var doc nodeDocV2
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := make([]*taskDoc, len(doc.Tasks))
	for i, t := range doc.Tasks {
		out[i] = &taskDoc{ID: t.ID}
		if t.Type != "" {
			out[i].def = &t.taskDef
		}
		if len(t.Requires) > 0 {
			out[i].Requires = make([]requirement, len(t.Requires))
			for j, s := range t.Requires {
				out[i].Requires[j].Task, out[i].Requires[j].Node = render.SplitRequirement(s, doc.Node)
			}
		}
	}
	return out, nil
}

func decodeCluster(name string, data []byte) (*clusterDoc, error) {
	var doc clusterDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &doc, nil
}

func decodeNode(name string, data []byte) (*nodeDoc, error) {
	var doc nodeDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &doc, nil
}

// sameNode reports whether two YAML values are equal (absent = absent).
func sameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
