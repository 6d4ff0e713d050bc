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
// written again. (The writer knows them by the JSON's sha256 from the state
// it read, so it does not even gzip them again.) A reader keeps the units of
// the last header it read or committed (partCache) and fetches only the parts
// it lacks.
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

// cachedUnit is a unit's JSON and its sha256.
type cachedUnit struct {
	plain []byte
	sum   [32]byte
}

// partCache holds the units of the last format-2 header this process read or
// committed: a reader fetches only the parts it lacks, a writer does not
// write again (nor gzip again) a unit whose JSON is one of them. Bounded:
// it holds one state, at most state.MaxSize of JSON.
type partCache struct {
	mu sync.Mutex
	// rev is the ModRevision of the header, serial its serial (0: none).
	rev, serial int64
	units       map[string]cachedUnit // by etcdUnit.id
	byPlain     map[[32]byte]etcdUnit // by the JSON's sha256
	parts       map[string]bool       // every digest the header names
}

// set makes the cache hold the units of the header at revision rev, unless
// it holds a later one.
func (c *partCache) set(rev, serial int64, units map[string]cachedUnit, refs []*etcdUnit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev < c.rev {
		return
	}
	c.rev, c.serial, c.units = rev, serial, units
	c.byPlain = make(map[[32]byte]etcdUnit, len(refs))
	c.parts = map[string]bool{}
	for _, u := range refs {
		if cu, ok := units[u.id()]; ok {
			c.byPlain[cu.sum] = *u
		}
		for _, p := range u.Parts {
			c.parts[p] = true
		}
	}
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
// hdrRev; its parts at revision rev, those the cache lacks.
func (e *Etcd) readV2(ctx context.Context, h etcdHeader, rev, hdrRev int64) (*state.State, error) {
	e.cache.mu.Lock()
	cached := e.cache.units
	e.cache.mu.Unlock()
	units := map[string]cachedUnit{}
	plainOf := func(u *etcdUnit) ([]byte, error) {
		id := u.id()
		if cu, ok := cached[id]; ok && int64(len(cu.plain)) == u.PlainSize {
			units[id] = cu
			return cu.plain, nil
		}
		data, err := e.fetchUnit(ctx, h.Serial, u, rev)
		if err != nil {
			return nil, err
		}
		units[id] = cachedUnit{plain: data, sum: sha256.Sum256(data)}
		return data, nil
	}
	data, err := plainOf(h.Rest)
	if err != nil {
		return nil, err
	}
	st, err := state.Parse(e.key("state")+" (its rest)", data)
	if err != nil {
		return nil, err
	}
	if st.Serial != h.Serial || st.Lineage != h.Lineage {
		return nil, fmt.Errorf("the state in %s: its header says serial %d, lineage %s, its document serial %d, lineage %s", e, h.Serial, h.Lineage, st.Serial, st.Lineage)
	}
	keys := slices.Sorted(maps.Keys(h.Clusters))
	docs := make([]unitDoc, len(keys))
	nc, na := len(st.Clusters), len(st.Artifacts)
	for i, k := range keys {
		data, err := plainOf(h.Clusters[k])
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &docs[i]); err != nil {
			return nil, fmt.Errorf("the state in %s (serial %d): its unit %q does not parse: %w", e, h.Serial, k, err)
		}
		nc, na = nc+len(docs[i].Clusters), na+len(docs[i].Artifacts)
	}
	// The maps at their size at once: no growth while tens of thousands of
	// entries go in.
	st.Clusters, st.Artifacts = growMap(st.Clusters, nc), growMap(st.Artifacts, na)
	for i, k := range keys {
		if err := mergeUnit(st, k, &docs[i]); err != nil {
			return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
		}
		docs[i] = unitDoc{}
	}
	e.cache.set(hdrRev, h.Serial, units, h.units())
	return st, nil
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

// mergeUnit adds the unit k to st: each of its clusters, artifacts and
// cluster inputs must be of the unit's clusters, and in no other unit.
func mergeUnit(st *state.State, k string, doc *unitDoc) error {
	mine := func(cluster string) bool {
		if isBucket(k) {
			return loader.IsName(cluster) && unitKey(cluster, maxUnits+1) == k
		}
		return cluster == k
	}
	for name, cs := range doc.Clusters {
		if !mine(name) {
			return fmt.Errorf("its unit %q holds cluster %q", k, name)
		}
		if _, dup := st.Clusters[name]; dup {
			return fmt.Errorf("cluster %q is in two units", name)
		}
		st.Clusters[name] = cs
	}
	for p, d := range doc.Artifacts {
		if !mine(state.ClusterOf(p)) {
			return fmt.Errorf("its unit %q holds the artifact %q", k, p)
		}
		if _, dup := st.Artifacts[p]; dup {
			return fmt.Errorf("the artifact %q is in two units", p)
		}
		st.Artifacts[p] = d
	}
	for c, fp := range doc.ClusterInputs {
		if !mine(c) {
			return fmt.Errorf("its unit %q holds the cluster_inputs of %q", k, c)
		}
		if _, dup := st.ClusterInputs[c]; dup {
			return fmt.Errorf("the cluster_inputs of %q are in two units", c)
		}
		if st.ClusterInputs == nil {
			st.ClusterInputs = map[string]string{}
		}
		st.ClusterInputs[c] = fp
	}
	return nil
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
	ref   *etcdUnit
	plain cachedUnit
	// parts are its gzipped parts; nil for a unit the header it replaces
	// names already.
	parts [][]byte
}

// splitState cuts st in units: the rest (a state document) and the cluster
// units by key. A cluster whose name is not one a repository can give stays
// in the rest, with its files.
func splitState(st *state.State) (*state.State, map[string]*unitDoc) {
	n := len(st.Clusters)
	docs := map[string]*unitDoc{}
	rest := &state.State{FormatVersion: "1", Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Clusters: map[string]*state.ClusterState{}, Artifacts: map[string]string{}, Inputs: st.Inputs}
	unitOf := func(cluster string) *unitDoc {
		if _, ok := st.Clusters[cluster]; !ok || !loader.IsName(cluster) {
			return nil
		}
		k := unitKey(cluster, n)
		d := docs[k]
		if d == nil {
			d = &unitDoc{Clusters: map[string]*state.ClusterState{}}
			docs[k] = d
		}
		return d
	}
	// Each unit's artifacts counted first, so that its map is made at its
	// size.
	counts := map[string]int{}
	for p := range st.Artifacts {
		counts[state.ClusterOf(p)]++
	}
	for name, cs := range st.Clusters {
		if d := unitOf(name); d != nil {
			if d.Artifacts == nil && counts[name] > 0 {
				d.Artifacts = make(map[string]string, counts[name])
			}
			d.Clusters[name] = cs
		} else {
			rest.Clusters[name] = cs
		}
	}
	for p, sum := range st.Artifacts {
		if d := unitOf(state.ClusterOf(p)); d != nil {
			if d.Artifacts == nil {
				d.Artifacts = map[string]string{}
			}
			d.Artifacts[p] = sum
		} else {
			rest.Artifacts[p] = sum
		}
	}
	for c, fp := range st.ClusterInputs {
		d := unitOf(c)
		switch {
		case d != nil:
			if d.ClusterInputs == nil {
				d.ClusterInputs = map[string]string{}
			}
			d.ClusterInputs[c] = fp
		default:
			if rest.ClusterInputs == nil {
				rest.ClusterInputs = map[string]string{}
			}
			rest.ClusterInputs[c] = fp
		}
	}
	return rest, docs
}

// packV2 packs st in format 2. reuse gives the unit stored for a JSON's
// sha256, when the header being replaced names it: such a unit is neither
// gzipped nor written again.
func packV2(st *state.State, reuse func([32]byte) (etcdUnit, bool)) (etcdHeader, []*packedUnit, error) {
	rest, docs := splitState(st)
	h := etcdHeader{FormatVersion: formatV2, Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Encoding: "gzip", Clusters: map[string]*etcdUnit{}}
	var out []*packedUnit
	var zbuf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zbuf, gzip.BestCompression)
	pack := func(doc any) (*etcdUnit, error) {
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		h.PlainSize += int64(len(data))
		if h.PlainSize > state.MaxSize {
			return nil, fmt.Errorf("the state is over the %d bytes a state may be", state.MaxSize)
		}
		pu := &packedUnit{plain: cachedUnit{plain: data, sum: sha256.Sum256(data)}}
		if u, ok := reuse(pu.plain.sum); ok {
			pu.ref = &u
		} else {
			zbuf.Reset()
			zw.Reset(&zbuf)
			_, _ = zw.Write(data)
			if err := zw.Close(); err != nil {
				return nil, err
			}
			packed := bytes.Clone(zbuf.Bytes())
			pu.ref = &etcdUnit{Size: len(packed), PlainSize: int64(len(data))}
			for len(packed) > 0 {
				n := min(len(packed), EtcdPartSize)
				sum := sha256.Sum256(packed[:n])
				pu.ref.Parts = append(pu.ref.Parts, hex.EncodeToString(sum[:]))
				pu.parts = append(pu.parts, packed[:n])
				packed = packed[n:]
			}
		}
		h.Size += pu.ref.Size
		out = append(out, pu)
		return pu.ref, nil
	}
	var err error
	if h.Rest, err = pack(rest); err != nil {
		return h, nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(docs)) {
		if h.Clusters[k], err = pack(docs[k]); err != nil {
			return h, nil, err
		}
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
func (e *Etcd) knownParts(ctx context.Context, prev int64, force bool) (map[string]bool, map[[32]byte]etcdUnit, int64) {
	if force || prev == 0 {
		return nil, nil, 0
	}
	e.cache.mu.Lock()
	rev, serial, parts, byPlain := e.cache.rev, e.cache.serial, e.cache.parts, e.cache.byPlain
	e.cache.mu.Unlock()
	if rev > 0 && serial == prev {
		return parts, byPlain, rev
	}
	resp, err := e.client.Get(ctx, e.key("state"))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, nil, 0
	}
	h, err := e.decodeHeader(resp.Kvs[0].Value, e.key("state"), e.key("parts/"))
	if err != nil || h.FormatVersion != formatV2 || h.Serial != prev {
		return nil, nil, 0
	}
	return h.digests(), nil, resp.Kvs[0].ModRevision
}

// writeState packs st and writes the parts that the header at serial prev
// does not name (every part, when force), each in its own request. On a
// failure it removes the parts it created.
func (e *Etcd) writeState(ctx context.Context, prev int64, st *state.State, force bool) (*pending, error) {
	known, byPlain, base := e.knownParts(ctx, prev, force)
	reuse := func(sum [32]byte) (etcdUnit, bool) {
		u, ok := byPlain[sum]
		if !ok {
			return u, false
		}
		for _, p := range u.Parts {
			if !known[p] {
				return u, false
			}
		}
		return u, true
	}
	h, units, err := packV2(st, reuse)
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
	units := make(map[string]cachedUnit, len(p.units))
	refs := make([]*etcdUnit, 0, len(p.units))
	for _, pu := range p.units {
		units[pu.ref.id()] = pu.plain
		refs = append(refs, pu.ref)
	}
	e.cache.set(rev, p.h.Serial, units, refs)
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
