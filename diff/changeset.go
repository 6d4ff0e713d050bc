package diff

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/render"
)

// Side is one of the two artifact sets compared: the applied set of a work
// directory, or a render of a revision.
type Side struct {
	// Digests has the sha256 of every file of the set (path → hex), or
	// SameDigest for a file both sides of RenderedClusterSides have byte for
	// byte, not encoded (a digest is only compared with the other side's). A
	// cluster whose files are in neither side is not compared.
	Digests map[string]string
	// Read returns a file's bytes; it is asked for files whose digests differ (and
	// for the node files of a graph whose task catalogue differs, with the
	// catalogues), and may be called from several goroutines at once.
	Read func(name string) ([]byte, error)
	// Rendered, when known, says where tasks come from (the definitions, the tags
	// that selected them), for the causes of changes. Without it the change set
	// has what the artifacts alone tell.
	Rendered []*render.Rendered
	// Later, when not nil, gives the render of a cluster Rendered does not
	// hold, asked (once) only when a cause needs it: a task or a tag a node
	// lost, a task it gained. A change that only edits tasks (a release's
	// task changed on every node) never asks.
	Later func(cluster string) *render.Rendered
	// encoded says the files are Rendered's own encoding (RenderedSide): the task
	// ids of a node can be taken from the model instead of decoding its file.
	encoded bool
	// Unreadable says the side's files cannot be read, only its digests are
	// known (an applied set lost with its revision): a cluster whose files
	// differ is compared by the other side and the digests alone, each node
	// whose files differ planned as changed (CauseUnverified).
	Unreadable bool
}

// CauseUnverified is the kind of a node's cause when the old side's files
// could not be read: its files differ, what differs is not known.
const CauseUnverified = "unverified"

// Action is what applying a change does to a node or a cluster.
type Action string

const (
	Create Action = "create" // a new node: its provision graph, then its default graph
	Update Action = "update" // a changed node: its default graph
	Delete Action = "delete" // a node gone: its deletion graph
)

// Symbol is the action's glyph in plan output.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Delete:
		return "-"
	}
	return "~"
}

// ChangeSet is what changes between two artifact sets, cluster by cluster.
type ChangeSet struct {
	Clusters []*ClusterChange `json:"clusters"`
	Summary  Summary          `json:"summary"`
}

// Summary counts the changes: nodes by action, and the task entries of the
// deployment (default) graphs (a new node's tasks are added, a deleted node's
// removed); the other graphs' changes are in the nodes' details.
type Summary struct {
	Deploy       int `json:"deploy"`    // nodes whose default graph runs (new and changed)
	Provision    int `json:"provision"` // new nodes
	Delete       int `json:"delete"`    // removed nodes
	TasksAdded   int `json:"tasks_added"`
	TasksRemoved int `json:"tasks_removed"`
	TasksChanged int `json:"tasks_changed"`
}

// Empty reports whether nothing changes.
func (cs *ChangeSet) Empty() bool { return len(cs.Clusters) == 0 }

// ClusterChange is one cluster's changes.
type ClusterChange struct {
	Name   string `json:"name"`
	Action Action `json:"action"`
	// PluginsEnabled and PluginsDisabled compare the clusters' plugin lists.
	PluginsEnabled  []string `json:"plugins_enabled,omitempty"`
	PluginsDisabled []string `json:"plugins_disabled,omitempty"`
	// Registry lists the changed entries of the resolved Heat registry
	// (registry.yaml): "K: old -> new", "K: + new", "K: - old".
	Registry []string `json:"registry,omitempty"`
	// Nodes are the changed nodes by name; Groups the same nodes, those with
	// identical changes together.
	Nodes  []*NodeChange `json:"nodes"`
	Groups []*Group      `json:"groups"`
	// Files are the artifact files that differ, sorted.
	Files []string `json:"files"`
}

// NodeChange is one node's change.
type NodeChange struct {
	Node   string `json:"node"`
	Action Action `json:"action"`
	// Run are the graphs applying it runs, in order.
	Run []string `json:"run"`
	// Pseudo marks master and sync: their tasks change with the
	// cluster's, and they are not counted as nodes.
	Pseudo bool `json:"pseudo,omitempty"`
	// Roles are the node's roles (the old ones for a deleted node).
	Roles        []string `json:"roles"`
	RolesAdded   []string `json:"roles_added,omitempty"`
	RolesRemoved []string `json:"roles_removed,omitempty"`
	// TagsAdded and TagsRemoved compare the tags task selectors match (primary
	// tags as primary-<tag>).
	TagsAdded   []string `json:"tags_added,omitempty"`
	TagsRemoved []string `json:"tags_removed,omitempty"`
	// Causes say why the tasks changed.
	Causes []*Cause       `json:"causes,omitempty"`
	Graphs []*GraphChange `json:"graphs"`
}

// Cause is one reason for a node's change, with the tasks it brought or took away.
type Cause struct {
	// Kind is new_node, node_removed, role_added, role_removed, tag_assigned,
	// tag_unassigned, primary_gained, primary_lost, plugin_enabled,
	// plugin_disabled, task_edited, task_defined, task_undefined or dependencies.
	Kind string `json:"kind"`
	// Subject is the role, tag, plugin or task the cause is about.
	Subject string `json:"subject,omitempty"`
	// Source is the file:line of the task definition (task_* kinds).
	Source string `json:"source,omitempty"`
	// Added, Removed and Changed are the task ids (graph/id outside the default
	// graph) it accounts for.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// GraphChange is one graph's task changes on a node.
type GraphChange struct {
	Graph   string        `json:"graph"`
	Added   []string      `json:"added,omitempty"`
	Removed []string      `json:"removed,omitempty"`
	Changed []*TaskChange `json:"changed,omitempty"`
}

// TaskChange is a task present on both sides that differs.
type TaskChange struct {
	ID string `json:"id"`
	// Fields are the keys that differ: type, parameters, condition,
	// dynamic_requires, requires.
	Fields          []string `json:"fields"`
	TypeFrom        string   `json:"type_from,omitempty"`
	TypeTo          string   `json:"type_to,omitempty"`
	RequiresAdded   []string `json:"requires_added,omitempty"`   // task@node
	RequiresRemoved []string `json:"requires_removed,omitempty"` // task@node
}

// Group is a set of nodes of one cluster with the same change.
type Group struct {
	Nodes []string `json:"nodes"`
	// Roles are the nodes' roles together, sorted.
	Roles []string `json:"roles"`
	// Change is the first node's change, standing for all of them.
	Change *NodeChange `json:"change"`
}

// SameDigest stands for the digest of a file known to be the same on both
// sides without encoding it (RenderedClusterSides); it is no hex sha256.
const SameDigest = "same"

// Compute compares the artifact sets old and new. Only files whose digests differ
// are read and decoded, and the node files of a graph whose task catalogue differs.
func Compute(old, new *Side) (*ChangeSet, error) {
	files := map[string][]string{} // cluster → changed files
	for name, sum := range new.Digests {
		if old.Digests[name] != sum {
			if _, c, _, _ := artifactPath(name); c != "" {
				files[c] = append(files[c], name)
			} else if c, _, ok := strings.Cut(name, "/"); ok {
				files[c] = append(files[c], name)
			}
		}
	}
	for name := range old.Digests {
		if _, ok := new.Digests[name]; !ok {
			if c, _, ok := strings.Cut(name, "/"); ok {
				files[c] = append(files[c], name)
			}
		}
	}
	cs := &ChangeSet{}
	for _, c := range sortedKeys(files) {
		compute := computeCluster
		if old.Unreadable {
			compute = computeUnverified
		}
		cc, err := compute(c, files[c], old, new)
		if err != nil {
			return nil, err
		}
		if cc != nil {
			cs.Clusters = append(cs.Clusters, cc)
		}
	}
	cs.Summary = Summarize(cs.Clusters)
	return cs, nil
}

// computeUnverified is computeCluster when the old side's files cannot be
// read: its nodes are known by their files' paths, the new side's by its
// cluster.yaml; a node on one side only is created or deleted, a node whose
// files differ is updated, with the cause CauseUnverified.
func computeUnverified(cluster string, changed []string, old, new *Side) (*ClusterChange, error) {
	nv, err := viewOf(new, cluster)
	if err != nil {
		return nil, err
	}
	slices.Sort(changed)
	nodeFiles := func(s *Side) map[string][]string {
		out := map[string][]string{}
		for name := range s.Digests {
			if kind, c, node, _ := artifactPath(name); kind == "node" && c == cluster {
				out[node] = append(out[node], name)
			}
		}
		return out
	}
	oldNodes, newNodes := nodeFiles(old), nodeFiles(new)
	cc := &ClusterChange{Name: cluster, Action: Update, Files: changed}
	switch {
	case len(oldNodes) == 0 && old.Digests[cluster+"/cluster.yaml"] == "":
		cc.Action = Create
	case !nv.present:
		cc.Action = Delete
	}
	all := map[string]bool{}
	for n := range oldNodes {
		all[n] = true
	}
	for n := range newNodes {
		all[n] = true
	}
	for _, n := range sortedKeys(all) {
		pseudo := n == "master" || n == "sync"
		nc := &NodeChange{Node: n, Action: Update, Run: []string{"default"}, Pseudo: pseudo}
		if nn := nv.node(n); nn != nil {
			nc.Roles = nn.Roles
		}
		_, inOld := oldNodes[n]
		_, inNew := newNodes[n]
		switch {
		case !inOld && !pseudo:
			nc.Action, nc.Run = Create, []string{"provision", "default"}
		case !inNew && !pseudo:
			nc.Action, nc.Run = Delete, []string{"deletion"}
		default:
			same := len(oldNodes[n]) == len(newNodes[n])
			for _, name := range newNodes[n] {
				same = same && old.Digests[name] == new.Digests[name]
			}
			if same {
				continue
			}
		}
		if pseudo && cc.Action != Update {
			continue
		}
		nc.Causes = []*Cause{{Kind: CauseUnverified, Subject: "the applied files cannot be read: planned as changed"}}
		cc.Nodes = append(cc.Nodes, nc)
	}
	cc.Groups = group(cc.Nodes)
	return cc, nil
}

// Summarize counts the changes of clusters (ChangeSet.Summary).
func Summarize(clusters []*ClusterChange) Summary {
	var s Summary
	for _, cc := range clusters {
		for _, nc := range cc.Nodes {
			switch {
			case nc.Pseudo:
			case nc.Action == Create:
				s.Provision++
				s.Deploy++
			case nc.Action == Update:
				s.Deploy++
			case nc.Action == Delete:
				s.Delete++
			}
			for _, g := range nc.Graphs {
				if g.Graph != "default" {
					continue
				}
				s.TasksAdded += len(g.Added)
				s.TasksRemoved += len(g.Removed)
				s.TasksChanged += len(g.Changed)
			}
		}
	}
	return s
}

// sideView is one side of one cluster, decoded.
type sideView struct {
	side    *Side
	doc     *clusterDoc // nil when the cluster is absent
	render  *render.Rendered
	cluster string
	asked   bool // Side.Later was asked for render
	present bool
	byNode  map[string][]string // node → graph types, built by graphs
	// catalogues are the task catalogues of format 2 read so far, by graph type.
	catalogues map[string]*catalogueDoc
	// entries are the task catalogues split into their entries' bytes so far
	// (nil for one in another shape), by graph type (samefile.go).
	entries map[string]map[string][]byte
	// idLists are the sorted task id lists oneSided made, by hash: the nodes
	// of a class have the same tasks, and share one list.
	idLists map[uint64][][]string
}

// intern returns the list of v equal to ids (sorted), ids itself the first
// time: a first apply's change set holds a list of task ids a class of nodes,
// not a node, so that it does not grow with every node's tasks.
func (v *sideView) intern(ids []string) []string {
	var h maphash.Hash
	h.SetSeed(idSeed)
	for _, id := range ids {
		h.WriteString(id)
		h.WriteByte(0)
	}
	sum := h.Sum64()
	for _, l := range v.idLists[sum] {
		if slices.Equal(l, ids) {
			return l
		}
	}
	if v.idLists == nil {
		v.idLists = map[uint64][][]string{}
	}
	v.idLists[sum] = append(v.idLists[sum], ids)
	return ids
}

// idSeed seeds the hashes of intern.
var idSeed = maphash.MakeSeed()

func viewOf(s *Side, cluster string) (*sideView, error) {
	v := &sideView{side: s, cluster: cluster}
	name := cluster + "/cluster.yaml"
	if _, ok := s.Digests[name]; ok {
		v.present = true
		data, err := s.Read(name)
		if err != nil {
			return nil, err
		}
		if v.doc, err = decodeCluster(name, data); err != nil {
			return nil, err
		}
	}
	for _, r := range s.Rendered {
		if r.Model.Cluster.Name == cluster {
			v.render = r
		}
	}
	return v, nil
}

// rendered returns the side's render of the cluster, from Side.Later the
// first time when Side.Rendered has none; nil when it is not known.
func (v *sideView) rendered() *render.Rendered {
	if v.render == nil && !v.asked && v.side.Later != nil {
		v.asked = true
		v.render = v.side.Later(v.cluster)
	}
	return v.render
}

func (v *sideView) node(name string) *clusterNode {
	if v.doc == nil {
		return nil
	}
	return v.doc.Nodes[name]
}

// graphs lists the graph types of a node on this side.
func (v *sideView) graphs(cluster, node string) []string {
	if v.byNode == nil { // index the side's files once, not once per node
		v.byNode = map[string][]string{}
		prefix := render.NodesDir(cluster) + "/"
		for name := range v.side.Digests {
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			if a, err := render.ParseAddress(name); err == nil {
				v.byNode[a.Node] = append(v.byNode[a.Node], a.Graph)
			}
		}
		for _, gs := range v.byNode {
			slices.Sort(gs)
		}
	}
	return v.byNode[node]
}

func (v *sideView) tasks(name string) ([]*taskDoc, error) {
	if _, ok := v.side.Digests[name]; !ok {
		return nil, nil
	}
	if doc, ok := v.modelTasks(name); ok {
		_, cluster, _, graph := artifactPath(name)
		return joinCatalogue(name, doc, func() (*catalogueDoc, error) { return v.catalogue(cluster, graph) })
	}
	data, err := v.side.Read(name)
	if err != nil {
		return nil, err
	}
	return v.tasksOf(name, data)
}

// tasksOf decodes data, the node file name of this side (format 2 with this
// side's task catalogue).
func (v *sideView) tasksOf(name string, data []byte) ([]*taskDoc, error) {
	if isFormat2(data) {
		_, cluster, _, graph := artifactPath(name)
		return decodeNodeV2(name, data, func() (*catalogueDoc, error) { return v.catalogue(cluster, graph) })
	}
	doc, err := decodeNode(name, data)
	if err != nil {
		return nil, err
	}
	out := make([]*taskDoc, len(doc.Tasks))
	for i, t := range doc.Tasks {
		out[i] = &taskDoc{ID: t.ID, Requires: t.Requires, def: &t.taskDef}
	}
	return out, nil
}

// oneSided is the change of a graph file on one side only (a node or cluster
// created or deleted): all its tasks added or all removed. Only their ids matter,
// and a side that is a render gives them from its model, decoding nothing (a first
// apply decodes no node file, and allocates a string header a task). ok is false
// when the file is on both sides or its side is not a render.
func oneSided(ov, nv *sideView, graph, name string) (gc *GraphChange, ok bool) {
	_, inOld := ov.side.Digests[name]
	_, inNew := nv.side.Digests[name]
	var ids []string
	v := nv
	switch {
	case !inOld && inNew:
		ids, ok = nv.modelIDs(name)
	case inOld && !inNew:
		ids, ok = ov.modelIDs(name)
		v = ov
	}
	if !ok || len(ids) == 0 {
		return nil, ok
	}
	slices.Sort(ids)
	ids = v.intern(ids)
	gc = &GraphChange{Graph: graph}
	if inNew {
		gc.Added = ids
	} else {
		gc.Removed = ids
	}
	return gc, true
}

// modelIDs returns the task ids of a node file of this side, from the render
// the side's files were encoded from; ok is false when the side is not such a
// render or has no such node.
func (v *sideView) modelIDs(name string) ([]string, bool) {
	if !v.side.encoded || v.render == nil {
		return nil, false
	}
	if _, ok := v.side.Digests[name]; !ok {
		return nil, false
	}
	kind, _, node, graph := artifactPath(name)
	if kind != "node" {
		return nil, false
	}
	g := v.render.Graph(graph)
	if g == nil {
		return nil, false
	}
	ng := g.Node(node)
	if ng == nil {
		return nil, false
	}
	out := make([]string, len(ng.Tasks))
	for i, pt := range ng.Tasks {
		out[i] = pt.ID()
	}
	return out, true
}

// modelTasks returns the tasks of a node file of this side, not yet joined with
// the catalogue, from the render the side's files were encoded from
// (render.NodeFileTasks): what reading its bytes gives, without encoding,
// keeping or scanning them. ok is false when the side is not such a render.
func (v *sideView) modelTasks(name string) ([]*taskDoc, bool) {
	if !v.side.encoded || v.render == nil {
		return nil, false
	}
	kind, _, node, graph := artifactPath(name)
	if kind != "node" {
		return nil, false
	}
	tasks, ok := v.render.NodeFileTasks(graph, node)
	if !ok {
		return nil, false
	}
	out := make([]*taskDoc, len(tasks))
	docs := make([]taskDoc, len(tasks))
	for i, t := range tasks {
		docs[i].ID, docs[i].Requires = t.ID, t.Requires
		out[i] = &docs[i]
	}
	return out, true
}

// readCatalogue reads the task catalogue of a graph of this side, which a
// node file of format 2 refers to.
func (v *sideView) readCatalogue(cluster, graph string) (name string, data []byte, err error) {
	name = render.CataloguePath(cluster, graph)
	if _, ok := v.side.Digests[name]; !ok {
		return name, nil, fmt.Errorf("%s: a node file of format 2 refers to it, and the artifacts have none", name)
	}
	data, err = v.side.Read(name)
	return name, data, err
}

// catalogue returns the task catalogue of a graph of this side, read once.
func (v *sideView) catalogue(cluster, graph string) (*catalogueDoc, error) {
	if c := v.catalogues[graph]; c != nil {
		return c, nil
	}
	name, data, err := v.readCatalogue(cluster, graph)
	if err != nil {
		return nil, err
	}
	c, err := decodeCatalogue(name, data)
	if err != nil {
		return nil, err
	}
	if v.catalogues == nil {
		v.catalogues = map[string]*catalogueDoc{}
	}
	v.catalogues[graph] = c
	return c, nil
}

// bothTasks decodes a graph file of both sides, at once: the largest (the stages
// of sync, which require every task of every node) take seconds each.
func bothTasks(ov, nv *sideView, name string) (ot, nt []*taskDoc, err error) {
	oldTasks, newTasks := ov.tasks, nv.tasks
	if sum, ok := ov.side.Digests[name]; ok && sum == nv.side.Digests[name] {
		// The same bytes on both sides (their task catalogue changed): read
		// once, from the side that need not encode them again (the applied
		// files rather than a render).
		src := ov
		if ov.side.encoded && !nv.side.encoded {
			src = nv
		}
		data, err := src.side.Read(name)
		if err != nil {
			return nil, nil, err
		}
		if !isFormat2(data) {
			ot, err = ov.tasksOf(name, data)
			if err == nil {
				nt, err = nv.tasksOf(name, data)
			}
			return ot, nt, err
		}
		// Scanned once, joined with each side's catalogue.
		doc, err := readNodeV2(name, data)
		if err != nil {
			return nil, nil, err
		}
		again := make([]*taskDoc, len(doc))
		for i, td := range doc {
			c := *td
			again[i] = &c
		}
		_, cluster, _, graph := artifactPath(name)
		if ot, err = joinCatalogue(name, doc, func() (*catalogueDoc, error) { return ov.catalogue(cluster, graph) }); err != nil {
			return nil, nil, err
		}
		nt, err = joinCatalogue(name, again, func() (*catalogueDoc, error) { return nv.catalogue(cluster, graph) })
		return ot, nt, err
	}
	var oerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ot, oerr = oldTasks(name)
	}()
	nt, err = newTasks(name)
	<-done
	if oerr != nil {
		return nil, nil, oerr
	}
	return ot, nt, err
}

// computeCluster is the change of one cluster, whose files changed are those that
// differ: the cluster's action and plugins, the change of every node that changed
// (nodeChange) with its causes, and the registry's entries.
func computeCluster(cluster string, changed []string, old, new *Side) (*ClusterChange, error) {
	ov, err := viewOf(old, cluster)
	if err != nil {
		return nil, err
	}
	nv, err := viewOf(new, cluster)
	if err != nil {
		return nil, err
	}
	slices.Sort(changed)
	cc := newClusterChange(cluster, changed, ov, nv)
	cd := &clusterDiff{cluster: cluster, old: old, new: new, ov: ov, nv: nv, defs: defFields{}, known: catalogueChanges{}}
	nodes, changedNode := cd.nodesToCompare(changed)
	for _, n := range nodes {
		nc, err := cd.nodeChange(n, changedNode[n], cc.Action)
		if err != nil {
			return nil, err
		}
		if nc != nil {
			explain(nc, cc, ov, nv)
			cc.Nodes = append(cc.Nodes, nc)
		}
	}
	if slices.Contains(changed, cluster+"/registry.yaml") {
		if cc.Registry, err = registryChanges(old, new, cluster+"/registry.yaml"); err != nil {
			return nil, err
		}
	}
	if len(cc.Nodes) == 0 && len(cc.PluginsEnabled)+len(cc.PluginsDisabled) == 0 && cc.Action == Update && !onlyNonGraph(changed) {
		return nil, nil
	}
	cc.Groups = group(cc.Nodes)
	return cc, nil
}

// newClusterChange is a cluster's change before its nodes: created, deleted or
// updated, and for an update the plugins enabled and disabled.
func newClusterChange(cluster string, changed []string, ov, nv *sideView) *ClusterChange {
	cc := &ClusterChange{Name: cluster, Action: Update, Files: changed}
	switch {
	case !ov.present:
		cc.Action = Create
	case !nv.present:
		cc.Action = Delete
	}
	var oldPlugins, newPlugins []string
	if ov.doc != nil {
		oldPlugins = ov.doc.Plugins
	}
	if nv.doc != nil {
		newPlugins = nv.doc.Plugins
	}
	if cc.Action == Update {
		cc.PluginsEnabled, cc.PluginsDisabled = minus(newPlugins, oldPlugins), minus(oldPlugins, newPlugins)
	}
	return cc
}

// clusterDiff is the work of computeCluster: the two sides of the cluster, the
// graphs whose task catalogue changed, and what is known of the definitions'
// changes across the cluster's nodes.
type clusterDiff struct {
	cluster          string
	old, new         *Side
	ov, nv           *sideView
	changedCatalogue map[string]bool // graph types
	defs             defFields       // per pair of catalogue entries, across the cluster's nodes
	known            catalogueChanges
}

// nodesToCompare returns the nodes to compare, sorted: those of either
// cluster.yaml and those with a changed graph file; changedNode says which have
// one. A changed task catalogue can change the tasks of every node of its graph (a
// definition is written once, there): those nodes' files are changed too, even
// where their own bytes are not.
func (cd *clusterDiff) nodesToCompare(changed []string) (nodes []string, changedNode map[string]bool) {
	all := map[string]bool{}
	for _, v := range []*sideView{cd.ov, cd.nv} {
		if v.doc != nil {
			for n := range v.doc.Nodes {
				all[n] = true
			}
		}
	}
	changedNode, cd.changedCatalogue = map[string]bool{}, map[string]bool{}
	for _, name := range changed {
		switch kind, _, node, graph := artifactPath(name); kind {
		case "node":
			all[node], changedNode[node] = true, true
		case "tasks":
			cd.changedCatalogue[graph] = true
		}
	}
	if len(cd.changedCatalogue) > 0 {
		for _, v := range []*sideView{cd.ov, cd.nv} {
			v.graphs(cd.cluster, "")
			for n, gs := range v.byNode {
				for _, g := range gs {
					if cd.changedCatalogue[g] {
						all[n], changedNode[n] = true, true
					}
				}
			}
		}
	}
	return sortedKeys(all), changedNode
}

// nodeChange is the change of node n (nil when it has none): created, deleted or
// updated, its roles and tags, and the change of each of its graphs. changed says
// whether one of its graph files changed; action is the cluster's.
func (cd *clusterDiff) nodeChange(n string, changed bool, action Action) (*NodeChange, error) {
	on, nn := cd.ov.node(n), cd.nv.node(n)
	pseudo := n == "master" || n == "sync"
	if pseudo && action != Update {
		return nil, nil // a new or deleted cluster's stages come and go with it
	}
	if !changed && on != nil && nn != nil && slices.Equal(on.Roles, nn.Roles) && slices.Equal(on.Tags, nn.Tags) {
		return nil, nil
	}
	nc := &NodeChange{Node: n, Action: Update, Run: []string{"default"}, Pseudo: pseudo}
	switch {
	case pseudo:
	case on == nil && nn != nil:
		nc.Action, nc.Run = Create, []string{"provision", "default"}
	case on != nil && nn == nil:
		nc.Action, nc.Run = Delete, []string{"deletion"}
	}
	if on != nil {
		nc.Roles = on.Roles
	}
	if nn != nil {
		nc.Roles = nn.Roles
	}
	if on != nil && nn != nil {
		nc.RolesAdded, nc.RolesRemoved = minus(nn.Roles, on.Roles), minus(on.Roles, nn.Roles)
		nc.TagsAdded, nc.TagsRemoved = minus(nn.Tags, on.Tags), minus(on.Tags, nn.Tags)
	}
	for _, g := range union(cd.ov.graphs(cd.cluster, n), cd.nv.graphs(cd.cluster, n)) {
		gc, err := cd.graphChange(n, g, pseudo)
		if err != nil {
			return nil, err
		}
		if gc != nil {
			nc.Graphs = append(nc.Graphs, gc)
		}
	}
	if len(nc.Graphs) == 0 && len(nc.RolesAdded)+len(nc.RolesRemoved)+len(nc.TagsAdded)+len(nc.TagsRemoved) == 0 && nc.Action == Update {
		return nil, nil
	}
	return nc, nil
}

// graphChange is the change of node n's graph g (nil when it has none): from one
// side's model when the file is on one side only (oneSided), from the catalogues
// when only they changed (sameFileChange), else from both files' tasks. The sync
// and master stages' changes of edges only are left out (dropEdgeOnly).
func (cd *clusterDiff) graphChange(n, g string, pseudo bool) (*GraphChange, error) {
	name := render.NodeAddress(cd.cluster, n, g).String()
	sameFile := cd.old.Digests[name] == cd.new.Digests[name]
	if sameFile && !cd.changedCatalogue[g] {
		return nil, nil
	}
	gc, ok := oneSided(cd.ov, cd.nv, g, name)
	if !ok && sameFile {
		var err error
		if gc, ok, err = sameFileChange(cd.ov, cd.nv, cd.cluster, g, name, cd.defs, cd.known); err != nil {
			return nil, err
		}
	}
	if !ok {
		ot, nt, err := bothTasks(cd.ov, cd.nv, name)
		if err != nil {
			return nil, err
		}
		gc = compareTasks(g, ot, nt, cd.defs)
	}
	if gc != nil && pseudo {
		gc = dropEdgeOnly(gc)
	}
	return gc, nil
}

// registryChanges compares the resource_registry of registry.yaml name on the
// two sides (render.RegistryChanges).
func registryChanges(old, new *Side, name string) ([]string, error) {
	oldReg, err := registryEntries(old, name)
	if err != nil {
		return nil, err
	}
	newReg, err := registryEntries(new, name)
	if err != nil {
		return nil, err
	}
	return render.RegistryChanges(oldReg, newReg), nil
}

// registryEntries reads the resource_registry of a side's registry.yaml (empty
// when the side has none).
func registryEntries(s *Side, name string) (map[string]string, error) {
	if _, ok := s.Digests[name]; !ok {
		return nil, nil
	}
	data, err := s.Read(name)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Registry map[string]string `yaml:"resource_registry"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc.Registry, nil
}

// onlyNonGraph reports whether changed has files the node comparison does not
// cover (cluster.yaml details, DOT files), which still make the cluster changed.
// Node files and task catalogues are covered.
func onlyNonGraph(changed []string) bool {
	for _, name := range changed {
		if kind, _, _, _ := artifactPath(name); kind != "node" && kind != "tasks" {
			return true
		}
	}
	return false
}

// dropEdgeOnly leaves out the changes of a pseudo node's tasks (stages on sync,
// master's tasks) that are only new or lost edges: they follow from the changes of
// the cluster's nodes, listed there. nil when nothing is left.
func dropEdgeOnly(gc *GraphChange) *GraphChange {
	gc.Changed = slices.DeleteFunc(gc.Changed, func(tc *TaskChange) bool {
		return len(tc.Fields) == 1 && tc.Fields[0] == "requires"
	})
	if len(gc.Added)+len(gc.Removed)+len(gc.Changed) == 0 {
		return nil
	}
	return gc
}

// compareTasks compares a graph's tasks on one node.
// defFields remembers which definition fields differ between two catalogue
// entries: every node of a graph that runs a task shares its entry, so a cluster's
// comparison compares each pair of entries once, not once per node.
type defFields map[[2]*taskDef][]string

func compareTasks(graph string, old, new []*taskDoc, defs defFields) *GraphChange {
	gc := &GraphChange{Graph: graph}
	byID := map[string]*taskDoc{}
	for _, t := range old {
		byID[t.ID] = t
	}
	seen := map[string]bool{}
	for _, t := range new {
		seen[t.ID] = true
		o := byID[t.ID]
		if o == nil {
			gc.Added = append(gc.Added, t.ID)
			continue
		}
		if tc := compareTask(o, t, defs); tc != nil {
			gc.Changed = append(gc.Changed, tc)
		}
	}
	for _, t := range old {
		if !seen[t.ID] {
			gc.Removed = append(gc.Removed, t.ID)
		}
	}
	if len(gc.Added)+len(gc.Removed)+len(gc.Changed) == 0 {
		return nil
	}
	slices.Sort(gc.Added)
	slices.Sort(gc.Removed)
	slices.SortFunc(gc.Changed, func(a, b *TaskChange) int { return cmp.Compare(a.ID, b.ID) })
	return gc
}

func compareTask(o, n *taskDoc, defs defFields) *TaskChange {
	tc := &TaskChange{ID: n.ID}
	od, nd := o.definition(), n.definition()
	if od.Type != nd.Type {
		tc.Fields = append(tc.Fields, "type")
		tc.TypeFrom, tc.TypeTo = od.Type, nd.Type
	}
	key := [2]*taskDef{od, nd}
	fields, known := defs[key]
	if !known {
		fields = nil
		if !sameNode(&od.Parameters, &nd.Parameters) {
			fields = append(fields, "parameters")
		}
		if !sameNode(&od.Condition, &nd.Condition) {
			fields = append(fields, "condition")
		}
		if !sameNode(&od.DynamicRequires, &nd.DynamicRequires) {
			fields = append(fields, "dynamic_requires")
		}
		if o.shared && n.shared && defs != nil {
			defs[key] = fields
		}
	}
	tc.Fields = append(tc.Fields, fields...)
	if slices.Equal(o.Requires, n.Requires) {
		if len(tc.Fields) == 0 {
			return nil
		}
		return tc
	}
	edges := func(t *taskDoc) []string {
		var out []string
		for _, r := range t.Requires {
			out = append(out, r.Task+"@"+r.Node)
		}
		return out
	}
	oe, ne := edges(o), edges(n)
	tc.RequiresAdded, tc.RequiresRemoved = minus(ne, oe), minus(oe, ne)
	if len(tc.RequiresAdded)+len(tc.RequiresRemoved) > 0 {
		tc.Fields = append(tc.Fields, "requires")
	}
	if len(tc.Fields) == 0 {
		return nil
	}
	return tc
}

// minus is a − b, in a's order, without duplicates; linear in len(a)+len(b)
// (the stages of sync require every task of every node: hundreds of thousands
// of edges).
func minus(a, b []string) []string {
	if len(a) == 0 {
		return nil
	}
	drop := make(map[string]bool, len(b)+len(a))
	for _, s := range b {
		drop[s] = true
	}
	var out []string
	for _, s := range a {
		if !drop[s] {
			out = append(out, s)
			drop[s] = true // once
		}
	}
	return out
}

// union is the sorted set of the strings of a and b.
func union(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// taskRef names a task of a graph in causes: the id in the default graph,
// graph/id elsewhere.
func taskRef(graph, id string) string {
	if graph == "default" {
		return id
	}
	return fmt.Sprintf("%s/%s", graph, id)
}
