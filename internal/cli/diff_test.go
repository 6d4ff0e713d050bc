package cli

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/loader"
)

// TestAffectedClusters: a change to a cluster spec affects that cluster; any other
// file the load reads, every cluster; nothing, none.
func TestAffectedClusters(t *testing.T) {
	base, err := mapfs.Read("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	with := func(name, old, new string) fstest.MapFS {
		out := fstest.MapFS{}
		for k, v := range base {
			out[k] = v
		}
		src := string(base[name].Data)
		if !strings.Contains(src, old) {
			t.Fatalf("%s has no %q", name, old)
		}
		out[name] = &fstest.MapFile{Data: []byte(strings.Replace(src, old, new, 1))}
		return out
	}
	load := func(t *testing.T, fsys fstest.MapFS) *loader.Repo {
		repo, diags := loader.Load(fsys, loader.Options{})
		if diags.HasErrors() {
			t.Fatalf("load: %v", diags.Errs())
		}
		return repo
	}
	for _, tc := range []struct {
		name string
		head fstest.MapFS
		want []string
	}{
		{"nothing", base, []string{}},
		{"a cluster spec", with("clusters/demo.yaml", "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}"), []string{"demo"}},
		{"a comment in the HCL twin", with("clusters/demo-hcl.hcl", "\n", "\n# edited\n"), []string{"demo-hcl"}},
		{"a plugin's tasks", with("plugins/monitoring/deployment_tasks.yaml", "timeout: 600", "timeout: 900"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := affectedClusters(load(t, base), load(t, tc.head))
			if diff := cmp.Diff(tc.want, got); diff != "" || (got == nil) != (tc.want == nil) {
				t.Errorf("affected clusters (-want +got):\n%s (nil: %v)", diff, got == nil)
			}
		})
	}
}

// TestMarkdownLimit: a change too large for a pull-request comment keeps the
// summary and the table, cuts a long section in its middle and leaves whole
// sections out from the middle, saying how many and how many characters, within
// the limit.
func TestMarkdownLimit(t *testing.T) {
	cs := &diff.ChangeSet{Clusters: []*diff.ClusterChange{{Name: "prod", Action: diff.Update}}}
	var nodes []*diff.NodeChange
	for i := range 300 {
		nc := &diff.NodeChange{Node: fmt.Sprintf("node-%d", i), Action: diff.Update, Run: []string{"default"}, Roles: []string{"compute"},
			Graphs: []*diff.GraphChange{{Graph: "default", Added: []string{fmt.Sprintf("task-%d", i)}}}}
		nodes = append(nodes, nc)
		cs.Clusters[0].Groups = append(cs.Clusters[0].Groups, &diff.Group{Nodes: []string{nc.Node}, Roles: nc.Roles, Change: nc})
	}
	cs.Clusters[0].Nodes = nodes
	cs.Summary = diff.Summary{Deploy: 300, TasksAdded: 300}
	res := &diffResult{baseSHA: strings.Repeat("a", 40), headSHA: strings.Repeat("b", 40), changes: cs}
	for i := range 300 {
		old := strings.Repeat(fmt.Sprintf("line %d of file %d\n", i, i), 40)
		res.files = append(res.files, diff.File(fmt.Sprintf("prod/nodes/node-%d/default.yaml", i), []byte(old), []byte(old+"added\n"), 3))
	}
	res.files = append(res.files, diff.File("prod/graphs/default.dot", nil, []byte(strings.Repeat("x -> y;\n", 20000)), 3))
	md := res.markdown(markdownLimit)
	if len(md) > markdownLimit {
		t.Errorf("%d characters, over %d", len(md), markdownLimit)
	}
	if !strings.HasPrefix(md, "### fuelsync diff `aaaaaaaaaaaa` → `bbbbbbbbbbbb`\n\n**Plan: 300 nodes to deploy") {
		t.Errorf("the summary does not come first:\n%.300s", md)
	}
	if !strings.Contains(md, "| `prod` | `node-299 (compute)` | ~ deploy |") {
		t.Error("the table lost its last row")
	}
	if !regexp.MustCompile(`> \*\*\d+ more sections \(\d+ characters\) cut here\*\*`).MatchString(md) {
		t.Error("no note about the sections left out")
	}
	if !strings.Contains(md, "prod/nodes/node-0/default.yaml") || !strings.Contains(md, "prod/graphs/default.dot") {
		t.Error("the first or the last section is missing")
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
}

func TestFlagsFirst(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"fuelsync plugin create acme --release --format hcl", "fuelsync plugin create --release --format hcl acme"},
		{"fuelsync --repo r tags assign backup x --cluster demo --node n1 --commit -m msg", "fuelsync --repo r tags assign --cluster demo --node n1 --commit -m msg backup x"},
		{"fuelsync roles unassign --cluster=demo storage --node n", "fuelsync roles unassign --cluster=demo --node n storage"},
		{"fuelsync tags list --cluster demo", "fuelsync tags list --cluster demo"},
		{"fuelsync --repo r --rev HEAD tags create mongo --release q-1.0 --has-primary", "fuelsync --repo r --rev HEAD tags create --release q-1.0 --has-primary mongo"},
		{"fuelsync explain --cluster c --node n keystone --graph provision", "fuelsync explain --cluster c --node n --graph provision keystone"},
		{"fuelsync capabilities find -r tht -c deployment=docker", "fuelsync capabilities find -r -c deployment=docker tht"},
		{"fuelsync __complete tags assign --cluster", "fuelsync __complete tags assign --cluster"},
		{"fuelsync tags assign x -- --odd", "fuelsync tags assign -- x --odd"},
	} {
		got := strings.Join(flagsFirst(newApp(io.Discard, io.Discard), strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("flagsFirst(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestMarkdownMassChange: the comment on a release change of 100,000 nodes in
// 50 clusters has a row a class of nodes, with counts, and no node's name,
// within the limit.
func TestMarkdownMassChange(t *testing.T) {
	cs := &diff.ChangeSet{}
	for c := range 50 {
		cc := &diff.ClusterChange{Name: fmt.Sprintf("c-%02d", c+1), Action: diff.Update}
		groups := map[string]*diff.Group{}
		for i := range 2000 {
			roles := []string{"compute"}
			if i%4 == 0 {
				roles = []string{"ceph-osd", "controller"}
			}
			nc := &diff.NodeChange{Node: fmt.Sprintf("node-%d", i+1), Action: diff.Update, Run: []string{"default"}, Roles: roles,
				Causes: []*diff.Cause{{Kind: "task_edited", Subject: "hiera", Source: "release/tasks.yaml:812", Changed: []string{"hiera"}}},
				Graphs: []*diff.GraphChange{{Graph: "default", Changed: []*diff.TaskChange{{ID: "hiera", Fields: []string{"parameters"}}}}}}
			cc.Nodes = append(cc.Nodes, nc)
			if g := groups[roles[0]]; g != nil {
				g.Nodes = append(g.Nodes, nc.Node)
				continue
			}
			groups[roles[0]] = &diff.Group{Nodes: []string{nc.Node}, Roles: roles, Change: nc}
			cc.Groups = append(cc.Groups, groups[roles[0]])
		}
		cs.Clusters = append(cs.Clusters, cc)
	}
	cs.Summary = diff.Summarize(cs.Clusters)
	res := &diffResult{baseSHA: strings.Repeat("a", 40), headSHA: strings.Repeat("b", 40), changes: cs}
	md := res.markdown(markdownLimit)
	if len(md) > markdownLimit {
		t.Errorf("%d characters, over %d", len(md), markdownLimit)
	}
	for _, row := range []string{
		"| `50 clusters: c-01, c-02, c-03, …, c-50` | `25,000 nodes of class ceph-osd+controller` | ~ deploy | `task hiera edited (release/tasks.yaml:812)` |\n",
		"| `50 clusters: c-01, c-02, c-03, …, c-50` | `75,000 nodes of class compute` | ~ deploy | `task hiera edited (release/tasks.yaml:812)` |\n",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("no row %q:\n%.2000s", row, md)
		}
	}
	if strings.Contains(md, "node-1999") {
		t.Errorf("the comment names nodes:\n%.2000s", md)
	}
}
