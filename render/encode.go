package render

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// nodeEncoder writes <cluster>/nodes/<node>/<graph>.yaml. The document has a fixed
// shape, so it is written directly rather than built as maps and handed to yaml.v3
// (which spends most of a large render's time in reflection and its emitter); the
// bytes are the same as yaml.v3 with an indent of 2 gives, which a test checks on
// real and generated data. What yaml.v3 still encodes is encoded once: a task's
// parameters, condition and dynamic requirements once per task definition, shared
// by every node, cluster and graph it lands in; every distinct scalar once per
// encoder.
//
// One encoder is used by one goroutine; the definition blocks are shared.
type nodeEncoder struct {
	blocks  *defBlocks
	scalars map[string]string
	buf     bytes.Buffer
	// The scalars of the graph encoded last by task position and node rank, so
	// that an edge costs no map lookup.
	graph              *Graph
	taskQ, nodeQ       []string
	taskFlow, nodeFlow []bool // the scalars in taskQ, nodeQ are plain in a flow list
}

// defBlocks caches the YAML of task definitions' verbatim parts, keyed by the
// loader's task data (shared by every cluster and graph, and by the loads of
// two revisions through a loader.Cache for a file both have: a loaded value is
// never changed), safe for concurrent use.
type defBlocks struct{ m sync.Map }

// EncodeCache keeps what encoding the artifacts of a render works out once per
// task definition, for the renders of several clusters, or of two revisions
// (Options.Encoding): otherwise each cluster's encoding works it out again.
// It holds every definition encoded through it; safe for concurrent use.
type EncodeCache struct{ blocks defBlocks }

// NewEncodeCache returns an empty EncodeCache.
func NewEncodeCache() *EncodeCache { return &EncodeCache{} }

// taskBlocks are a definition's keys as they appear in a task entry of the tasks
// list: indented by four spaces, key line included, each nil when absent.
type taskBlocks struct {
	condition, dynamic, parameters []byte
	err                            error
}

func newNodeEncoder(blocks *defBlocks) *nodeEncoder {
	return &nodeEncoder{blocks: blocks, scalars: map[string]string{}}
}

// get returns the blocks of definition d.
func (c *defBlocks) get(d *TaskDef) *taskBlocks {
	if v, ok := c.m.Load(d.Task.Data); ok {
		return v.(*taskBlocks)
	}
	tb := &taskBlocks{}
	data := d.Task.Data
	block := func(key string, v any) []byte {
		if tb.err != nil {
			return nil
		}
		var b []byte
		b, tb.err = encodeYAML(map[string]any{key: v})
		return indentBlock(b, "    ")
	}
	if c := data.Get("condition"); c.IsMap() {
		tb.condition = block("condition", c.Interface())
	}
	if len(d.dynamic) > 0 {
		tb.dynamic = block("dynamic_requires", d.dynamic)
	}
	if p := data.Get("parameters"); p.IsMap() {
		tb.parameters = block("parameters", p.Interface())
	}
	v, _ := c.m.LoadOrStore(d.Task.Data, tb)
	return v.(*taskBlocks)
}

// indentBlock prefixes every non-empty line of b with prefix (yaml.v3 writes no
// indentation on the empty lines of a block scalar).
func indentBlock(b []byte, prefix string) []byte {
	var out bytes.Buffer
	out.Grow(len(b) + len(b)/4)
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
		}
		if len(line) > 1 || line[0] != '\n' {
			out.WriteString(prefix)
		}
		out.Write(line)
		b = b[len(line):]
	}
	return out.Bytes()
}

// scalar returns s as yaml.v3 writes it as a plain block value (plain or quoted);
// ok is false when yaml.v3 would write it as a multi-line block scalar.
func (e *nodeEncoder) scalar(s string) (string, bool) {
	if plainWord(s) {
		return s, true
	}
	if q, ok := e.scalars[s]; ok {
		return q, q != ""
	}
	b, err := yaml.Marshal(s)
	q := ""
	if err == nil && len(b) > 0 && bytes.IndexByte(b, '\n') == len(b)-1 && b[0] != '|' && b[0] != '>' {
		q = string(b[:len(b)-1])
	}
	e.scalars[s] = q
	return q, q != ""
}

// plainWord says whether yaml.v3 writes s as it is, without asking it (a new
// yaml.v3 encoder for each distinct scalar was a fifth of render's
// allocation): at most 64 bytes (a long key is written otherwise), a letter,
// then letters, digits and _ . / -, and no word YAML reads as a boolean or
// null (true, yes, on, y, null and their other cases).
// Anything else is left to yaml.v3; FuzzPlainWord checks the rule against it.
func plainWord(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	if c := s[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '/', c == '-':
		default:
			return false
		}
	}
	if len(s) > 5 {
		return true
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// PlainWord reports whether yaml.v3 writes s as it is, and reads it back as
// that string, by plainWord's rule: for a reader of the artifacts that splits
// what fuelsync writes without yaml.v3.
func PlainWord(s string) bool { return plainWord(s) }

// errSlowPath says a value needs yaml.v3's general encoder.
var errSlowPath = fmt.Errorf("value needs the general encoder")

// node returns the YAML document of node graph ng of graph g in cluster m, in the
// encoder's buffer (valid until its next use) unless it took the fallback.
func (e *nodeEncoder) node(m *Model, g *Graph, ng *NodeGraph) ([]byte, error) {
	return e.encode(func() error { return e.write(m, g, ng) }, func() any { return nodeDocument(m, g, ng) })
}

// encode runs write, the direct writer of a document, into the encoder's buffer
// and returns the buffer (valid until the encoder's next use); when write needs
// the general encoder (errSlowPath), it returns yaml.v3's encoding of doc().
func (e *nodeEncoder) encode(write func() error, doc func() any) ([]byte, error) {
	e.buf.Reset()
	err := write()
	if err == errSlowPath {
		return encodeYAML(doc())
	}
	if err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

func (e *nodeEncoder) write(m *Model, g *Graph, ng *NodeGraph) error {
	b := &e.buf
	if err := e.header(m, g, ng, false); err != nil {
		return err
	}
	if len(ng.Tasks) == 0 {
		b.WriteString("tasks: []\n")
		return nil
	}
	b.WriteString("tasks:\n")
	for _, pt := range ng.Tasks {
		if err := e.task(pt); err != nil {
			return err
		}
	}
	return nil
}

// header writes the keys of a node document before its tasks: cluster, graph,
// instances, node, roles and tags, and format_version for a node file of format 2.
func (e *nodeEncoder) header(m *Model, g *Graph, ng *NodeGraph, v2 bool) error {
	b := &e.buf
	var roles, tags []string
	var instances map[string][]string
	if ng.Tags != nil {
		roles, tags, instances = ng.Tags.Roles, ng.Tags.Resolution, ng.Tags.Instances
	}
	if err := e.key("cluster", m.Cluster.Name); err != nil {
		return err
	}
	if v2 {
		b.WriteString("format_version: 2\n")
	}
	if err := e.key("graph", g.Type); err != nil {
		return err
	}
	if len(instances) == 0 {
		b.WriteString("instances: {}\n")
	} else {
		// Rare and small; yaml.v3 orders the tag names.
		data, err := encodeYAML(map[string]any{"instances": instancesDoc(instances)})
		if err != nil {
			return err
		}
		b.Write(data)
	}
	if err := e.key("node", ng.Node); err != nil {
		return err
	}
	if err := e.items("roles", roles); err != nil {
		return err
	}
	return e.items("tags", tags)
}

// items writes a list of strings under key k at the top level.
func (e *nodeEncoder) items(k string, items []string) error {
	b := &e.buf
	if len(items) == 0 {
		b.WriteString(k)
		b.WriteString(": []\n")
		return nil
	}
	b.WriteString(k)
	b.WriteString(":\n")
	for _, it := range items {
		q, ok := e.scalar(it)
		if !ok {
			return errSlowPath
		}
		b.WriteString("  - ")
		b.WriteString(q)
		b.WriteByte('\n')
	}
	return nil
}

// task writes one entry of the tasks list; its keys in yaml.v3's order: condition,
// dynamic_requires, id, parameters, requires, type.
func (e *nodeEncoder) task(pt *PlacedTask) error {
	b := &e.buf
	tb := e.blocks.get(pt.Def)
	if tb.err != nil {
		return tb.err
	}
	first := true
	// put writes a block indented by four spaces, the first key of the entry
	// behind the list's dash.
	put := func(block []byte) {
		if first {
			b.WriteString("  - ")
			b.Write(block[4:])
			first = false
			return
		}
		b.Write(block)
	}
	line := func(k, v string) error {
		q, ok := e.scalar(v)
		if !ok {
			return errSlowPath
		}
		if first {
			b.WriteString("  - ")
			first = false
		} else {
			b.WriteString("    ")
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(q)
		b.WriteByte('\n')
		return nil
	}
	skipped := pt.Type() == "skipped"
	if !skipped && tb.condition != nil {
		put(tb.condition)
	}
	if len(pt.DynamicRequires()) > 0 {
		put(tb.dynamic)
	}
	if err := line("id", pt.ID()); err != nil {
		return err
	}
	if !skipped && tb.parameters != nil {
		put(tb.parameters)
	}
	if pt.NumRequires() > 0 {
		b.WriteString("    requires:\n")
		for ed := range pt.Requires() {
			task, node, ok := e.target(ed)
			if !ok {
				return errSlowPath
			}
			b.WriteString("      - node: ")
			b.WriteString(node)
			b.WriteString("\n        task: ")
			b.WriteString(task)
			b.WriteByte('\n')
		}
	}
	return line("type", pt.Type())
}

// target returns the scalars of an edge's task and node.
func (e *nodeEncoder) target(ed Edge) (task, node string, ok bool) {
	task, node, _, ok = e.targetFlow(ed)
	return task, node, ok
}

// targetFlow is target, and whether both scalars are the strings themselves
// without flow indicators (plain in a flow list too); for a task of the graph,
// both are worked out once per task id and node.
func (e *nodeEncoder) targetFlow(ed Edge) (task, node string, flow, ok bool) {
	to := ed.raw
	if to.node.g == nil || int(to.idx) >= len(to.node.g.ids) {
		task, ok = e.scalar(to.ID())
		if !ok {
			return "", "", false, false
		}
		node, ok = e.scalar(to.node.Node)
		return task, node, ok && plainFlow(task, to.ID()) && plainFlow(node, to.node.Node), ok
	}
	if task, ok = e.graphTask(to); !ok {
		return "", "", false, false
	}
	r := int(to.node.rank)
	if r >= len(e.nodeQ) {
		e.nodeQ = append(e.nodeQ, make([]string, r+1-len(e.nodeQ))...)
		e.nodeFlow = append(e.nodeFlow, make([]bool, r+1-len(e.nodeFlow))...)
	}
	if node = e.nodeQ[r]; node == "" {
		if node, ok = e.scalar(ed.Node()); !ok {
			return "", "", false, false
		}
		e.nodeQ[r] = node
		e.nodeFlow[r] = plainFlow(node, ed.Node())
	}
	return task, node, e.taskFlow[to.idx] && e.nodeFlow[r], true
}

// graphTask returns the scalar of the id of pt, worked out once per task id of
// its node's graph (see targetFlow); each time for a task of no graph.
func (e *nodeEncoder) graphTask(pt *PlacedTask) (string, bool) {
	g := pt.node.g
	if g == nil || int(pt.idx) >= len(g.ids) {
		return e.scalar(pt.ID())
	}
	if e.graph != g {
		e.graph = g
		e.taskQ = make([]string, len(g.ids))
		e.taskFlow = make([]bool, len(g.ids))
		e.nodeQ = e.nodeQ[:0]
		e.nodeFlow = e.nodeFlow[:0]
	}
	if task := e.taskQ[pt.idx]; task != "" {
		return task, true
	}
	task, ok := e.scalar(pt.ID())
	if ok {
		e.taskQ[pt.idx] = task
		e.taskFlow[pt.idx] = plainFlow(task, pt.ID())
	}
	return task, ok
}

// nodeDocument is the node document as generic values, for yaml.v3: the encoder's
// fallback for values it does not write itself, and its reference in tests.
func nodeDocument(m *Model, g *Graph, ng *NodeGraph) map[string]any {
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
		t := map[string]any{"id": pt.ID(), "type": pt.Type()}
		data := pt.Def.Task.Data
		if pt.Type() != "skipped" {
			if p := data.Get("parameters"); p.IsMap() {
				t["parameters"] = p.Interface()
			}
			if c := data.Get("condition"); c.IsMap() {
				t["condition"] = c.Interface() // yaql, for the deployer
			}
		}
		if pt.NumRequires() > 0 {
			var req []any
			for e := range pt.Requires() {
				req = append(req, map[string]any{"task": e.Task(), "node": e.Node()})
			}
			t["requires"] = req
		}
		if len(pt.DynamicRequires()) > 0 {
			t["dynamic_requires"] = pt.DynamicRequires()
		}
		tasks = append(tasks, t)
	}
	doc["tasks"] = tasks
	return doc
}
