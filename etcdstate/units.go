package etcdstate

// Format 2 of the state on etcd: the state cut per cluster.
//
// Format 1 gzipped the whole state document and cut the result in parts, so
// that a change of one node rewrote every part (gzip runs over the whole
// document: 2.4 MB put at 20,000 nodes, every commit) and every reader read
// them all again. Format 2 gzips each cluster's slice of the state on its
// own, a unit:
//
//	clusters[<cluster>]  its ClusterState, its artifacts (the paths
//	                     state.ClusterOf puts in it), its cluster_inputs
//	rest                 a state document of everything else: lineage,
//	                     serial, revision, tool version, inputs, the
//	                     manifest and any path of no cluster
//
// Each unit is one part, or several of at most EtcdPartSize, named by the
// sha256 of its bytes (<ns>/parts/<sha256>). The header names, per unit, its
// gzipped and plain sizes and its parts' digests. Above maxUnits clusters,
// the clusters share units: "~<n>" holds the clusters whose name hashes
// (FNV-1a) to n of maxUnits, so the header stays bounded.
//
// A commit writes only the parts the header it replaces does not name: an
// unchanged cluster packs to the same bytes, the same digest, and is not
// written again. A process keeps the units of the last header it read or
// committed, decoded (partCache, unitcache.go): a reader fetches and decodes
// only the units it lacks, and a writer encodes only the cluster units that
// differ from the units it keeps.
//
// Parts are removed by one rule, so that none a header names is ever removed
// while that header is current: a part is removed only if it is not named by
// a committed header H and was last put before H was committed (a compare in
// the delete's transaction). A writer puts every part that the header it
// read does not name after reading it, so each part a new header relies on
// was either named by the header it replaces (which the commit compares) or
// put after that header. A commit that does not happen removes only the
// parts it created itself that nobody has put since.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

const (
	// formatV2 is the format_version of a header of per-cluster units.
	formatV2 = "2"
	// maxUnits bounds the clusters of a header: above it, clusters share
	// units by the hash of their names.
	maxUnits = 1000
	// maxHeaderSizeV2 bounds a format-2 header: maxUnits units of a
	// 128-byte name and one digest each take under 256 KiB.
	maxHeaderSizeV2 = 512 << 10
	// maxPartCompares bounds the compares of new parts in a commit's
	// transaction (etcd refuses more than 128 operations, --max-txn-ops);
	// beyond it, the removal rule alone keeps them.
	maxPartCompares = 100
)

// etcdUnit is a unit in a format-2 header.
type etcdUnit struct {
	// Size is the gzipped unit's, PlainSize its JSON's.
	Size      int   `json:"size"`
	PlainSize int64 `json:"plain_size"`
	// Parts are the sha256 digests of its parts, in order: the keys
	// <ns>/parts/<digest>.
	Parts []string `json:"parts"`
}

// id names a unit's content: its parts' digests.
func (u *etcdUnit) id() string { return strings.Join(u.Parts, ",") }

// unitDoc is a cluster unit's JSON.
type unitDoc struct {
	Clusters      map[string]*state.ClusterState `json:"clusters"`
	Artifacts     map[string]string              `json:"artifacts,omitempty"`
	ClusterInputs map[string]string              `json:"cluster_inputs,omitempty"`
}

// unitKey is the unit of cluster in a state of n clusters.
func unitKey(cluster string, n int) string {
	if n <= maxUnits {
		return cluster
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cluster))
	return "~" + strconv.Itoa(int(h.Sum32()%maxUnits))
}

// isBucket tells whether k is a shared unit's key, "~<n>" with n < maxUnits.
func isBucket(k string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(k, "~"))
	return strings.HasPrefix(k, "~") && err == nil && n >= 0 && n < maxUnits && k == "~"+strconv.Itoa(n)
}

// partCache holds the units of the last format-2 header this process read or
// committed, decoded (unitcache.go): a reader fetches and decodes only the
// units it lacks, a writer neither encodes nor writes again a unit that did
// not change. Bounded: it holds one state, at most state.MaxSize of JSON.
type partCache struct {
	mu sync.Mutex
	// rev is the ModRevision of the header, serial its serial (0: none).
	rev, serial int64
	units       map[string]*cachedUnit // by etcdUnit.id (restID for the rest)
	rest        etcdUnit               // the header's rest
	keys        map[string]etcdUnit    // the header's cluster units
	parts       map[string]bool        // every digest the header names
}

// set makes the cache hold the units of the header h at revision rev,
// unless it holds a later one.
func (c *partCache) set(rev int64, h *etcdHeader, units map[string]*cachedUnit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev < c.rev {
		return
	}
	c.rev, c.serial, c.units = rev, h.Serial, units
	c.rest, c.keys = *h.Rest, make(map[string]etcdUnit, len(h.Clusters))
	for k, u := range h.Clusters {
		c.keys[k] = *u
	}
	c.parts = h.digests()
}

// snapshot returns the cached units (a map set replaces, never changes).
func (c *partCache) snapshot() map[string]*cachedUnit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.units
}

// keptUnit is a unit of the header a commit replaces that the commit may
// name again without writing it: that header names its parts.
type keptUnit struct {
	ref etcdUnit
	cu  *cachedUnit
}

// prior is what a commit may keep of the header it replaces: its cluster
// units, decoded, by key (to compare, unitcache.go).
type prior struct {
	byKey map[string]keptUnit
}

// prior returns the cached cluster units whose parts are all in known (the
// digests the header being replaced names).
func (c *partCache) prior(known map[string]bool) *prior {
	c.mu.Lock()
	defer c.mu.Unlock()
	pr := &prior{byKey: map[string]keptUnit{}}
	for k, u := range c.keys {
		cu := c.units[u.id()]
		if cu == nil || cu.doc == nil || len(known) == 0 {
			continue
		}
		named := true
		for _, p := range u.Parts {
			named = named && known[p]
		}
		if named {
			pr.byKey[k] = keptUnit{ref: u, cu: cu}
		}
	}
	return pr
}

// units returns the header's units in a fixed order: the rest first, then
// the clusters by key.
func (h *etcdHeader) units() []*etcdUnit {
	out := []*etcdUnit{h.Rest}
	for _, k := range slices.Sorted(maps.Keys(h.Clusters)) {
		out = append(out, h.Clusters[k])
	}
	return out
}

// checkV2 checks a format-2 header: at most maxUnits units, each a cluster
// name or a bucket, each of sizes within state.MaxSize (and all together),
// with as many parts as its size needs, each a sha256.
func (e *Etcd) checkV2(h *etcdHeader, name string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("the state %s in %s: "+format, append([]any{name, e}, args...)...)
	}
	if h.Rest == nil {
		return bad("its header names no rest part")
	}
	if len(h.Parts) > 0 || h.SHA256 != "" {
		return bad("its header of format_version 2 has the parts of format 1")
	}
	if len(h.Clusters) > maxUnits {
		return bad("its header names %d units, over %d", len(h.Clusters), maxUnits)
	}
	var size, plain int64
	check := func(k string, u *etcdUnit) error {
		if u == nil {
			return bad("its unit %q is null", k)
		}
		if u.Size <= 0 || u.Size > state.MaxSize || u.PlainSize <= 0 || u.PlainSize > state.MaxSize {
			return bad("its unit %q says it is %d bytes gzipped, %d bytes whole: not 1 to %d bytes", k, u.Size, u.PlainSize, state.MaxSize)
		}
		if want := (u.Size + EtcdPartSize - 1) / EtcdPartSize; len(u.Parts) != want {
			return bad("its unit %q names %d parts for %d bytes (%d expected)", k, len(u.Parts), u.Size, want)
		}
		for _, p := range u.Parts {
			if !isSHA256(p) {
				return bad("its unit %q names the part %q, which is not a sha256", k, p)
			}
		}
		size += int64(u.Size)
		plain += u.PlainSize
		return nil
	}
	if err := check("rest", h.Rest); err != nil {
		return err
	}
	for k, u := range h.Clusters {
		if !loader.IsName(k) && !isBucket(k) {
			return bad("its header names the unit %q, which is neither a cluster name nor ~0 to ~%d", k, maxUnits-1)
		}
		if err := check(k, u); err != nil {
			return err
		}
	}
	if size > state.MaxSize || plain > state.MaxSize || size != int64(h.Size) || plain != h.PlainSize {
		return bad("its units add up to %d bytes gzipped, %d whole; its header says %d, %d (a state is at most %d)", size, plain, h.Size, h.PlainSize, state.MaxSize)
	}
	return nil
}

// readV2 reads the state of the format-2 header h, which is at revision
// hdrRev; its parts at revision rev, those of the units the cache lacks.
// The units it has are taken decoded, and copied (unitcache.go).
func (e *Etcd) readV2(ctx context.Context, h etcdHeader, rev, hdrRev int64) (*state.State, error) {
	cached := e.cache.snapshot()
	units := make(map[string]*cachedUnit, len(h.Clusters)+1)
	// unit returns the unit u at key k ("" for the rest).
	unit := func(k string, u *etcdUnit) (*cachedUnit, error) {
		id := u.id()
		if k == "" {
			id = restID(id)
		}
		cu, ok := cached[id]
		if !ok || cu.plainSize != u.PlainSize {
			data, err := e.fetchUnit(ctx, h.Serial, u, rev)
			if err != nil {
				return nil, err
			}
			if k == "" {
				cu = restUnit(data, sha256.Sum256(data))
			} else if cu, err = decodeUnit(k, data, sha256.Sum256(data)); err != nil {
				return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
			}
		} else if k != "" {
			var err error
			if cu, err = cu.asKey(k); err != nil {
				return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
			}
		}
		units[id] = cu
		return cu, nil
	}
	rest, err := unit("", h.Rest)
	if err != nil {
		return nil, err
	}
	st, err := state.Parse(e.key("state")+" (its rest)", rest.rest)
	if err != nil {
		return nil, err
	}
	if st.Serial != h.Serial || st.Lineage != h.Lineage {
		return nil, fmt.Errorf("the state in %s: its header says serial %d, lineage %s, its document serial %d, lineage %s", e, h.Serial, h.Lineage, st.Serial, st.Lineage)
	}
	keys := slices.Sorted(maps.Keys(h.Clusters))
	docs := make([]*cachedUnit, len(keys))
	for i, k := range keys {
		if docs[i], err = unit(k, h.Clusters[k]); err != nil {
			return nil, err
		}
	}
	if err := mergeUnits(st, docs); err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
	}
	e.cache.set(hdrRev, &h, units)
	return st, nil
}

// fetchUnit reads the parts of u at revision rev, checks each against its
// digest and the unit's size, and expands them: at most u.PlainSize bytes,
// so a small part that expands to gigabytes (a gzip bomb) is refused after
// reading no more than the promise.
func (e *Etcd) fetchUnit(ctx context.Context, serial int64, u *etcdUnit, rev int64) ([]byte, error) {
	packed := make([]byte, 0, u.Size)
	for _, d := range u.Parts {
		k := e.key("parts/" + d)
		pr, err := e.client.Get(ctx, k, clientv3.WithRev(rev))
		if err != nil {
			if strings.Contains(err.Error(), "compacted") {
				return nil, errPartGone
			}
			return nil, e.wrap("reading the state from", err)
		}
		e.fetched.Add(1)
		if len(pr.Kvs) == 0 {
			return nil, fmt.Errorf("the state in %s (serial %d) names part %s, which is missing", e, serial, k)
		}
		v := pr.Kvs[0].Value
		if sum := sha256.Sum256(v); hex.EncodeToString(sum[:]) != d || len(packed)+len(v) > u.Size {
			return nil, fmt.Errorf("the state in %s (serial %d): its part %s does not match its digest or its unit's size", e, serial, k)
		}
		packed = append(packed, v...)
	}
	if len(packed) != u.Size {
		return nil, fmt.Errorf("the state in %s (serial %d): the parts %s are %d bytes, where its header says %d", e, serial, u.id(), len(packed), u.Size)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, serial, err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, u.PlainSize+1))
	if err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, serial, err)
	}
	if int64(len(data)) > u.PlainSize {
		return nil, fmt.Errorf("the state in %s (serial %d): a unit expands beyond %d bytes, which its header promises: refused, read no further", e, serial, u.PlainSize)
	}
	if int64(len(data)) != u.PlainSize {
		return nil, fmt.Errorf("the state in %s (serial %d): a unit expands to %d bytes, where its header says %d", e, serial, len(data), u.PlainSize)
	}
	return data, nil
}

// packedUnit is a unit of a state being committed.
type packedUnit struct {
	ref *etcdUnit
	cu  *cachedUnit
	// parts are its gzipped parts; nil for a unit the header it replaces
	// names already.
	parts [][]byte
}

// unitPlan is a cluster unit of a state being committed (planUnits).
type unitPlan struct {
	clusters []string
	// kept is the unit of its key in the header replaced; changed says the
	// unit differs from it (or there is none to compare with), and then doc
	// is the unit to encode.
	kept    *keptUnit
	changed bool
	doc     *unitDoc
	// artifacts and inputs count the unit's; scan says changed was found
	// after its artifacts went by (planUnits reads them again).
	artifacts, inputs int
	scan              bool
}

// change marks u changed and gives it a doc of its clusters' records.
func (u *unitPlan) change(st *state.State) {
	if u.doc != nil {
		return
	}
	u.changed = true
	u.doc = &unitDoc{Clusters: make(map[string]*state.ClusterState, len(u.clusters))}
	for _, c := range u.clusters {
		u.doc.Clusters[c] = st.Clusters[c]
	}
	if u.kept != nil && len(u.kept.cu.doc.Artifacts) > 0 {
		// About as many files as before: no growth while they go in (an
		// empty map is left out of the JSON as a nil one is).
		u.doc.Artifacts = make(map[string]string, len(u.kept.cu.doc.Artifacts))
	}
}

// planUnits cuts st in units: the rest (a state document) and the cluster
// units by key, each compared with the unit of its key in pr: a unit equal to
// it in every record, artifact and input is kept (not encoded again), any
// other gets its doc. A cluster whose name is not one a repository can give
// stays in the rest, with its files, and so do the files and inputs of no
// cluster of st.
func planUnits(st *state.State, pr *prior) (*state.State, map[string]*unitPlan) {
	n := len(st.Clusters)
	plans := map[string]*unitPlan{}
	of := make(map[string]*unitPlan, n)
	rest := &state.State{FormatVersion: "1", Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Clusters: map[string]*state.ClusterState{}, Artifacts: map[string]string{}, Inputs: st.Inputs}
	for _, name := range slices.Sorted(maps.Keys(st.Clusters)) {
		if !loader.IsName(name) {
			rest.Clusters[name] = st.Clusters[name]
			continue
		}
		k := unitKey(name, n)
		u := plans[k]
		if u == nil {
			u = &unitPlan{}
			if ku, ok := pr.byKey[k]; ok {
				u.kept = &ku
			}
			plans[k] = u
		}
		u.clusters = append(u.clusters, name)
		of[name] = u
	}
	for _, u := range plans {
		if u.kept == nil || len(u.clusters) != len(u.kept.cu.doc.Clusters) {
			u.change(st)
			continue
		}
		for _, c := range u.clusters {
			old, ok := u.kept.cu.doc.Clusters[c]
			if !ok || !sameCluster(old, st.Clusters[c]) {
				u.change(st)
				break
			}
		}
	}
	planFiles(st, rest, of)
	for _, u := range plans {
		if !u.changed && (u.artifacts != len(u.kept.cu.doc.Artifacts) || u.inputs != len(u.kept.cu.doc.ClusterInputs)) {
			u.change(st)
			u.scan = true
		}
	}
	for _, u := range plans {
		if u.scan {
			fillUnits(st, of)
			break
		}
	}
	return rest, plans
}

// planFiles gives each artifact and input of st to its cluster's unit (of)
// or to the rest: a changed unit's go in its doc; a kept one's are compared
// with the kept unit's, and a difference changes it (scan: its files are
// read again by fillUnits).
func planFiles(st, rest *state.State, of map[string]*unitPlan) {
	for p, sum := range st.Artifacts {
		u := of[state.ClusterOf(p)]
		switch {
		case u == nil:
			rest.Artifacts[p] = sum
			continue
		case u.doc != nil && !u.scan:
			if u.doc.Artifacts == nil {
				u.doc.Artifacts = map[string]string{}
			}
			u.doc.Artifacts[p] = sum
		case !u.changed:
			if old, ok := u.kept.cu.doc.Artifacts[p]; !ok || old != sum {
				u.change(st)
				u.scan = true
			}
		}
		u.artifacts++
	}
	for c, fp := range st.ClusterInputs {
		u := of[c]
		switch {
		case u == nil:
			if rest.ClusterInputs == nil {
				rest.ClusterInputs = map[string]string{}
			}
			rest.ClusterInputs[c] = fp
			continue
		case u.doc != nil && !u.scan:
			if u.doc.ClusterInputs == nil {
				u.doc.ClusterInputs = map[string]string{}
			}
			u.doc.ClusterInputs[c] = fp
		case !u.changed:
			if old, ok := u.kept.cu.doc.ClusterInputs[c]; !ok || old != fp {
				u.change(st)
				u.scan = true
			}
		}
		u.inputs++
	}
}

// fillUnits puts in the docs of the units found changed after their files
// went by (scan) their artifacts and inputs.
func fillUnits(st *state.State, of map[string]*unitPlan) {
	for p, sum := range st.Artifacts {
		if u := of[state.ClusterOf(p)]; u != nil && u.scan {
			if u.doc.Artifacts == nil {
				u.doc.Artifacts = make(map[string]string, u.artifacts)
			}
			u.doc.Artifacts[p] = sum
		}
	}
	for c, fp := range st.ClusterInputs {
		if u := of[c]; u != nil && u.scan {
			if u.doc.ClusterInputs == nil {
				u.doc.ClusterInputs = map[string]string{}
			}
			u.doc.ClusterInputs[c] = fp
		}
	}
}

// unitPacker encodes and gzips the units of a state being committed.
type unitPacker struct {
	zbuf bytes.Buffer
	zw   *gzip.Writer
}

// pack encodes doc, the unit k ("" for the rest), gzips it and cuts it in
// parts; a cluster unit is decoded again for the cache (what a reader of its
// bytes gets).
func (z *unitPacker) pack(k string, doc any) (*packedUnit, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > state.MaxSize {
		return nil, fmt.Errorf("the state is over the %d bytes a state may be", state.MaxSize)
	}
	sum := sha256.Sum256(data)
	pu := &packedUnit{}
	if k == "" {
		pu.cu = restUnit(data, sum)
	} else if pu.cu, err = decodeUnit(k, data, sum); err != nil {
		return nil, err
	}
	z.zbuf.Reset()
	z.zw.Reset(&z.zbuf)
	_, _ = z.zw.Write(data)
	if err := z.zw.Close(); err != nil {
		return nil, err
	}
	packed := bytes.Clone(z.zbuf.Bytes())
	pu.ref = &etcdUnit{Size: len(packed), PlainSize: int64(len(data))}
	for len(packed) > 0 {
		n := min(len(packed), EtcdPartSize)
		sum := sha256.Sum256(packed[:n])
		pu.ref.Parts = append(pu.ref.Parts, hex.EncodeToString(sum[:]))
		pu.parts = append(pu.parts, packed[:n])
		packed = packed[n:]
	}
	return pu, nil
}

// packV2 packs st in format 2. A cluster unit equal to the unit of its key
// in pr is named again: neither encoded, nor gzipped, nor written again. (A
// unit encoded to the bytes of a unit the header replaced names has the same
// parts, which writeState does not write again.)
func packV2(st *state.State, pr *prior) (etcdHeader, []*packedUnit, error) {
	rest, plans := planUnits(st, pr)
	h := etcdHeader{FormatVersion: formatV2, Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Encoding: "gzip", Clusters: map[string]*etcdUnit{}}
	out := make([]*packedUnit, 0, len(plans)+1)
	z := &unitPacker{}
	z.zw, _ = gzip.NewWriterLevel(&z.zbuf, gzip.BestCompression)
	add := func(pu *packedUnit) error {
		h.PlainSize += pu.ref.PlainSize
		if h.PlainSize > state.MaxSize {
			return fmt.Errorf("the state is over the %d bytes a state may be", state.MaxSize)
		}
		h.Size += pu.ref.Size
		out = append(out, pu)
		return nil
	}
	pu, err := z.pack("", rest)
	if err == nil {
		err = add(pu)
	}
	if err != nil {
		return h, nil, err
	}
	h.Rest = pu.ref
	for _, k := range slices.Sorted(maps.Keys(plans)) {
		u := plans[k]
		if !u.changed {
			ref := u.kept.ref
			pu, err = &packedUnit{ref: &ref, cu: u.kept.cu}, nil
		} else {
			pu, err = z.pack(k, u.doc)
		}
		if err == nil {
			err = add(pu)
		}
		if err != nil {
			return h, nil, err
		}
		h.Clusters[k] = pu.ref
	}
	if h.Size > state.MaxSize {
		return h, nil, fmt.Errorf("the state is %d bytes gzipped, over the %d a state may be", h.Size, state.MaxSize)
	}
	return h, out, nil
}

// pending is a commit whose parts are written and whose transaction is
// next.
type pending struct {
	h      etcdHeader
	header []byte
	units  []*packedUnit
	// base is the ModRevision of the header whose parts were not written
	// again (0 when every part was written): the transaction compares it.
	base int64
	// put are the parts this commit put, with the revision of each put.
	put map[string]int64
}

// knownParts returns the digests the header at serial prev names, and that
// header's ModRevision (nil, 0 when it is not a format-2 header at serial
// prev, or force).
func (e *Etcd) knownParts(ctx context.Context, prev int64, force bool) (map[string]bool, int64) {
	if force || prev == 0 {
		return nil, 0
	}
	e.cache.mu.Lock()
	rev, serial, parts := e.cache.rev, e.cache.serial, e.cache.parts
	e.cache.mu.Unlock()
	if rev > 0 && serial == prev {
		return parts, rev
	}
	resp, err := e.client.Get(ctx, e.key("state"))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, 0
	}
	h, err := e.decodeHeader(resp.Kvs[0].Value, e.key("state"), e.key("parts/"))
	if err != nil || h.FormatVersion != formatV2 || h.Serial != prev {
		return nil, 0
	}
	return h.digests(), resp.Kvs[0].ModRevision
}

// writeState packs st and writes the parts that the header at serial prev
// does not name (every part, when force), each in its own request. On a
// failure it removes the parts it created.
func (e *Etcd) writeState(ctx context.Context, prev int64, st *state.State, force bool) (*pending, error) {
	known, base := e.knownParts(ctx, prev, force)
	h, units, err := packV2(st, e.cache.prior(known))
	if err != nil {
		return nil, err
	}
	header, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(header) > maxHeaderSizeV2 {
		return nil, fmt.Errorf("the state's header would be %d bytes, over the %d a header may be (its revision, lineage or tool version is too long); nothing was written", len(header), maxHeaderSizeV2)
	}
	p := &pending{h: h, header: header, units: units, put: map[string]int64{}}
	relied := false
	for _, pu := range units {
		for i, d := range pu.ref.Parts {
			if known[d] {
				relied = true
				continue
			}
			if pu.parts == nil {
				// Reused, yet a part is not named: cannot happen (reuse
				// checks), but never commit a part not written.
				e.dropParts(ctx, p.put)
				return nil, fmt.Errorf("committing to %s: the part %s of a unit is not stored; nothing was written", e, d)
			}
			k, v := e.key("parts/"+d), pu.parts[i]
			var resp *clientv3.PutResponse
			if err := e.retry(ctx, func(ctx context.Context) (err error) {
				resp, err = e.client.Put(ctx, k, string(v))
				return err
			}); err != nil {
				e.dropParts(ctx, p.put)
				return nil, e.wrap("writing the state to", err)
			}
			p.put[k] = resp.Header.Revision
		}
	}
	if relied {
		p.base = base
	}
	return p, nil
}

// compares are the conditions of p's transaction besides the serial and the
// lock or owners (have of them already): the header p relied on is still
// the stored one, and the parts it put exist (as many as etcd's limit on a
// transaction's operations leaves room for).
func (p *pending) compares(e *Etcd, have int) []clientv3.Cmp {
	var cmps []clientv3.Cmp
	if p.base > 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(e.key("state")), "=", p.base))
	}
	for _, k := range slices.Sorted(maps.Keys(p.put)) {
		if have+len(cmps) >= maxPartCompares {
			break
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), ">", 0))
	}
	return cmps
}

// committed records p, committed at revision rev, in the cache, and removes
// the parts no header names any more.
func (e *Etcd) committed(ctx context.Context, p *pending, rev int64) {
	units := make(map[string]*cachedUnit, len(p.units))
	for _, pu := range p.units {
		id := pu.ref.id()
		if pu.ref == p.h.Rest {
			id = restID(id)
		}
		units[id] = pu.cu
	}
	e.cache.set(rev, &p.h, units)
	e.gcParts(ctx, p.h, rev)
}

// digests returns every part digest h names (its keys, in format 1).
func (h *etcdHeader) digests() map[string]bool {
	out := map[string]bool{}
	for _, k := range h.Parts {
		out[k[strings.LastIndexByte(k, '/')+1:]] = true
	}
	if h.Rest != nil {
		for _, u := range h.units() {
			for _, d := range u.Parts {
				out[d] = true
			}
		}
	}
	return out
}
