package diff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// massSet is a release change on clusters of n nodes each: the first three
// quarters of each cluster's nodes compute, the rest controller+ceph-osd,
// every node's hiera edited; the sync node's stage with it.
func massSet(clusters, n int) *ChangeSet {
	cs := &ChangeSet{}
	for c := range clusters {
		cc := &ClusterChange{Name: fmt.Sprintf("c-%02d", c+1), Action: Update}
		for i := range n {
			roles := []string{"compute"}
			if i >= n*3/4 {
				roles = []string{"ceph-osd", "controller"}
			}
			cc.Nodes = append(cc.Nodes, &NodeChange{Node: fmt.Sprintf("node-%d", i+1), Action: Update, Run: []string{"default"}, Roles: roles,
				Causes: []*Cause{{Kind: "task_edited", Subject: "hiera", Source: "release/tasks.yaml:812", Changed: []string{"hiera"}}},
				Graphs: []*GraphChange{{Graph: "default", Changed: []*TaskChange{{ID: "hiera", Fields: []string{"parameters"}}}}}})
		}
		cc.Nodes = append(cc.Nodes, &NodeChange{Node: "sync", Action: Update, Run: []string{"default"}, Pseudo: true,
			Causes: []*Cause{{Kind: "task_edited", Subject: "deploy_end", Source: "release/tasks.yaml:3", Changed: []string{"deploy_end"}}},
			Graphs: []*GraphChange{{Graph: "default", Changed: []*TaskChange{{ID: "deploy_end", Fields: []string{"parameters"}}}}}})
		cc.Groups = group(cc.Nodes)
		cs.Clusters = append(cs.Clusters, cc)
	}
	cs.Summary = Summarize(cs.Clusters)
	return cs
}

// TestMassText: a change of more than MassNodes nodes is written by change,
// then class of nodes across the clusters, with counts (the nodes of 40
// clusters: the first three and the last named); up to MassNodes, cluster by
// cluster with the nodes' names.
func TestMassText(t *testing.T) {
	tests := []struct {
		name            string
		clusters, nodes int
		want            string
	}{
		{"40 clusters of 500", 40, 500, `20,000 nodes in 40 clusters, by class of nodes (--format json lists every node):
~ 40 clusters: c-01, c-02, c-03, c-04, c-05, c-06, c-07, c-08, c-09, … and 31 more

  ~ 20,000 nodes of 2 classes: deploy
      task hiera edited (release/tasks.yaml:812): ~ hiera
      · 15,000 nodes of class compute in 40 clusters: c-01, c-02, c-03, …, c-40
      · 5,000 nodes of class ceph-osd+controller in 40 clusters: c-01, c-02, c-03, …, c-40
  ~ 40 nodes of 1 class: deploy
      task deploy_end edited (release/tasks.yaml:3): ~ deploy_end
      · sync in 40 clusters: c-01, c-02, c-03, …, c-40

Plan: 20,000 nodes to deploy, 0 to provision, 0 to delete; 0 tasks added, 0 removed, 20,040 changed.
`},
		{"one cluster of 60", 1, 60, `60 nodes in 1 cluster, by class of nodes (--format json lists every node):
~ 1 cluster: c-01

  ~ 60 nodes of 2 classes: deploy
      task hiera edited (release/tasks.yaml:812): ~ hiera
      · 45 nodes of class compute in c-01
      · 15 nodes of class ceph-osd+controller in c-01
  ~ 1 node of 1 class: deploy
      task deploy_end edited (release/tasks.yaml:3): ~ deploy_end
      · sync in c-01

Plan: 60 nodes to deploy, 0 to provision, 0 to delete; 0 tasks added, 0 removed, 61 changed.
`},
		{"two clusters of 4", 2, 4, `~ cluster c-01
  ~ 4 nodes (ceph-osd, compute, controller): node-1, node-2, node-3, node-4: deploy
      task hiera edited (release/tasks.yaml:812): ~ hiera
  ~ sync: deploy
      task deploy_end edited (release/tasks.yaml:3): ~ deploy_end

~ cluster c-02
  ~ 4 nodes (ceph-osd, compute, controller): node-1, node-2, node-3, node-4: deploy
      task hiera edited (release/tasks.yaml:812): ~ hiera
  ~ sync: deploy
      task deploy_end edited (release/tasks.yaml:3): ~ deploy_end

Plan: 8 nodes to deploy, 0 to provision, 0 to delete; 0 tasks added, 0 removed, 10 changed.
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := massSet(tt.clusters, tt.nodes).Text(Colors{})
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("text (-want +got):\n%s", d)
			}
		})
	}
}

// TestMassClassLines: a change of more classes than MassClassLines lists that
// many and says how many more.
func TestMassClassLines(t *testing.T) {
	cs := massSet(1, 60)
	for i, nc := range cs.Clusters[0].Nodes {
		if !nc.Pseudo {
			nc.Roles = []string{fmt.Sprintf("role-%02d", i%40)}
		}
	}
	cs.Clusters[0].Groups = group(cs.Clusters[0].Nodes)
	got := cs.Text(Colors{})
	if n := strings.Count(got, "· "); n != MassClassLines+2 { // and sync's
		t.Errorf("%d class lines, want %d:\n%s", n, MassClassLines+2, got)
	}
	if !strings.Contains(got, "      · … and 10 more classes\n") {
		t.Errorf("no line saying how many more classes:\n%s", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 20000: "20,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
