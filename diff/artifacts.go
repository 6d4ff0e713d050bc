package diff

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
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

// nodeDoc is <cluster>/nodes/<node>/<graph>.yaml.
type nodeDoc struct {
	Tasks []*taskDoc `yaml:"tasks"`
}

type taskDoc struct {
	ID              string    `yaml:"id"`
	Type            string    `yaml:"type"`
	Parameters      yaml.Node `yaml:"parameters"`
	Condition       yaml.Node `yaml:"condition"`
	DynamicRequires yaml.Node `yaml:"dynamic_requires"`
	Requires        []struct {
		Task string `yaml:"task"`
		Node string `yaml:"node"`
	} `yaml:"requires"`
}

// artifactPath splits an artifact path: kind is "cluster" (cluster.yaml), "node"
// (a node's graph), or "" for anything else (manifest.json, DOT files).
func artifactPath(name string) (kind, cluster, node, graph string) {
	parts := strings.Split(name, "/")
	switch {
	case len(parts) == 2 && parts[1] == "cluster.yaml":
		return "cluster", parts[0], "", ""
	case len(parts) == 4 && parts[1] == "nodes" && path.Ext(parts[3]) == ".yaml":
		return "node", parts[0], parts[2], strings.TrimSuffix(parts[3], ".yaml")
	}
	return "", "", "", ""
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
