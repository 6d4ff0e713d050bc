package render

import (
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/loader"
)

// The artifact writer refuses a name that is not one plain path segment even when
// it was handed a model the loader did not check: nothing is put at all.
func TestStreamRefusesNamesThatAreNotPlainSegments(t *testing.T) {
	tests := map[string]struct {
		cluster, graph, node string
		want                 string
	}{
		"cluster climbing out": {cluster: "../../escape", graph: "default", node: "n1", want: `cluster name "../../escape"`},
		"cluster ..":           {cluster: "..", graph: "default", node: "n1", want: `cluster name ".."`},
		"cluster with a slash": {cluster: "a/b", graph: "default", node: "n1", want: `cluster name "a/b"`},
		"hidden cluster":       {cluster: ".x", graph: "default", node: "n1", want: `cluster name ".x"`},
		"absolute cluster":     {cluster: "/tmp/x", graph: "default", node: "n1", want: `cluster name "/tmp/x"`},
		"cluster as manifest":  {cluster: "manifest.json", graph: "default", node: "n1", want: `cluster name "manifest.json" would replace`},
		"graph type climbing":  {cluster: "c", graph: "../../../../outside/evil", node: "n1", want: `graph type "../../../../outside/evil"`},
		"graph type backslash": {cluster: "c", graph: `..\evil`, node: "n1", want: `graph type "..\\evil"`},
		"node name with slash": {cluster: "c", graph: "default", node: "x/../../y", want: `node name "x/../../y"`},
		"empty node name":      {cluster: "c", graph: "default", node: "", want: `node name ""`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := &Rendered{
				Model:  &Model{Cluster: &loader.Cluster{Name: tt.cluster}},
				Graphs: []*Graph{{Type: tt.graph, Nodes: []*NodeGraph{{Node: tt.node}}}},
			}
			var put []string
			err := Stream([]*Rendered{r}, "rev", "test", func(name string, _ []byte) error {
				put = append(put, name)
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one naming %s", err, tt.want)
			}
			if len(put) > 0 {
				t.Errorf("files were put: %v", put)
			}
		})
	}
}
