package etcdstate

// The units a process keeps decoded (partCache), so that neither a read nor a
// commit decodes or encodes the clusters that did not change.
//
// A read fetches and decodes only the units whose parts the cache does not
// hold; every other unit it takes decoded from the cache. The state it returns
// is a copy (fresh maps and records; the strings, which Go never changes, are
// shared): a caller that changes it changes nothing in the cache, nor in the
// state of the next read.
//
// A commit compares each cluster unit of the state it writes with the unit of
// the same key in the header it replaces (one whose parts that header names),
// record by record and file by file, exactly (nil and empty told apart): equal,
// it names that unit again, without encoding it; otherwise it encodes it as
// before. Nothing is compared by a fingerprint.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// cachedUnit is a unit of a state this process read or committed. It is never
// changed once made, and never handed out: a read copies it.
type cachedUnit struct {
	// plainSize and sum are its JSON's size and sha256.
	plainSize int64
	sum       [32]byte
	// rest is the JSON of a rest unit (nil for a cluster unit); a read
	// parses it again (it is small: it holds no cluster a repository can
	// name).
	rest []byte
	// doc is a cluster unit, decoded and checked as the unit key (the
	// clusters, artifacts and inputs it holds are all key's).
	doc *unitDoc
	key string
}

// restID is the cache's key for the rest unit of id (a rest and a cluster
// unit of the same parts are kept apart).
func restID(id string) string { return "rest:" + id }

// restUnit is the rest unit of JSON data.
func restUnit(data []byte, sum [32]byte) *cachedUnit {
	return &cachedUnit{plainSize: int64(len(data)), sum: sum, rest: data}
}

// decodeUnit decodes the cluster unit k of JSON data (of sha256 sum) and
// checks that it holds only k's clusters, artifacts and inputs.
func decodeUnit(k string, data []byte, sum [32]byte) (*cachedUnit, error) {
	cu := &cachedUnit{plainSize: int64(len(data)), sum: sum, doc: &unitDoc{}}
	if err := json.Unmarshal(data, cu.doc); err != nil {
		return nil, fmt.Errorf("its unit %q does not parse: %w", k, err)
	}
	return cu.asKey(k)
}

// asKey returns cu checked as the unit k: each cluster, artifact and input it
// holds must be of k's clusters (k itself, or the clusters of bucket k).
func (cu *cachedUnit) asKey(k string) (*cachedUnit, error) {
	if cu.key == k && cu.doc != nil {
		return cu, nil
	}
	mine := func(cluster string) bool {
		if isBucket(k) {
			return loader.IsName(cluster) && unitKey(cluster, maxUnits+1) == k
		}
		return cluster == k
	}
	doc := cu.doc
	for name := range doc.Clusters {
		if !mine(name) {
			return nil, fmt.Errorf("its unit %q holds cluster %q", k, name)
		}
	}
	for p := range doc.Artifacts {
		if !mine(state.ClusterOf(p)) {
			return nil, fmt.Errorf("its unit %q holds the artifact %q", k, p)
		}
	}
	for c := range doc.ClusterInputs {
		if !mine(c) {
			return nil, fmt.Errorf("its unit %q holds the cluster_inputs of %q", k, c)
		}
	}
	out := *cu
	out.key = k
	return &out, nil
}

// mergeUnits adds to st (a rest just parsed: its maps are its own) copies of
// the clusters, artifacts and inputs of the cluster units, in the order given;
// none may be in two units, nor in the rest.
func mergeUnits(st *state.State, units []*cachedUnit) error {
	nc, na, ni := len(st.Clusters), len(st.Artifacts), len(st.ClusterInputs)
	for _, cu := range units {
		nc, na, ni = nc+len(cu.doc.Clusters), na+len(cu.doc.Artifacts), ni+len(cu.doc.ClusterInputs)
	}
	// The maps at their size at once: no growth while tens of thousands of
	// entries go in.
	rest := st.Artifacts
	st.Clusters, st.Artifacts = growMap(st.Clusters, nc), growMap(st.Artifacts, na)
	if ni > 0 {
		st.ClusterInputs = growMap(st.ClusterInputs, ni)
		if st.ClusterInputs == nil {
			st.ClusterInputs = make(map[string]string, ni)
		}
	}
	for _, cu := range units {
		for name, cs := range cu.doc.Clusters {
			if _, dup := st.Clusters[name]; dup {
				return fmt.Errorf("cluster %q is in two units", name)
			}
			st.Clusters[name] = cloneCluster(cs)
		}
		for c, fp := range cu.doc.ClusterInputs {
			if _, dup := st.ClusterInputs[c]; dup {
				return fmt.Errorf("the cluster_inputs of %q are in two units", c)
			}
			st.ClusterInputs[c] = fp
		}
		// The artifacts, the most numerous, without a lookup each: a path
		// in two units shows in the count, and is then looked for.
		maps.Copy(st.Artifacts, cu.doc.Artifacts)
	}
	if len(st.Artifacts) != na {
		return dupArtifact(rest, units)
	}
	return nil
}

// dupArtifact names an artifact that two units, or a unit and the rest
// (whose artifacts are rest), hold.
func dupArtifact(rest map[string]string, units []*cachedUnit) error {
	seen := make(map[string]bool, len(rest))
	for p := range rest {
		seen[p] = true
	}
	for _, cu := range units {
		for p := range cu.doc.Artifacts {
			if seen[p] {
				return fmt.Errorf("the artifact %q is in two units", p)
			}
			seen[p] = true
		}
	}
	return fmt.Errorf("an artifact is in two units")
}

// growMap returns m, or a copy of it with room for n entries.
func growMap[V any](m map[string]V, n int) map[string]V {
	if n <= len(m) {
		return m
	}
	out := make(map[string]V, n)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cloneCluster is a copy of cs that shares nothing a caller may change with
// it: its maps, its nodes' roles, its problems, its pending plan.
func cloneCluster(cs *state.ClusterState) *state.ClusterState {
	if cs == nil {
		return nil
	}
	out := *cs
	if cs.Nodes != nil {
		out.Nodes = make(map[string]state.NodeState, len(cs.Nodes))
		// The roles of all nodes in one array, each node's capped to its
		// own (an append reallocates).
		n := 0
		for _, ns := range cs.Nodes {
			n += len(ns.Roles)
		}
		roles := make([]string, 0, n)
		for name, ns := range cs.Nodes {
			if ns.Roles != nil {
				i := len(roles)
				roles = append(roles, ns.Roles...)
				ns.Roles = roles[i:len(roles):len(roles)]
			}
			out.Nodes[name] = ns
		}
	}
	if cs.Primary != nil {
		out.Primary = maps.Clone(cs.Primary)
	}
	out.Problems = slices.Clone(cs.Problems)
	if cs.Pending != nil {
		p := *cs.Pending
		out.Pending = &p
	}
	return &out
}

// sameCluster says a and b are equal in every field, so that they encode to
// the same JSON: nil and empty told apart where JSON tells them apart (not
// the problems: "omitempty"). (TestSameClusterEveryField fails
// when a field is added to state.ClusterState, NodeState or Pending that it
// does not compare.)
func sameCluster(a, b *state.ClusterState) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Revision != b.Revision || a.Serial != b.Serial || a.Status != b.Status || a.File != b.File ||
		!slices.Equal(a.Problems, b.Problems) ||
		(a.Pending == nil) != (b.Pending == nil) || a.Pending != nil && *a.Pending != *b.Pending ||
		(a.Primary == nil) != (b.Primary == nil) || !maps.Equal(a.Primary, b.Primary) ||
		(a.Nodes == nil) != (b.Nodes == nil) || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for name, na := range a.Nodes {
		nb, ok := b.Nodes[name]
		if !ok || na.ID != nb.ID || (na.Roles == nil) != (nb.Roles == nil) || !slices.Equal(na.Roles, nb.Roles) {
			return false
		}
	}
	return true
}
