package diff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// quickstart reads examples/quickstart into a MapFS.
func quickstart(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys, err := mapfs.Read("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// edit returns a copy of fsys with old replaced by new in file name (which must
// contain it), or the file added when old is "".
func edit(t *testing.T, fsys fstest.MapFS, name, old, new string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	if old == "" {
		out[name] = &fstest.MapFile{Data: []byte(new)}
		return out
	}
	src := string(fsys[name].Data)
	if !strings.Contains(src, old) {
		t.Fatalf("%s has no %q", name, old)
	}
	out[name] = &fstest.MapFile{Data: []byte(strings.Replace(src, old, new, 1))}
	return out
}

func renderSide(t *testing.T, fsys fs.FS, base map[string]string, state render.AppliedState) *Side {
	t.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags.Errs())
	}
	rs, diags := render.Render(repo, render.Options{Clusters: []string{"demo"}, State: state})
	if diags.HasErrors() {
		t.Fatalf("render: %v", diags.Errs())
	}
	s, err := RenderedSide(rs, "rev", "test", base)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lines describes a change set one node (or group) a line.
func lines(cs *ChangeSet) []string {
	var out []string
	for _, cc := range cs.Clusters {
		if len(cc.PluginsEnabled)+len(cc.PluginsDisabled) > 0 {
			out = append(out, fmt.Sprintf("%s: plugins +%v -%v", cc.Name, cc.PluginsEnabled, cc.PluginsDisabled))
		}
		for _, g := range cc.Groups {
			nc := g.Change
			s := fmt.Sprintf("%s %s %v run=%v", nc.Action.Symbol(), strings.Join(g.Nodes, ","), g.Roles, nc.Run)
			for _, c := range nc.Causes {
				s += fmt.Sprintf(" | %s %s", c.Kind, c.Subject)
				if c.Source != "" {
					s += " @" + c.Source
				}
				for _, id := range c.Added {
					s += " +" + id
				}
				for _, id := range c.Removed {
					s += " -" + id
				}
				for _, id := range c.Changed {
					s += " ~" + id
				}
			}
			for _, gc := range nc.Graphs {
				s += fmt.Sprintf(" || %s: +%d -%d ~%d", gc.Graph, len(gc.Added), len(gc.Removed), len(gc.Changed))
			}
			out = append(out, s)
		}
	}
	s := cs.Summary
	out = append(out, fmt.Sprintf("summary deploy=%d provision=%d delete=%d tasks +%d -%d ~%d",
		s.Deploy, s.Provision, s.Delete, s.TasksAdded, s.TasksRemoved, s.TasksChanged))
	return out
}

func TestChangeSetQuickstart(t *testing.T) {
	base := quickstart(t)
	const spec = "clusters/demo.yaml"
	for _, tc := range []struct {
		name     string
		old, new string // replaced in clusters/demo.yaml
		file     string // another file to edit, when set
		want     []string
	}{
		{name: "no change", want: []string{"summary deploy=0 provision=0 delete=0 tasks +0 -0 ~0"}},
		{
			name: "tag unassigned", old: "tags: {assign: [backup]}", new: "tags: {assign: [backup], unassign: [rabbitmq]}",
			want: []string{
				"~ node-2 [controller] run=[default] | tag_unassigned rabbitmq -rabbitmq | dependencies  ~keystone || default: +0 -1 ~1",
				"summary deploy=1 provision=0 delete=0 tasks +0 -1 ~1",
			}},
		{name: "role added", old: "node-4: {id: 4, roles: [compute]}", new: "node-4: {id: 4, roles: [compute, storage]}", want: []string{
			"~ node-4 [compute storage] run=[default] | role_added storage +storage-setup || default: +1 -0 ~0",
			"summary deploy=1 provision=0 delete=0 tasks +1 -0 ~0",
		}},
		{name: "node added", old: "  node-6:", new: "  node-7: {id: 7, roles: [compute]}\n  node-6:", want: []string{
			"+ node-7 [compute] run=[provision default] | new_node compute || default: +3 -0 ~0 || deletion: +1 -0 ~0 || provision: +1 -0 ~0",
			"summary deploy=1 provision=1 delete=0 tasks +3 -0 ~0",
		}},
		{name: "node removed", old: "  node-6: {id: 6, roles: [monitor]}   # role from the monitoring plugin\n", new: "", want: []string{
			"- node-6 [monitor] run=[deletion] | node_removed monitor || default: +0 -4 ~0 || deletion: +0 -1 ~0 || provision: +0 -1 ~0",
			"summary deploy=0 provision=0 delete=1 tasks +0 -4 ~0",
		}},
		{name: "plugin enabled", old: "plugins: [monitoring]", new: "plugins: [monitoring, sdn]", want: []string{
			"demo: plugins +[sdn] -[]",
			"~ node-1 [controller] run=[default] | plugin_enabled sdn +sdn-agent +sdn-register || default: +2 -0 ~0",
			"~ node-2,node-3,node-4,node-5 [compute controller storage] run=[default] | plugin_enabled sdn +sdn-agent || default: +1 -0 ~0",
			"summary deploy=5 provision=0 delete=0 tasks +6 -0 ~0",
		}},
		{name: "primary moved", old: "node-1: {id: 1,", new: "node-1: {id: 7,", want: []string{
			"~ node-1 [controller] run=[default] | primary_lost controller -post-check | primary_lost database | dependencies  ~keystone || default: +0 -1 ~1",
			"~ node-2 [controller] run=[default] | primary_gained controller +post-check | primary_gained database | dependencies  ~keystone || default: +1 -0 ~1",
			"~ node-3 [controller] run=[default] | dependencies  ~keystone || default: +0 -0 ~1",
			"~ node-4,node-5 [compute storage] run=[default] | dependencies  ~nova-compute || default: +0 -0 ~1",
			"summary deploy=5 provision=0 delete=0 tasks +1 -1 ~5",
		}},
		{name: "task edited", file: "plugins/monitoring/deployment_tasks.yaml", old: "timeout: 600", new: "timeout: 900", want: []string{
			"~ node-6 [monitor] run=[default] | task_edited monitoring-dashboard @plugins/monitoring/deployment_tasks.yaml:26 ~monitoring-dashboard || default: +0 -0 ~1",
			"summary deploy=1 provision=0 delete=0 tasks +0 -0 ~1",
		}},
		{name: "release task edited", file: "plugins/quickstart/graphs/deployment.yaml",
			old: "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 120", new: "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 240", want: []string{
				"~ node-1,node-2,node-3,node-4,node-5,node-6 [compute controller monitor storage] run=[default] | task_edited globals @plugins/quickstart/graphs/deployment.yaml:73 ~globals || default: +0 -0 ~1",
				"summary deploy=6 provision=0 delete=0 tasks +0 -0 ~6",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldSide := renderSide(t, base, nil, nil)
			head := base
			if tc.old != "" {
				file := spec
				if tc.file != "" {
					file = tc.file
				}
				head = edit(t, base, file, tc.old, tc.new)
			}
			newSide := renderSide(t, head, oldSide.Digests, nil)
			cs, err := Compute(oldSide, newSide)
			if err != nil {
				t.Fatal(err)
			}
			got := lines(cs)
			if tc.want == nil {
				t.Errorf("got:\n%s", strings.Join(got, "\n"))
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("change set (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChangeSetText pins the terminal form of a change set with every kind of
// node action, and the colours.
func TestChangeSetText(t *testing.T) {
	base := quickstart(t)
	head := edit(t, base, "clusters/demo.yaml", "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	head = edit(t, head, "clusters/demo.yaml", "  node-6: {id: 6, roles: [monitor]}   # role from the monitoring plugin\n", "  node-7: {id: 7, roles: [compute]}\n")
	head = edit(t, head, "clusters/demo.yaml", "plugins: [monitoring]", "plugins: [monitoring, sdn]")
	oldSide := renderSide(t, base, nil, nil)
	cs, err := Compute(oldSide, renderSide(t, head, oldSide.Digests, nil))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/changeset/text.golden", []byte(cs.Text(Colors{})))
	colored := cs.Text(ANSI)
	for _, want := range []string{"\x1b[32m+ sdn-agent\x1b[0m", "\x1b[31m- rabbitmq\x1b[0m", "\x1b[31m-\x1b[0m node-6"} {
		if !strings.Contains(colored, want) {
			t.Errorf("coloured text has no %q", want)
		}
	}
	empty := &ChangeSet{}
	if got := empty.Text(ANSI); !strings.HasPrefix(got, "No changes:") {
		t.Errorf("empty change set: %q", got)
	}
}

// TestChangeSetWithoutOldRender: an applied set read from files, its revision not
// rendered again (a working tree was applied): the change is the same, and the
// removed task is still put down to the unassigned tag through the selector of
// the head's definition.
func TestChangeSetWithoutOldRender(t *testing.T) {
	base := quickstart(t)
	head := edit(t, base, "clusters/demo.yaml", "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	full := renderSide(t, base, nil, nil)
	files := fstest.MapFS{}
	for name := range full.Digests {
		data, err := full.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = &fstest.MapFile{Data: data}
	}
	oldSide := FSSide(files, full.Digests)
	cs, err := Compute(oldSide, renderSide(t, head, oldSide.Digests, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"~ node-2 [controller] run=[default] | tag_unassigned rabbitmq -rabbitmq | dependencies  ~keystone || default: +0 -1 ~1",
		"summary deploy=1 provision=0 delete=0 tasks +0 -1 ~1",
	}
	if diff := cmp.Diff(want, lines(cs)); diff != "" {
		t.Errorf("change set (-want +got):\n%s", diff)
	}
}

// filesSide is an artifact set held as files, with its digests.
func filesSide(t *testing.T, files map[string][]byte) *Side {
	t.Helper()
	fsys := fstest.MapFS{}
	digests := map[string]string{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data}
		sum := sha256.Sum256(data)
		digests[name] = hex.EncodeToString(sum[:])
	}
	return FSSide(fsys, digests)
}

func renderDemo(t *testing.T, fsys fs.FS) []*render.Rendered {
	t.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags.Errs())
	}
	rs, diags := render.Render(repo, render.Options{Clusters: []string{"demo"}})
	if diags.HasErrors() {
		t.Fatalf("render: %v", diags.Errs())
	}
	return rs
}

// TestChangeSetFromFormat1: a work directory applied by an older fuelsync holds the
// expanded layout (format 1). Planned against a render of the stored layout
// (format 2), the change set is the one two expanded layouts give (the files
// listed aside, which are the new layout's), and nothing when nothing changed.
func TestChangeSetFromFormat1(t *testing.T) {
	base := quickstart(t)
	old := renderDemo(t, base)
	oldFiles, err := render.FilesExpanded(old, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, old, new string }{
		{name: "no change"},
		{name: "tag unassigned", file: "clusters/demo.yaml", old: "tags: {assign: [backup]}", new: "tags: {assign: [backup], unassign: [rabbitmq]}"},
		{name: "node added", file: "clusters/demo.yaml", old: "  node-6:", new: "  node-7: {id: 7, roles: [compute]}\n  node-6:"},
		{name: "primary moved", file: "clusters/demo.yaml", old: "node-1: {id: 1,", new: "node-1: {id: 7,"},
		{name: "task edited", file: "plugins/quickstart/graphs/deployment.yaml",
			old: "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 120", new: "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 240"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := base
			if tc.file != "" {
				head = edit(t, base, tc.file, tc.old, tc.new)
			}
			rs := renderDemo(t, head)
			headFiles, err := render.FilesExpanded(rs, "rev", "test")
			if err != nil {
				t.Fatal(err)
			}
			oldSide := filesSide(t, oldFiles)
			oldSide.Rendered = old
			expandedSide := filesSide(t, headFiles)
			expandedSide.Rendered = rs
			want, err := Compute(oldSide, expandedSide)
			if err != nil {
				t.Fatal(err)
			}
			storedSide, err := RenderedSide(rs, "rev", "test", oldSide.Digests)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Compute(oldSide, storedSide)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ClusterChange{}, "Files")); diff != "" {
				t.Errorf("change set from format 1 to format 2 (-format 1 to 1 +format 1 to 2):\n%s", diff)
			}
			if tc.file == "" && !got.Empty() {
				t.Errorf("nothing changed, but the change set is %v", lines(got))
			}
		})
	}
}

// TestChangeSetCatalogueOnly: a task definition edited in a release changes the
// task catalogue and no node file; the task is changed on every node that runs it.
// A node file the same on both sides is read once, not once a side, and not at
// all where a side is a render (its tasks are the model's, the change the
// catalogues'): the change set is the one decoding every file gives.
func TestChangeSetCatalogueOnly(t *testing.T) {
	base := quickstart(t)
	head := edit(t, base, "plugins/quickstart/graphs/deployment.yaml",
		"globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 120", "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 240")
	oldSide := renderSide(t, base, nil, nil)
	newSide := renderSide(t, head, oldSide.Digests, nil)
	var changed []string
	for name, sum := range newSide.Digests {
		if oldSide.Digests[name] != sum && !strings.HasSuffix(name, ".dot") && name != "manifest.json" {
			changed = append(changed, name)
		}
	}
	if diff := cmp.Diff([]string{"demo/tasks/default.yaml"}, changed); diff != "" {
		t.Fatalf("changed files (-want +got):\n%s", diff)
	}
	files := func(side *Side) map[string][]byte {
		out := map[string][]byte{}
		for name := range side.Digests {
			if strings.HasSuffix(name, ".dot") || name == "manifest.json" {
				continue // not read by a render's side; not compared by nodes
			}
			data, err := side.Read(name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = data
		}
		return out
	}
	oldFiles, newFiles := files(oldSide), files(newSide)
	var mu sync.Mutex
	reads := map[string]int{}
	for _, s := range []*Side{oldSide, newSide} {
		read := s.Read
		s.Read = func(name string) ([]byte, error) {
			mu.Lock()
			reads[name]++
			mu.Unlock()
			return read(name)
		}
	}
	cs, err := Compute(oldSide, newSide)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range reads {
		if strings.Contains(name, "/nodes/") {
			t.Errorf("%s, the same on both sides, read %d times", name, n)
		}
	}
	reads = map[string]int{}
	fromFiles := filesSide(t, oldFiles)
	read := fromFiles.Read
	fromFiles.Read = func(name string) ([]byte, error) {
		reads[name]++
		return read(name)
	}
	fromFiles.Rendered = oldSide.Rendered // the same causes: the files decoded, the renders for the sources
	toFiles := filesSide(t, newFiles)
	toFiles.Rendered = newSide.Rendered
	want, err := Compute(fromFiles, toFiles)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(lines(want), lines(cs)); d != "" {
		t.Errorf("the change set from the renders differs from the files' (-files +renders):\n%s", d)
	}
	for name, n := range reads {
		if strings.Contains(name, "/nodes/") && n != 1 {
			t.Errorf("%s, the same on both sides, read %d times", name, n)
		}
	}
	nodes := 0
	for _, nc := range cs.Clusters[0].Nodes {
		for _, gc := range nc.Graphs {
			if len(gc.Changed) == 1 && gc.Changed[0].ID == "globals" && slices.Equal(gc.Changed[0].Fields, []string{"parameters"}) {
				nodes++
			}
		}
	}
	if nodes != 6 {
		t.Errorf("globals' parameters changed on %d nodes, want 6:\n%s", nodes, strings.Join(lines(cs), "\n"))
	}
}

// TestRenderedClusterSidesAsEncoded: the sides RenderedClusterSides makes,
// which encode neither side's node files and DOT files the renders have byte
// for byte, give the change set, the files that differ and their bytes that
// the sides of every file encoded give (RenderedClusterSide of each), for a
// release change (where they take every node file and DOT file as the same),
// a node's roles, its tags, a removed node, and a dependency added.
func TestRenderedClusterSidesAsEncoded(t *testing.T) {
	base := quickstart(t)
	const cluster, graphs = "clusters/demo.yaml", "plugins/quickstart/graphs/deployment.yaml"
	cases := map[string]struct {
		head fstest.MapFS
		same bool // every node file and DOT file is the same
	}{
		"a release's timeout": {edit(t, base, graphs, "puppet_modules: /etc/puppet/modules\n    timeout: 120", "puppet_modules: /etc/puppet/modules\n    timeout: 240"), true},
		"a node's roles":      {edit(t, base, cluster, "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}"), false},
		"a node's tags":       {edit(t, base, cluster, "tags: {assign: [backup]}", "tags: {assign: []}"), false},
		"a node removed":      {edit(t, base, cluster, "  node-6: {id: 6, roles: [monitor]}   # role from the monitoring plugin\n", ""), false},
		"nothing":             {base, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, h := renderDemo(t, base)[0], renderDemo(t, tc.head)[0]
			oldSide, err := RenderedClusterSide(b, map[string]string{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			newSide, err := RenderedClusterSide(h, oldSide.Digests, nil)
			if err != nil {
				t.Fatal(err)
			}
			bs, hs, err := RenderedClusterSides(b, h)
			if err != nil {
				t.Fatal(err)
			}
			same := 0
			for name, sum := range hs.Digests {
				if sum == SameDigest {
					same++
					if bs.Digests[name] != SameDigest || oldSide.Digests[name] != newSide.Digests[name] {
						t.Errorf("%s: under SameDigest, its bytes differ", name)
					}
				}
			}
			if all := len(b.Graphs) * (len(b.Graphs[0].Nodes) + 1); tc.same && same < all {
				t.Errorf("%d files under SameDigest, want the %d node and DOT files", same, all)
			}
			want, err := Compute(oldSide, newSide)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Compute(bs, hs)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(lines(want), lines(got)); d != "" {
				t.Errorf("change set (-every file encoded +RenderedClusterSides):\n%s", d)
			}
			if len(want.Clusters) != len(got.Clusters) {
				return
			}
			for i, cc := range want.Clusters {
				if d := cmp.Diff(cc.Files, got.Clusters[i].Files); d != "" {
					t.Fatalf("files that differ (-every file encoded +RenderedClusterSides):\n%s", d)
				}
				for _, f := range cc.Files {
					for _, s := range [][2]*Side{{oldSide, bs}, {newSide, hs}} {
						w, _, err1 := s[0].Kept(f)
						g, _, err2 := s[1].Kept(f)
						if err1 != nil || err2 != nil || !bytes.Equal(w, g) {
							t.Errorf("%s: other bytes (%v, %v)", f, err1, err2)
						}
					}
				}
			}
		})
	}
}
