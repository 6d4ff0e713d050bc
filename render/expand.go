package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The expanded view, computed: a node's document with every task's definition
// inline and the stages' requirements in full, exactly as the expanded layout
// (format 1, render --expanded) writes it, from a stored set of format 2.

// NodeFile is a node file of format 2, parsed.
type NodeFile struct {
	Cluster, Graph, Node string
	Tasks                []NodeFileTask
	// header is the expanded view's keys before its tasks (cluster, graph,
	// instances, node, roles, tags) as the file writes them.
	header []byte
}

// NodeFileTask is a task of a node file: its id and its requirements, in order.
type NodeFileTask struct {
	ID       string
	Requires []Requirement
	// Inline says the entry holds its own definition rather than referring to
	// the catalogue's entry of its id.
	Inline bool
	def    *catalogueEntryBlocks
}

// Requirement is one edge of a task: it requires Task on Node.
type Requirement struct{ Task, Node string }

// ErrExpanded says a node file is in the expanded layout (format 1), which has no
// format_version and is its own expanded view.
var ErrExpanded = errors.New("node file in the expanded layout (format 1)")

// ParseNodeFile reads a node file of format 2. A file without format_version (the
// expanded layout, format 1) is ErrExpanded.
func ParseNodeFile(data []byte) (*NodeFile, error) {
	header, version, err := nodeHeader(data)
	if err != nil {
		return nil, err
	}
	if version == "" {
		return nil, ErrExpanded
	}
	if version != "2" {
		return nil, fmt.Errorf("node file of format_version %q; this fuelsync reads format 2", version)
	}
	root, err := documentMapping(data)
	if err != nil {
		return nil, err
	}
	nf := &NodeFile{header: header}
	var tasks *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "cluster":
			nf.Cluster = v.Value
		case "graph":
			nf.Graph = v.Value
		case "node":
			nf.Node = v.Value
		case "tasks":
			tasks = v
		}
	}
	if nf.Node == "" || strings.Contains(nf.Node, "@") {
		return nil, fmt.Errorf("node file: node %q is not a node name", nf.Node)
	}
	if tasks == nil || tasks.Kind != yaml.SequenceNode {
		return nil, errors.New("node file: tasks is not a list")
	}
	block, err := keyBlocks(data, tasks.Content, nil)
	if err != nil {
		return nil, fmt.Errorf("node file: %w", err)
	}
	nf.Tasks = make([]NodeFileTask, len(tasks.Content))
	for i, entry := range tasks.Content {
		if nf.Tasks[i], err = parseNodeFileTask(nf.Node, i, entry, block); err != nil {
			return nil, err
		}
	}
	return nf, nil
}

// parseNodeFileTask reads entry i of the node file's tasks: its id, its requires
// (task or task@node, on the node file's node when no node is named), and any other
// key as its inline definition (which needs a type); block locates the entries'
// keys in the file's bytes.
func parseNodeFileTask(node string, i int, entry *yaml.Node, block func(*yaml.Node) ([]byte, error)) (NodeFileTask, error) {
	var nt NodeFileTask
	def := &catalogueEntryBlocks{}
	for j := 0; j+1 < len(entry.Content); j += 2 {
		k, v := entry.Content[j], entry.Content[j+1]
		switch k.Value {
		case "id":
			if v.Kind != yaml.ScalarNode {
				return nt, fmt.Errorf("node file of %s: task %d: id is not a string", node, i+1)
			}
			nt.ID = v.Value
		case "requires":
			var reqs []string
			if err := v.Decode(&reqs); err != nil {
				return nt, fmt.Errorf("node file of %s: task %d: requires: %w", node, i+1, err)
			}
			for _, s := range reqs {
				task, on := SplitRequirement(s, node)
				if task == "" || on == "" {
					return nt, fmt.Errorf("node file of %s: task %d: requirement %q is not task or task@node", node, i+1, s)
				}
				nt.Requires = append(nt.Requires, Requirement{Task: task, Node: on})
			}
		default:
			nt.Inline = true
			if err := def.add(k, v, block); err != nil {
				return nt, fmt.Errorf("node file of %s: task %d: %w", node, i+1, err)
			}
		}
	}
	if nt.ID == "" {
		return nt, fmt.Errorf("node file of %s: task %d has no id", node, i+1)
	}
	if nt.Inline {
		if def.typ == nil {
			return nt, fmt.Errorf("node file of %s: task %s has a definition without type", node, nt.ID)
		}
		nt.def = def
	}
	return nt, nil
}

// documentMapping parses a YAML document that is a mapping.
func documentMapping(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	return doc.Content[0], nil
}

// nodeHeader returns the top-level lines of a node file before "tasks:", without
// its format_version line, and the format_version ("" when absent).
func nodeHeader(data []byte) (header []byte, version string, err error) {
	var out []byte
	rest := data
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if v, ok := bytes.CutPrefix(line, []byte("format_version:")); ok {
			version = string(bytes.TrimSpace(v))
			continue
		}
		if bytes.HasPrefix(line, []byte("tasks:")) {
			return out, version, nil
		}
		out = append(out, line...)
	}
	return nil, "", errors.New("node file has no tasks")
}

// keyBlocks returns how to cut the block of a key of the block mappings entries
// (the last top-level value of data, each key on its own line at column 5; heads,
// when not nil, are the entries' own keys, on lines of their own) out of data:
// from its line to the line of the next key or head, the last one to the end of
// data. The block comes indented by four spaces, as the keys of a task
// entry of the expanded view are.
func keyBlocks(data []byte, entries, heads []*yaml.Node) (func(k *yaml.Node) ([]byte, error), error) {
	starts := yamlLineStarts(data)
	var bounds []int
	for i, v := range entries {
		if heads != nil {
			bounds = append(bounds, heads[i].Line)
		}
		if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("line %d: not a block mapping", v.Line)
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			bounds = append(bounds, v.Content[j].Line)
		}
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			return nil, fmt.Errorf("line %d: keys are not one per line", bounds[i])
		}
	}
	if n := len(bounds); n > 0 && (bounds[0] < 1 || bounds[n-1] > len(starts)) {
		return nil, fmt.Errorf("line %d: a key past the file's lines", bounds[n-1])
	}
	return func(k *yaml.Node) ([]byte, error) {
		i, found := slices.BinarySearch(bounds, k.Line)
		if !found || k.Line > len(starts) || k.Column != 5 {
			return nil, fmt.Errorf("line %d: key %s is not where fuelsync writes it", k.Line, k.Value)
		}
		start, end := starts[k.Line-1], len(data)
		if i+1 < len(bounds) {
			end = starts[bounds[i+1]-1]
		}
		b := data[start:end]
		switch {
		case bytes.HasPrefix(b, []byte("    "+k.Value+":")):
			return b, nil
		case bytes.HasPrefix(b, []byte("  - "+k.Value+":")):
			return append([]byte("    "), b[4:]...), nil
		}
		return nil, fmt.Errorf("line %d: key %s is not where fuelsync writes it", k.Line, k.Value)
	}, nil
}

// yamlLineStarts returns the offset of each line of data as YAML counts lines
// (which is how yaml.v3 numbers a node's Line): a line ends at LF, CR, CRLF (one
// break), NEL, LS or PS. A break at the very end starts no line.
func yamlLineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); i++ {
		n := 0
		switch {
		case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
			n = 2
		case data[i] == '\n' || data[i] == '\r':
			n = 1
		case data[i] == 0xC2 && i+1 < len(data) && data[i+1] == 0x85:
			n = 2
		case data[i] == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			n = 3
		}
		if n == 0 {
			continue
		}
		i += n - 1
		if i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// catalogue is a task catalogue, parsed: each entry's blocks as written.
type catalogue struct {
	entries map[string]*catalogueEntryBlocks
}

// catalogueEntryBlocks are the keys of a catalogue entry as its file writes them,
// indented by four spaces (as they are in a task entry of the expanded view).
type catalogueEntryBlocks struct {
	before []byte // condition and dynamic_requires: the keys before id
	params []byte // parameters: between id and requires
	typ    []byte // type: after requires
	stages []string
}

// add records key k (value v) of an entry.
func (ent *catalogueEntryBlocks) add(k, v *yaml.Node, block func(*yaml.Node) ([]byte, error)) error {
	switch k.Value {
	case "condition", "dynamic_requires", "parameters", "type":
		b, err := block(k)
		if err != nil {
			return err
		}
		switch k.Value {
		case "parameters":
			ent.params = b
		case "type":
			ent.typ = b
		default:
			ent.before = append(ent.before, b...)
		}
	case "stages":
		if err := v.Decode(&ent.stages); err != nil {
			return fmt.Errorf("stages: %w", err)
		}
	default:
		return fmt.Errorf("unknown key %s", k.Value)
	}
	return nil
}

// parseCatalogue reads a task catalogue of format 2.
func parseCatalogue(data []byte) (*catalogue, error) {
	root, err := documentMapping(data)
	if err != nil {
		return nil, err
	}
	var tasks *yaml.Node
	version := ""
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "format_version":
			version = root.Content[i+1].Value
		case "tasks":
			tasks = root.Content[i+1]
		}
	}
	if version != "2" {
		return nil, fmt.Errorf("task catalogue of format_version %q; this fuelsync reads format 2", version)
	}
	if tasks == nil || tasks.Kind != yaml.MappingNode {
		return nil, errors.New("task catalogue has no tasks mapping")
	}
	var keys, values []*yaml.Node
	for i := 0; i+1 < len(tasks.Content); i += 2 {
		keys = append(keys, tasks.Content[i])
		values = append(values, tasks.Content[i+1])
	}
	block, err := keyBlocks(data, values, keys)
	if err != nil {
		return nil, fmt.Errorf("task catalogue: %w", err)
	}
	c := &catalogue{entries: make(map[string]*catalogueEntryBlocks, len(values))}
	for i := 0; i+1 < len(tasks.Content); i += 2 {
		id, v := tasks.Content[i].Value, tasks.Content[i+1]
		ent := &catalogueEntryBlocks{}
		for j := 0; j+1 < len(v.Content); j += 2 {
			if err := ent.add(v.Content[j], v.Content[j+1], block); err != nil {
				return nil, fmt.Errorf("task catalogue: task %s: %w", id, err)
			}
		}
		if ent.typ == nil {
			return nil, fmt.Errorf("task catalogue: task %s has no type", id)
		}
		c.entries[id] = ent
	}
	return c, nil
}

// Expander computes expanded node documents from one stored artifact set, reading
// each task catalogue once. Safe for concurrent use.
type Expander struct {
	fsys fs.FS

	mu         sync.Mutex
	catalogues map[string]*catalogue        // by path
	implied    map[string]map[string][]edge // cluster/graph → stage id → its implied requirements
}

// edge is a requirement with the rank of its node, for sorting.
type edge struct {
	Requirement
	rank int
}

// NewExpander returns an Expander of the artifact set fsys (its root holds
// manifest.json and the clusters' directories).
func NewExpander(fsys fs.FS) *Expander {
	return &Expander{fsys: fsys, catalogues: map[string]*catalogue{}, implied: map[string]map[string][]edge{}}
}

// ExpandNode returns the expanded view of a node's graph in the artifact set fsys:
// the document the expanded layout (format 1) writes for it, byte for byte. A node
// file of format 1 is returned as it is stored.
func ExpandNode(fsys fs.FS, cluster, node, graph string) ([]byte, error) {
	return NewExpander(fsys).Node(cluster, node, graph)
}

// Node returns the expanded view of a node's graph (see ExpandNode).
func (x *Expander) Node(cluster, node, graph string) ([]byte, error) {
	name := NodeAddress(cluster, node, graph).String()
	data, err := fs.ReadFile(x.fsys, name)
	if err != nil {
		return nil, err
	}
	nf, err := ParseNodeFile(data)
	if errors.Is(err, ErrExpanded) {
		return data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cat, err := x.catalogue(cluster, graph)
	if err != nil {
		return nil, err
	}
	var implied map[string][]edge
	if node == SyncNode {
		if implied, err = x.stageImplied(cluster, graph, cat); err != nil {
			return nil, err
		}
	}
	out, err := expandNodeFile(nf, cat, implied, x.ranks)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// ranks is set by stageImplied: the order of a cluster's nodes.
func (x *Expander) ranks(cluster string) (map[string]int, error) { return nodeRanks(x.fsys, cluster) }

func (x *Expander) catalogue(cluster, graph string) (*catalogue, error) {
	name := CataloguePath(cluster, graph)
	x.mu.Lock()
	c := x.catalogues[name]
	x.mu.Unlock()
	if c != nil {
		return c, nil
	}
	data, err := fs.ReadFile(x.fsys, name)
	if err != nil {
		return nil, err
	}
	if c, err = parsedCatalogue(data); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	x.mu.Lock()
	x.catalogues[name] = c
	x.mu.Unlock()
	return c, nil
}

// parsedCatalogues keeps the catalogues parsed last by the sha256 of their bytes,
// shared by every Expander: a server expanding one node per request parses a
// catalogue once, not once per node (a catalogue of 5,000 tasks takes about
// 100 ms to parse). A parsed catalogue is never changed.
var parsedCatalogues struct {
	sync.Mutex
	m     map[[sha256.Size]byte]*catalogue
	order [][sha256.Size]byte
}

const maxParsedCatalogues = 32

func parsedCatalogue(data []byte) (*catalogue, error) {
	key := sha256.Sum256(data)
	pc := &parsedCatalogues
	pc.Lock()
	c := pc.m[key]
	pc.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := parseCatalogue(data)
	if err != nil {
		return nil, err
	}
	pc.Lock()
	defer pc.Unlock()
	if pc.m == nil {
		pc.m = map[[sha256.Size]byte]*catalogue{}
	}
	if _, ok := pc.m[key]; !ok {
		if len(pc.order) >= maxParsedCatalogues {
			delete(pc.m, pc.order[0])
			pc.order = pc.order[1:]
		}
		pc.m[key] = c
		pc.order = append(pc.order, key)
	}
	return c, nil
}

// nodeRanks orders a cluster's nodes as render does: the nodes of cluster.yaml by
// id, then master, then sync.
func nodeRanks(fsys fs.FS, cluster string) (map[string]int, error) {
	name := path.Join(cluster, "cluster.yaml")
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Nodes map[string]struct {
			ID int `yaml:"id"`
		} `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	names := make([]string, 0, len(doc.Nodes))
	for n := range doc.Nodes {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(doc.Nodes[a].ID, doc.Nodes[b].ID), strings.Compare(a, b))
	})
	ranks := make(map[string]int, len(names)+2)
	for i, n := range names {
		ranks[n] = i
	}
	ranks["master"] = len(names)
	ranks[SyncNode] = len(names) + 1
	return ranks, nil
}

// stageImplied works out, for the sync node of a cluster's graph, the
// requirements of each stage the catalogue implies: on every other node, each
// task whose entry lists the stage, unless the node has a task of the stage's id.
func (x *Expander) stageImplied(cluster, graph string, cat *catalogue) (map[string][]edge, error) {
	key := cluster + "/" + graph
	x.mu.Lock()
	m, ok := x.implied[key]
	x.mu.Unlock()
	if ok {
		return m, nil
	}
	ranks, err := nodeRanks(x.fsys, cluster)
	if err != nil {
		return nil, err
	}
	dir := NodesDir(cluster)
	ents, err := fs.ReadDir(x.fsys, dir)
	if err != nil {
		return nil, err
	}
	m = map[string][]edge{}
	for _, de := range ents {
		node := de.Name()
		if !de.IsDir() || node == SyncNode {
			continue
		}
		name := NodeAddress(cluster, node, graph).String()
		data, err := fs.ReadFile(x.fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		nf, ok := ScanNodeFile(data)
		if !ok {
			if nf, err = ParseNodeFile(data); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		rank, ok := ranks[node]
		if !ok {
			return nil, fmt.Errorf("%s: node %s is not in %s/cluster.yaml", name, node, cluster)
		}
		has := make(map[string]bool, len(nf.Tasks))
		for _, t := range nf.Tasks {
			has[t.ID] = true
		}
		for _, t := range nf.Tasks {
			ent := t.def
			if ent == nil {
				ent = cat.entries[t.ID]
			}
			if ent == nil {
				return nil, fmt.Errorf("%s: task %s is not in the task catalogue", name, t.ID)
			}
			for _, s := range ent.stages {
				if !has[s] {
					m[s] = append(m[s], edge{Requirement{Task: t.ID, Node: node}, rank})
				}
			}
		}
	}
	x.mu.Lock()
	x.implied[key] = m
	x.mu.Unlock()
	return m, nil
}

// PlainID reports whether a task id as written is the id itself: a letter or '_'
// first, then letters, digits, '_', '.', '-' (what YAML reads as a string).
func PlainID(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	// Words YAML 1.1 reads as booleans or null are quoted by the writer; one
	// written plain is not an id the writer wrote.
	switch strings.ToLower(string(b)) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// expandNodeFile writes the expanded view of nf. implied are the stages'
// implied requirements (sync only); ranks orders the cluster's nodes when some are.
func expandNodeFile(nf *NodeFile, cat *catalogue, implied map[string][]edge, ranks func(string) (map[string]int, error)) ([]byte, error) {
	e := newNodeEncoder(nil)
	b := &e.buf
	b.Write(nf.header)
	if len(nf.Tasks) == 0 {
		b.WriteString("tasks: []\n")
		return b.Bytes(), nil
	}
	b.WriteString("tasks:\n")
	var rank map[string]int
	for _, t := range nf.Tasks {
		ent := t.def
		if ent == nil {
			ent = cat.entries[t.ID]
		}
		if ent == nil {
			return nil, fmt.Errorf("task %s is not in the task catalogue", t.ID)
		}
		reqs := t.Requires
		if extra := implied[t.ID]; len(extra) > 0 {
			if rank == nil {
				var err error
				if rank, err = ranks(nf.Cluster); err != nil {
					return nil, err
				}
			}
			all := make([]edge, 0, len(reqs)+len(extra))
			for _, r := range reqs {
				rk, ok := rank[r.Node]
				if !ok {
					return nil, fmt.Errorf("task %s requires %s@%s: no such node in the cluster", t.ID, r.Task, r.Node)
				}
				all = append(all, edge{r, rk})
			}
			all = append(all, extra...)
			slices.SortStableFunc(all, func(a, b edge) int {
				return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.Task, b.Task))
			})
			all = slices.CompactFunc(all, func(a, b edge) bool { return a.Requirement == b.Requirement })
			reqs = make([]Requirement, len(all))
			for i, ed := range all {
				reqs[i] = ed.Requirement
			}
		}
		if err := e.expandTask(t.ID, reqs, ent); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// expandTask writes one task entry of the expanded view: condition,
// dynamic_requires, id, parameters, requires, type, as nodeEncoder.task does.
func (e *nodeEncoder) expandTask(id string, reqs []Requirement, ent *catalogueEntryBlocks) error {
	b := &e.buf
	first := true
	put := func(block []byte) {
		if len(block) == 0 {
			return
		}
		if first {
			b.WriteString("  - ")
			b.Write(block[4:])
			first = false
			return
		}
		b.Write(block)
	}
	put(ent.before)
	if q, ok := e.scalar(id); ok {
		put([]byte("    id: " + q + "\n"))
	} else {
		block, err := encodeYAML(map[string]any{"id": id})
		if err != nil {
			return err
		}
		put(indentBlock(block, "    "))
	}
	put(ent.params)
	if len(reqs) > 0 {
		start := b.Len()
		b.WriteString("    requires:\n")
		for _, r := range reqs {
			node, ok := e.scalar(r.Node)
			task, ok2 := e.scalar(r.Task)
			if !ok || !ok2 {
				// A value yaml.v3 writes over several lines: the list as it
				// writes it.
				b.Truncate(start)
				list := make([]any, len(reqs))
				for i, r := range reqs {
					list[i] = map[string]any{"node": r.Node, "task": r.Task}
				}
				block, err := encodeYAML(map[string]any{"requires": list})
				if err != nil {
					return err
				}
				b.Write(indentBlock(block, "    "))
				break
			}
			b.WriteString("      - node: ")
			b.WriteString(node)
			b.WriteString("\n        task: ")
			b.WriteString(task)
			b.WriteByte('\n')
		}
	}
	put(ent.typ)
	return nil
}

// ExpandSet returns the expanded view of every node file of the artifact set fsys,
// by path.
func ExpandSet(fsys fs.FS) (map[string][]byte, error) {
	x := NewExpander(fsys)
	out := map[string][]byte{}
	clusters, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		if !c.IsDir() {
			continue
		}
		nodes, err := fs.ReadDir(fsys, NodesDir(c.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			graphs, err := fs.ReadDir(fsys, NodeDir(c.Name(), n.Name()))
			if err != nil {
				return nil, err
			}
			for _, g := range graphs {
				addr, err := ParseAddress(NodeDir(c.Name(), n.Name()) + "/" + g.Name())
				if err != nil || g.IsDir() {
					continue
				}
				data, err := x.Node(addr.Cluster, addr.Node, addr.Graph)
				if err != nil {
					return nil, err
				}
				out[addr.String()] = data
			}
		}
	}
	return out, nil
}
