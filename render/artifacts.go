package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/capabilities"
	"github.com/fuelsync/fuelsync/loader"
)

// Rendered is one cluster, merged and resolved onto its nodes.
type Rendered struct {
	Model  *Model
	Graphs []*Graph
	// Registry is the cluster's resolved Heat resource registry, nil
	// when it uses no environments.
	Registry *capabilities.Registry
	// encoding is the EncodeCache of the walk that rendered it (Options.Encoding,
	// or the walk's own); nil: the cluster's encoding works its definitions out
	// alone.
	encoding *EncodeCache
}

// Graph returns the graph of type typ, or nil.
func (r *Rendered) Graph(typ string) *Graph {
	for _, g := range r.Graphs {
		if g.Type == typ {
			return g
		}
	}
	return nil
}

// Options tune Render.
type Options struct {
	// Clusters limits rendering to these clusters (all when empty).
	Clusters []string
	// State is the applied state primary tags stick to (nil: empty).
	State AppliedState
	// OneAtATime has Walk hand over one cluster at a time (its graphs still
	// resolved on every core), for a caller that holds more of each cluster
	// it is handed than its render: a second revision of it (diff: two
	// renders in hand rather than twice as many as there are cores), or its
	// applied files (a plan's comparison).
	OneAtATime bool
	// Encoding, when not nil, is shared by the encodings (StreamCluster) of
	// the clusters Walk renders with it: for two walks to share one (the
	// clusters of one walk share one in any case).
	Encoding *EncodeCache
}

// Render checks repo as Check does and resolves every cluster (or opts.Clusters)
// onto its nodes. Clusters whose model has errors are not rendered; the diagnostics
// say why.
func Render(repo *loader.Repo, opts Options) ([]*Rendered, hcl.Diagnostics) {
	return render(repo, opts, false)
}

// Validate checks repo as Render does and reports the same diagnostics, without
// rendering: each graph is resolved onto one node of each class of nodes (the
// nodes with the same resolution tags, which get the same tasks and edges), and
// onto every node only when that finds a dependency cycle. The clusters are
// checked one by one (Walk).
func Validate(repo *loader.Repo, opts Options) hcl.Diagnostics {
	var mu sync.Mutex
	var diags hcl.Diagnostics
	data, _ := Walk(repo, opts, true, func(wk *Walked) error {
		mu.Lock()
		defer mu.Unlock()
		diags = append(diags, wk.Diagnostics...)
		return nil
	})
	return loader.SortDiagnostics(append(data, diags...))
}

func render(repo *loader.Repo, opts Options, classes bool) ([]*Rendered, hcl.Diagnostics) {
	b, models, registries, diags := buildModels(repo, opts)
	graphs, d := renderAll(models, classes)
	diags = append(diags, d...)
	if classes {
		return nil, loader.SortDiagnostics(append(b.data, diags...))
	}
	out := make([]*Rendered, len(models))
	for i, m := range models {
		out[i] = &Rendered{Model: m, Graphs: graphs[i], Registry: registries[i]}
	}
	return out, loader.SortDiagnostics(append(b.data, diags...))
}

// buildModels merges the model of every cluster render renders, with its
// resolved resource registry; a cluster with errors has none, its diagnostics
// say why. The models share the builder's caches and are built one by one; their
// graphs are independent and can be resolved in parallel.
func buildModels(repo *loader.Repo, opts Options) (*builder, []*Model, []*capabilities.Registry, hcl.Diagnostics) {
	b, models, registries, each := buildEach(repo, opts)
	var diags hcl.Diagnostics
	for _, c := range repo.Clusters {
		diags = append(diags, each[c]...)
	}
	return b, models, registries, diags
}

// buildEach is buildModels with the diagnostics of each cluster apart.
func buildEach(repo *loader.Repo, opts Options) (*builder, []*Model, []*capabilities.Registry, map[*loader.Cluster]hcl.Diagnostics) {
	b := newBuilder(repo)
	b.state = opts.State
	b.checkData()
	var models []*Model
	var registries []*capabilities.Registry
	each := map[*loader.Cluster]hcl.Diagnostics{}
	for _, c := range repo.Clusters {
		if len(opts.Clusters) > 0 && !slices.Contains(opts.Clusters, c.Name) {
			continue
		}
		m, d := b.build(c)
		reg, rd := resolveRegistry(repo, c)
		each[c] = append(d, rd...)
		if m == nil || d.HasErrors() || rd.HasErrors() {
			continue
		}
		models = append(models, m)
		registries = append(registries, reg)
	}
	return b, models, registries, each
}

// Files serialises rendered clusters into the stored artifact layout (format 2,
// docs/artifact-format.md), path → bytes, manifest.json included. Keys are sorted
// and nothing depends on time, so the same input gives the same bytes. It holds
// every file in memory; Stream does not.
func Files(rs []*Rendered, revision, toolVersion string) (map[string][]byte, error) {
	return files(rs, revision, toolVersion, FormatCatalogue)
}

// FilesExpanded is Files in the expanded layout (format 1): every node file with
// its tasks' definitions inline, no task catalogue.
func FilesExpanded(rs []*Rendered, revision, toolVersion string) (map[string][]byte, error) {
	return files(rs, revision, toolVersion, FormatExpanded)
}

func files(rs []*Rendered, revision, toolVersion, format string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var mu sync.Mutex
	err := stream(rs, revision, toolVersion, format, func(name string, data []byte) error {
		data = bytes.Clone(data)
		mu.Lock()
		files[name] = data
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// Stream encodes the artifacts of Files and hands each to put as it is made:
// encoding and hashing run on every core, so put is called from several goroutines
// at once, and data is only valid until put returns. manifest.json comes last, after
// every other put has returned. The first error stops the stream and is returned.
func Stream(rs []*Rendered, revision, toolVersion string, put func(name string, data []byte) error) error {
	return stream(rs, revision, toolVersion, FormatCatalogue, put)
}

// StreamExpanded is Stream in the expanded layout (format 1).
func StreamExpanded(rs []*Rendered, revision, toolVersion string, put func(name string, data []byte) error) error {
	return stream(rs, revision, toolVersion, FormatExpanded, put)
}

func stream(rs []*Rendered, revision, toolVersion, format string, put func(name string, data []byte) error) error {
	var units []unit
	for _, r := range rs {
		u, err := clusterUnits(r, format)
		if err != nil {
			return err
		}
		units = append(units, u...)
	}
	entries, err := encodeUnits(units, &defBlocks{}, withoutSum(put))
	if err != nil {
		return err
	}
	return putManifest(entries, format, revision, toolVersion, put)
}

// unit is one artifact file and how to encode it.
type unit struct {
	name   string
	encode func(*nodeEncoder) ([]byte, error)
}

// clusterUnits lists the artifact files of one rendered cluster in format.
func clusterUnits(r *Rendered, format string) ([]unit, error) {
	var units []unit
	name := r.Model.Cluster.Name
	if err := checkSegment("cluster name", name); err != nil {
		return nil, err
	}
	if name == "manifest.json" {
		return nil, fmt.Errorf("cluster name %q would replace the artifacts' manifest", name)
	}
	units = append(units, unit{path.Join(name, "cluster.yaml"), func(*nodeEncoder) ([]byte, error) {
		return encodeClusterDoc(clusterDoc(r))
	}})
	if r.Registry != nil {
		units = append(units, unit{path.Join(name, "registry.yaml"), func(*nodeEncoder) ([]byte, error) {
			return encodeYAML(registryDoc(r.Registry))
		}})
	}
	for _, g := range r.Graphs {
		if err := checkSegment("graph type", g.Type); err != nil {
			return nil, err
		}
		units = append(units, unit{dotPath(name, g.Type), func(e *nodeEncoder) ([]byte, error) {
			e.buf.Reset()
			writeDOT(&e.buf, name, g)
			return e.buf.Bytes(), nil
		}})
		if format == FormatCatalogue {
			units = append(units, unit{CataloguePath(name, g.Type), func(e *nodeEncoder) ([]byte, error) {
				return e.catalogue(r.Model, g)
			}})
		}
		for _, ng := range g.Nodes {
			if err := checkSegment("node name", ng.Node); err != nil {
				return nil, err
			}
			encode := func(e *nodeEncoder) ([]byte, error) { return e.nodeFile(r.Model, g, ng) }
			if format == FormatExpanded {
				encode = func(e *nodeEncoder) ([]byte, error) { return e.node(r.Model, g, ng) }
			}
			units = append(units, unit{NodeAddress(name, ng.Node, g.Type).String(), encode})
		}
	}
	return units, nil
}

// dotPath is the path of a cluster's DOT file of graph type typ.
func dotPath(cluster, typ string) string { return path.Join(cluster, "graphs", typ+".dot") }

// withoutSum is put of a file and its digest, for a caller that does not ask for it.
func withoutSum(put func(name string, data []byte) error) func(name string, data []byte, sum string) error {
	return func(name string, data []byte, _ string) error { return put(name, data) }
}

// encodeUnits encodes units on every core and hands each file, with its
// digest (hex sha256), to put, returning
// their manifest entries in the order of units. The first error stops it.
func encodeUnits(units []unit, blocks *defBlocks, put func(name string, data []byte, sum string) error) ([]manifestEntry, error) {
	entries := make([]manifestEntry, len(units))
	errs := make([]error, len(units))
	var failed atomic.Bool
	encoders := make([]*nodeEncoder, workers(len(units)))
	inParallel(len(units), func(w, i int) {
		if failed.Load() {
			return
		}
		if encoders[w] == nil {
			encoders[w] = newNodeEncoder(blocks)
		}
		u := units[i]
		data, err := u.encode(encoders[w])
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", u.name, err)
		} else {
			sum := sha256.Sum256(data)
			entries[i] = manifestEntry{u.name, hex.EncodeToString(sum[:])}
			errs[i] = put(u.name, data, entries[i].SHA256)
		}
		if errs[i] != nil {
			failed.Store(true)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return entries, nil
}

// putManifest hands manifest.json, listing entries, to put.
func putManifest(entries []manifestEntry, format, revision, toolVersion string, put func(name string, data []byte) error) error {
	manifest, err := manifestDoc(entries, format, revision, toolVersion)
	if err != nil {
		return err
	}
	return put("manifest.json", manifest)
}

// checkSegment refuses a name that is not one clean, local path segment: the
// artifact writer's own check, behind the loader's validation of the names.
func checkSegment(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.HasPrefix(name, ".") ||
		strings.ContainsAny(name, `/\:`) || !filepath.IsLocal(name) {
		return fmt.Errorf("refusing to write artifacts for %s %q: it is not a plain file name", what, name)
	}
	return nil
}

func encodeYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// manifestEntry is one file of manifest.json.
type manifestEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func manifestDoc(entries []manifestEntry, format, revision, toolVersion string) ([]byte, error) {
	slices.SortFunc(entries, func(a, b manifestEntry) int { return strings.Compare(a.Path, b.Path) })
	doc := struct {
		FormatVersion string          `json:"format_version"`
		Revision      string          `json:"revision"`
		ToolVersion   string          `json:"tool_version"`
		Files         []manifestEntry `json:"files"`
	}{format, revision, toolVersion, entries}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func strs(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

func instancesDoc(in map[string][]string) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = strs(v)
	}
	return out
}

// encodeClusterDoc encodes doc, a clusterDoc, as encodeYAML does, without
// handing yaml.v3 a node entry per node: its emitter keeps every event of a
// document until the end, and each node's entry is some forty events, so
// cluster.yaml of a few clusters of 500 nodes of several roles cost more than
// rendering their graphs. The document is encoded with each node's entry
// replaced by its index (yaml.v3 orders the names and writes them), then each
// line "  <name>: <index>" of its nodes mapping is replaced by the node's entry:
// its id, and the rest of the entry (roles, tags, volumes...), encoded once for
// each distinct rest, that is once per class of nodes, indented as yaml.v3 nests
// a block mapping. Anything else takes encodeYAML.
func encodeClusterDoc(doc map[string]any) ([]byte, error) {
	nodes, _ := doc["nodes"].(map[string]any)
	if len(nodes) == 0 {
		return encodeYAML(doc)
	}
	names := make([]string, 0, len(nodes))
	index := make(map[string]any, len(nodes))
	for name := range nodes {
		index[name] = len(names)
		names = append(names, name)
	}
	outline := maps.Clone(doc)
	outline["nodes"] = index
	data, err := encodeYAML(outline)
	if err != nil {
		return nil, err
	}
	head, rest, ok := bytes.Cut(data, []byte("\nnodes:\n"))
	if !ok {
		return encodeYAML(doc)
	}
	out := bytes.NewBuffer(make([]byte, 0, len(data)*8))
	out.Write(head)
	out.WriteString("\nnodes:\n")
	classes := map[string][]byte{}
	for done := 0; done < len(names); done++ {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		i, key := -1, []byte(nil)
		if colon := bytes.LastIndex(line, []byte(": ")); colon > 2 && bytes.HasPrefix(line, []byte("  ")) && line[2] != '?' {
			if n, err := strconv.Atoi(string(line[colon+2:])); err == nil {
				i, key = n, line[2:colon]
			}
		}
		if i < 0 || i >= len(names) || names[i] == "" {
			return encodeYAML(doc) // a name yaml.v3 writes otherwise (a complex key)
		}
		if ok, err := writeNodeEntry(out, key, nodes[names[i]], classes); err != nil || !ok {
			return encodeYAML(doc)
		}
		names[i], rest = "", after
	}
	out.Write(rest)
	return out.Bytes(), nil
}

// writeNodeEntry writes the entry of a node of cluster.yaml, key being its name
// as yaml.v3 writes it: "  <key>:", its id, then the rest of v encoded by yaml.v3
// once per distinct rest (classes holds them by their JSON). ok is false when v
// is not a node entry this can write: a mapping of an int id and other keys
// that yaml.v3 orders after it.
func writeNodeEntry(out *bytes.Buffer, key []byte, v any, classes map[string][]byte) (ok bool, err error) {
	entry, _ := v.(map[string]any)
	id, isInt := entry["id"].(int)
	if !isInt || len(entry) < 2 {
		return false, nil
	}
	rest := make(map[string]any, len(entry)-1)
	for k, v := range entry {
		if k == "id" {
			continue
		}
		if k < "id" || strings.TrimLeft(k, "abcdefghijklmnopqrstuvwxyz_") != "" {
			return false, nil
		}
		rest[k] = v
	}
	class, err := json.Marshal(rest)
	if err != nil {
		return false, err
	}
	block, seen := classes[string(class)]
	if !seen {
		data, err := encodeYAML(rest)
		if err != nil {
			return false, err
		}
		block = indentBlock(data, "    ")
		classes[string(class)] = block
	}
	out.WriteString("  ")
	out.Write(key)
	out.WriteString(":\n    id: ")
	out.WriteString(strconv.Itoa(id))
	out.WriteByte('\n')
	out.Write(block)
	return true, nil
}

// clusterDoc is <cluster>/cluster.yaml.
func clusterDoc(r *Rendered) map[string]any {
	m := r.Model
	var plugins []any
	for _, p := range m.Plugins {
		plugins = append(plugins, p.Plugin.Name)
	}
	var comps []any
	for _, s := range m.States {
		c := map[string]any{"name": s.Name, "state": s.State}
		if s.Compatible {
			c["compatible"] = true
		}
		comps = append(comps, c)
	}
	nodes := map[string]any{}
	for _, nt := range m.nodeTagList() {
		nodes[nt.Node.Name] = map[string]any{
			"id":        nt.Node.ID,
			"roles":     strs(nt.Roles),
			"tags":      strs(nt.Resolution),
			"primary":   strs(nt.Primary),
			"instances": instancesDoc(nt.Instances),
			"volumes":   m.nodeVolumes(nt.Roles),
		}
	}
	var ft []any
	for _, g := range r.Graphs {
		for _, f := range g.FaultTolerance {
			entry := map[string]any{"name": f.Name, "nodes": strs(f.Nodes), "fault_tolerance": f.FaultTolerance}
			if g.Type != "default" {
				entry["graph"] = g.Type
			}
			ft = append(ft, entry)
		}
	}
	return map[string]any{
		"cluster":                m.Cluster.Name,
		"mode":                   m.Cluster.Mode,
		"release":                map[string]any{"name": m.Release.Name, "version": m.Release.Version},
		"plugins":                orEmpty(plugins),
		"components":             orEmpty(comps),
		"nodes":                  nodes,
		"fault_tolerance_groups": orEmpty(ft),
		"warnings":               strs(m.Warnings),
	}
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// nodeVolumes is the volumes_roles_mapping of the node's roles, in role order, the
// first allocation of each volume id.
func (m *Model) nodeVolumes(roles []string) []any {
	out := []any{}
	seen := map[string]bool{}
	for _, r := range roles {
		for _, it := range items(m.Volumes.RolesMapping[r]) {
			id := it.Get("id").String()
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, it.Interface())
		}
	}
	return out
}

// EncodeFile encodes one node file or task catalogue of the stored layout
// (format 2) by its path, as Stream writes it: for a reader that kept the digests
// of a render but not every file's bytes.
func EncodeFile(rs []*Rendered, name string) ([]byte, error) {
	parts := strings.Split(name, "/")
	addr, addrErr := ParseAddress(name)
	for _, r := range rs {
		if len(parts) < 3 || r.Model.Cluster.Name != parts[0] {
			continue
		}
		e := newNodeEncoder(&defBlocks{})
		switch {
		case len(parts) == 3 && parts[1] == "tasks" && strings.HasSuffix(parts[2], ".yaml"):
			if g := r.Graph(strings.TrimSuffix(parts[2], ".yaml")); g != nil {
				data, err := e.catalogue(r.Model, g)
				return bytes.Clone(data), err
			}
		case addrErr == nil:
			if g := r.Graph(addr.Graph); g != nil {
				if ng := g.Node(addr.Node); ng != nil && slices.Contains(g.Nodes, ng) {
					data, err := e.nodeFile(r.Model, g, ng)
					return bytes.Clone(data), err
				}
			}
		}
	}
	return nil, fmt.Errorf("%s: no such node file or task catalogue in the render", name)
}
