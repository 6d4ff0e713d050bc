package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// The artifact API: what nodes' agents read.
//
//	GET /api/v1/clusters/<cluster>                              the cluster as applied (JSON)
//	GET /api/v1/clusters/<cluster>/nodes/<node>/graphs/<graph>  the node's applied graph
//
// Everything comes from the applied set: the state's manifest (artifact path →
// sha256) says what exists and its digest, and the bytes are read from the set of
// that serial and checked against the digest before they are served. Names in
// the URL must be names the loader accepts for paths (loader.IsName) before any
// path is built from them.
const (
	// DefaultMaxWait is the longest ?wait= served; a longer one is shortened.
	DefaultMaxWait = 60 * time.Second
	// MinMaxWait is the floor of MaxWait (serve --max-wait): below it, an
	// agent whose poll is answered at once polls again at once (--max-wait 0s
	// let one agent make 18,650 requests in 11 s).
	MinMaxWait = time.Second
	// DefaultMaxWaiting is how many requests may wait at once; beyond it, 429
	// with Retry-After. A waiting request costs about 26 KB of memory (its
	// goroutine, the connection's buffers and the request), so 10,000 of them
	// about 260 MB, and a socket each.
	DefaultMaxWaiting = 10000
	// maxCacheBytes bounds the verified graphs and JSON renderings kept in
	// memory (by digest).
	maxCacheBytes = 32 << 20
)

// artifactIndex is the applied state the API answers from, with the waiters of
// each artifact.
type artifactIndex struct {
	mu      sync.Mutex
	st      *state.State             // nil until the first state is seen
	changed map[string]chan struct{} // artifact path → closed when its digest changes

	cacheMu    sync.Mutex
	cache      map[string]variant // "yaml:" or "json:" + the YAML's digest → what is served
	cacheBytes int
}

type variant struct {
	body []byte
	etag string
}

// observe records st as the applied state and wakes the waiters of every
// graph whose view (viewDigest) differs from the previous state's. Called by the loop
// after each reconcile (Loop.OnState, reconciled), and by a request that finds current moved.
func (s *Server) observe(st *state.State) {
	ix := &s.index
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.st != nil && ix.st.Serial == st.Serial && ix.st.Lineage == st.Lineage {
		return
	}
	old := ix.st
	ix.st = st
	if old == nil || old.Serial != st.Serial {
		s.kickAutoDeploy()
	}
	if s.Loop.Reports != nil && st.Serial > 0 && (old == nil || old.Serial != st.Serial) {
		// The reports of nodes no longer applied go (in the background: the
		// backend is written).
		go func() {
			if err := s.Loop.Reports.Prune(context.Background(), st); err != nil {
				s.Loop.Log.Warn("removing the reports of nodes no longer applied", "error", redact.Text(err.Error()))
			}
		}()
	}
	for name, ch := range ix.changed {
		if old == nil || viewOf(old, name) != viewOf(st, name) {
			close(ch)
			delete(ix.changed, name)
		}
	}
}

// applied returns the applied state, reloading it when the work directory's
// current set is not the one known (an apply by another process).
func (s *Server) applied() (*state.State, error) {
	ix := &s.index
	ix.mu.Lock()
	st := ix.st
	ix.mu.Unlock()
	if st != nil && st.Serial == s.Loop.Workdir.CurrentSerial() {
		return st, nil
	}
	st, err := s.Loop.Workdir.ReadState()
	if err != nil {
		return nil, err
	}
	s.observe(st)
	return st, nil
}

// watch returns a channel closed when artifact name's digest is no longer sum,
// already closed when it differs now.
func (s *Server) watch(name, sum string) <-chan struct{} {
	ix := &s.index
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.st == nil || viewOf(ix.st, name) != sum {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	ch, ok := ix.changed[name]
	if !ok {
		if ix.changed == nil {
			ix.changed = map[string]chan struct{}{}
		}
		ch = make(chan struct{})
		ix.changed[name] = ch
	}
	return ch
}

// authorized checks the bearer token of the read API, when one is configured,
// in constant time (the digests are compared, so the length leaks nothing
// either). It answers 401 itself.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if len(s.APIToken) == 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	want := sha256.Sum256(s.APIToken)
	have := sha256.Sum256([]byte(strings.TrimSpace(got)))
	if ok && subtle.ConstantTimeCompare(have[:], want[:]) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="fuelsync"`)
	msg := "this API needs Authorization: Bearer <token> (the token of serve's --api-token-file)"
	if ok {
		msg = "the bearer token is not the token of serve's --api-token-file"
	}
	http.Error(w, msg, http.StatusUnauthorized)
	return false
}

// checkNames answers 400 for the first of names (kind, value pairs) that is not
// a name the loader accepts for paths.
func checkNames(w http.ResponseWriter, names ...string) bool {
	for i := 0; i < len(names); i += 2 {
		if !loader.IsName(names[i+1]) {
			http.Error(w, nameProblem(names[i], names[i+1]), http.StatusBadRequest)
			return false
		}
	}
	return true
}

// loaderName is loader.IsName: a name of the repository, safe in a path.
func loaderName(s string) bool { return loader.IsName(s) }

// nameProblem says why value is not a valid name of kind.
func nameProblem(kind, value string) string {
	return fmt.Sprintf("%q is not a valid %s name: names start with a lowercase letter or digit and continue with lowercase letters, digits, '.', '_' or '-' (%s), at most %d characters",
		value, kind, loader.NamePattern, loader.MaxNameLength)
}

// appliedOr503 is the applied state, or false after answering 503 (nothing
// applied yet) or 500 (the work directory cannot be read).
func (s *Server) appliedOr503(w http.ResponseWriter) (*state.State, bool) {
	// A follower replica serves only a set it rendered and checked itself.
	if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
		if serving, problem := s.Replica.Serving(); problem != nil || serving == 0 {
			msg := "this replica has not rendered the applied set yet"
			if problem != nil {
				msg = "this replica does not serve the applied state: " + redact.Text(problem.Error())
			}
			w.Header().Set("Retry-After", retryAfter())
			http.Error(w, msg, http.StatusServiceUnavailable)
			return nil, false
		}
	}
	st, err := s.applied()
	if err != nil {
		http.Error(w, "reading the applied state: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return nil, false
	}
	if st.Serial == 0 {
		w.Header().Set("Retry-After", retryAfter())
		http.Error(w, "nothing is applied yet", http.StatusServiceUnavailable)
		return nil, false
	}
	return st, true
}

// appliedCluster is the applied state and its cluster; it answers 503 when
// nothing is served yet, 404 when the cluster is not in it, and returns
// false then.
func (s *Server) appliedCluster(w http.ResponseWriter, cluster string) (*state.State, *state.ClusterState, bool) {
	st, ok := s.appliedOr503(w)
	if !ok {
		return nil, nil, false
	}
	cs := st.Clusters[cluster]
	if cs == nil {
		clusterNotFound(w, st, cluster)
		return nil, nil, false
	}
	return st, cs, true
}

// clusterNotFound answers 404 naming the applied clusters.
func clusterNotFound(w http.ResponseWriter, st *state.State, cluster string) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range st.Clusters {
			if !yield(n) {
				return
			}
		}
	})
	http.Error(w, fmt.Sprintf("no cluster %q in the applied set (serial %d, revision %.12s); applied clusters: %s",
		cluster, st.Serial, st.Revision, strings.Join(names, ", ")), http.StatusNotFound)
}

// ClusterSummary is GET /api/v1/clusters/<cluster>: the cluster as applied.
type ClusterSummary struct {
	Cluster  string `json:"cluster"`
	Serial   int64  `json:"serial"`
	Revision string `json:"revision"`
	// Status, AppliedRevision, HeadRevision, Problems and Pending are those
	// of its status line (GET /api/v1/clusters).
	Status          string         `json:"status"`
	AppliedRevision string         `json:"applied_revision"`
	HeadRevision    string         `json:"head_revision"`
	Problems        []string       `json:"problems"`
	Pending         *state.Pending `json:"pending,omitempty"`
	// Health and the counts are those of its status line: its nodes'
	// convergence (docs/reports.md).
	Health           string   `json:"health"`
	NodesConverged   int      `json:"nodes_converged"`
	NodesProgressing int      `json:"nodes_progressing"`
	NodesFailed      int      `json:"nodes_failed"`
	HealthProblems   []string `json:"health_problems"`
	// LastRun is its newest deployment run, as in GET /api/v1/clusters.
	LastRun *api.Run `json:"last_run,omitempty"`
	// Primary maps each tag with a primary to its node.
	Primary map[string]string `json:"primary"`
	Nodes   []NodeSummary     `json:"nodes"`
	// Reconciles are its last reconciles that applied it or changed its
	// status, newest first (serve --reconcile-history).
	Reconciles []*reports.Reconcile `json:"reconciles"`
}

// NodeSummary is a node of a ClusterSummary: its graphs map each graph type to
// the sha256 of its artifact (the ETag the graph is served with as YAML).
type NodeSummary struct {
	Name   string            `json:"name"`
	ID     int               `json:"id"`
	Roles  []string          `json:"roles"`
	Graphs map[string]string `json:"graphs"`
	// State is converged, progressing or failed; Report the node's last
	// report, without its tasks (nil before any).
	State  string      `json:"state"`
	Report *NodeReport `json:"report,omitempty"`
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) {
		return
	}
	st, cs, ok := s.appliedCluster(w, cluster)
	if !ok {
		return
	}
	sum := ClusterSummary{Cluster: cluster, Serial: st.Serial, Revision: st.Revision, Primary: cs.Primary, Nodes: []NodeSummary{}}
	for _, info := range s.Loop.Clusters(st) {
		if info.Name == cluster {
			sum.Status, sum.AppliedRevision, sum.HeadRevision, sum.Problems, sum.Pending = info.Status, info.AppliedRevision, info.HeadRevision, info.Problems, info.Pending
			sum.Health, sum.NodesConverged, sum.NodesProgressing, sum.NodesFailed, sum.HealthProblems = info.Health, info.NodesConverged, info.NodesProgressing, info.NodesFailed, info.HealthProblems
		}
	}
	sum.LastRun = s.lastRun(r.Context(), cluster)
	var last map[string]*reports.Report
	sum.Reconciles = []*reports.Reconcile{}
	if s.Loop.Reports != nil {
		last = s.Loop.Reports.Cluster(cluster)
		if recs, err := s.Loop.Reports.Reconciles(r.Context(), cluster); err == nil && recs != nil {
			sum.Reconciles = recs
		}
	}
	if sum.Primary == nil {
		sum.Primary = map[string]string{}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range cs.Nodes {
			if !yield(n) {
				return
			}
		}
	}) {
		n := cs.Nodes[name]
		ns := NodeSummary{Name: name, ID: n.ID, Roles: n.Roles, Graphs: map[string]string{},
			State: s.Loop.Reports.NodeState(st, cluster, name, last[name]), Report: nodeReport(last[name])}
		if ns.Roles == nil {
			ns.Roles = []string{}
		}
		graphs, err := s.nodeGraphs(st, cluster, name)
		if err != nil {
			http.Error(w, redact.Text(err.Error()), http.StatusInternalServerError)
			return
		}
		ns.Graphs = graphs
		sum.Nodes = append(sum.Nodes, ns)
	}
	body, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(append(body, '\n'))
}

// nodeGraphs maps each graph type of node to its ETag (as YAML, without
// quotes) in the applied state st.
func (s *Server) nodeGraphs(st *state.State, cluster, node string) (map[string]string, error) {
	graphs := map[string]string{}
	prefix := render.NodeDir(cluster, node) + "/"
	for file := range st.Artifacts {
		if !strings.HasPrefix(file, prefix) {
			continue
		}
		if a, err := render.ParseAddress(file); err == nil {
			_, etag, err := s.artifact(st, file, viewOf(st, file), false)
			if err != nil {
				return nil, err
			}
			graphs[a.Graph] = strings.Trim(etag, `"`)
		}
	}
	return graphs, nil
}

// graph serves a node's applied graph. With If-None-Match naming the current
// ETag and ?wait=D, it waits up to D (at most MaxWait) for the artifact to
// change: 200 with the new graph when it does, 304 at the deadline.
func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	cluster, node, graph := r.PathValue("cluster"), r.PathValue("node"), r.PathValue("graph")
	if !s.authorizedNode(w, r, cluster, node) {
		return
	}
	if !checkNames(w, "cluster", cluster, "node", node, "graph", graph) {
		return
	}
	var wait time.Duration
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := parseWait(q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		wait = min(d, s.MaxWait)
	}
	asJSON := wantsJSON(r.Header.Get("Accept"))
	w.Header().Set("Vary", "Accept")
	name := render.NodeAddress(cluster, node, graph).String()
	deadline := time.Now().Add(wait)
	inm := r.Header.Get("If-None-Match")
	for attempt := 0; ; attempt++ {
		st, ok := s.appliedOr503(w)
		if !ok {
			return
		}
		sum, ok := viewDigest(st.Artifacts, name)
		if !ok {
			s.graphNotFound(w, st, cluster, node, graph)
			return
		}
		etag := `"` + sum + `"`
		var body []byte
		if asJSON || !matchesETag(inm, etag) { // a YAML revalidation reads nothing
			var err error
			body, etag, err = s.artifact(st, name, sum, asJSON)
			if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
				continue // the set was replaced and pruned meanwhile: read the new state
			}
			if err != nil {
				http.Error(w, redact.Text(err.Error()), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Cache-Control", "no-cache")
		if !matchesETag(inm, etag) {
			if asJSON {
				w.Header().Set("Content-Type", "application/json")
			} else {
				w.Header().Set("Content-Type", "application/yaml")
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			if r.Method != http.MethodHead {
				w.Write(body)
			}
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if !s.waitFor(w, r, name, sum, left) {
			return
		}
		attempt = 0
	}
}

// waitFor waits until artifact name's digest is no longer sum, or for d, or
// until the client goes; false when it answered (429 with Retry-After at the
// cap) or the client went.
func (s *Server) waitFor(w http.ResponseWriter, r *http.Request, name, sum string, d time.Duration) bool {
	select {
	case s.waiters <- struct{}{}:
		defer func() { <-s.waiters }()
	default:
		tooMany(w, fmt.Sprintf("too many waiting requests (%d); retry after Retry-After seconds, or ask without wait", cap(s.waiters)))
		return false
	}
	// The server's write timeout (from the end of the headers to the end of
	// the answer) would end the wait: it is pushed past it, by the write
	// timeout left for the answer. (The read timeout no longer applies once
	// the request is read.)
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + s.writeTimeout))
	done := Waiting(r.Context()) // out of the connection cap while it waits
	defer done()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-s.watch(name, sum):
		return true
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// artifact returns the bytes served for artifact name of st (digest sum) and
// their ETag: the file read from the set of st's serial and checked against
// sum, or its JSON rendering. Both are cached by sum (content-addressed, so an
// entry stays right across applies): when an apply wakes thousands of agents of
// a few graphs, each file is read and hashed once.
func (s *Server) artifact(st *state.State, name, sum string, asJSON bool) ([]byte, string, error) {
	key := "yaml:" + sum
	if asJSON {
		key = "json:" + sum
	}
	ix := &s.index
	ix.cacheMu.Lock()
	v, ok := ix.cache[key]
	ix.cacheMu.Unlock()
	if ok {
		return v.body, v.etag, nil
	}
	// The node's expanded view, computed from the applied set (sum is its
	// viewDigest); served with the sha256 of its bytes as ETag.
	data, err := expandedGraph(s.Loop.Workdir.SetFS(st.Serial), st.Artifacts, name)
	if err != nil {
		return nil, "", fmt.Errorf("%w (serial %d)", err, st.Serial)
	}
	ds := sha256.Sum256(data)
	v = variant{body: data, etag: `"` + hex.EncodeToString(ds[:]) + `"`}
	if asJSON {
		body, err := yamlToJSON(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s as JSON: %w", name, err)
		}
		js := sha256.Sum256(body)
		v = variant{body: body, etag: `"` + hex.EncodeToString(js[:]) + `"`}
	}
	ix.cacheMu.Lock()
	if ix.cache == nil || ix.cacheBytes+len(v.body) > maxCacheBytes {
		ix.cache, ix.cacheBytes = map[string]variant{}, 0 // start over: the next wake-up fills it again
	}
	if _, ok := ix.cache[key]; !ok && len(v.body) <= maxCacheBytes {
		ix.cache[key] = v
		ix.cacheBytes += len(v.body)
	}
	ix.cacheMu.Unlock()
	return v.body, v.etag, nil
}

// graphNotFound answers 404 saying which of cluster, node and graph is unknown.
func (s *Server) graphNotFound(w http.ResponseWriter, st *state.State, cluster, node, graph string) {
	cs := st.Clusters[cluster]
	if cs == nil {
		clusterNotFound(w, st, cluster)
		return
	}
	if _, ok := cs.Nodes[node]; !ok {
		http.Error(w, fmt.Sprintf("cluster %q has no node %q in the applied set (serial %d, revision %.12s)", cluster, node, st.Serial, st.Revision), http.StatusNotFound)
		return
	}
	var graphs []string
	prefix := render.NodeDir(cluster, node) + "/"
	for file := range st.Artifacts {
		if !strings.HasPrefix(file, prefix) {
			continue
		}
		if a, err := render.ParseAddress(file); err == nil {
			graphs = append(graphs, a.Graph)
		}
	}
	slices.Sort(graphs)
	http.Error(w, fmt.Sprintf("node %q of cluster %q has no graph %q in the applied set (serial %d); its graphs: %s",
		node, cluster, graph, st.Serial, strings.Join(graphs, ", ")), http.StatusNotFound)
}

// parseWait reads ?wait=: a Go duration (60s, 2m) or whole seconds (60).
func parseWait(q string) (time.Duration, error) {
	if n, err := strconv.Atoi(q); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("wait=%q is not a duration (for example wait=60s)", q)
	}
	return d, nil
}

// wantsJSON reports whether Accept asks for JSON before YAML.
func wantsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json":
			return true
		case "application/yaml", "application/x-yaml", "text/yaml", "*/*":
			return false
		}
	}
	return false
}

// matchesETag reports whether an If-None-Match header names etag (or is *);
// weak validators compare equal to strong ones, as RFC 9110 says for
// If-None-Match.
func matchesETag(header, etag string) bool {
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if part == "*" || part == etag {
			return true
		}
	}
	return false
}

// yamlToJSON converts a YAML document to indented JSON, keeping its keys' order.
func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, &doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return writeJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}
