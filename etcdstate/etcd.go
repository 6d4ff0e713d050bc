package etcdstate

// The state on etcd, under a prefix, in its namespace <prefix>/.fuelsync/
// (state.EtcdNamespace; no prefix may contain that segment, so no prefix
// reaches another's keys):
//
//	<ns>/state              the state's header (JSON): lineage, serial, revision,
//	                        tool version, sizes, and its units: for the rest
//	                        and for each cluster, the digests of its parts
//	<ns>/serial             the serial, in decimal: what a commit compares
//	<ns>/parts/<sha256>     a unit of the state (a cluster's slice of the
//	                        state document, or the rest of it; JSON, gzip), or
//	                        a piece of at most 256 KiB of one, named by its
//	                        digest (units.go; format 1, still read, was the
//	                        whole document cut in parts)
//	<ns>/lock/<lease>       the writers' lock (concurrency.Mutex)
//	<ns>/holders/<lease>    who waits for or holds the lock (JSON), on the
//	                        same lease
//	<ns>/leader/<lease>     the replicas' election (elect.go)
//	<ns>/trigger            reconcile requests to the leader (replica.go)
//	<ns>/members/<id>       serve --shard replicas, on their leases (shard.go)
//	<ns>/owners/<cluster>   each cluster's owner, on the owner's lease
//
// A fuelsync before the namespace kept these keys at <prefix>/state and so on;
// its state is read there while the namespace holds none, and the first writer
// moves it (migrate).
//
// A commit writes the parts the stored header does not name (each its own
// request, so no request nears etcd's 1.5 MiB limit): those of the clusters
// that changed and of the rest. Then one transaction puts the header and the
// serial if the serial (and the header whose parts were kept) is still the
// one read, every new part exists, and the writer still holds the lock. Parts
// no header names are removed after a commit, by the rule units.go states.
// A reader reads the header, then the parts it does not hold already (the
// units of the last state it read or committed), at the header's revision.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fuelsync/fuelsync/state"
)

// EtcdPartSize is the largest part of a state document stored in one key.
const EtcdPartSize = 256 << 10

// Etcd is the state on etcd (a Backend).
type Etcd struct {
	cfg    state.EtcdConfig
	client *clientv3.Client

	mu sync.Mutex
	// held is the lock this process holds, for the commit's check.
	held *concurrency.Mutex

	// cache holds the units of the last state read or committed (units.go).
	cache partCache
	// fetched counts the parts read from etcd (for the tests).
	fetched atomic.Int64
}

// Open connects to the etcd of cfg (lazily: a cluster without quorum fails the
// first request, after cfg.Timeout; one that nobody answers at, within
// dialProbe: reach.go).
func Open(cfg state.EtcdConfig) (*Etcd, error) {
	if cfg.LockTTL == 0 {
		cfg.LockTTL = state.DefaultLockTTL
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	scheme := "http://"
	var tlsConfig *tls.Config
	if cfg.CACert != "" || cfg.Cert != "" || cfg.Key != "" {
		scheme = "https://"
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.CACert != "" {
			pem, err := os.ReadFile(cfg.CACert)
			if err != nil {
				return nil, fmt.Errorf("reading --etcd-cacert: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--etcd-cacert %s holds no PEM certificate", cfg.CACert)
			}
			tlsConfig.RootCAs = pool
		}
		if (cfg.Cert == "") != (cfg.Key == "") {
			return nil, errors.New("--etcd-cert and --etcd-key go together")
		}
		if cfg.Cert != "" {
			pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
			if err != nil {
				return nil, fmt.Errorf("loading --etcd-cert/--etcd-key: %w", err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
	}
	if cfg.User != "" {
		// The client authenticates in New, waiting up to DialTimeout for a
		// connection: an etcd nobody answers at is said at once.
		if err := probe(context.Background(), cfg.Endpoints, min(dialProbe, cfg.Timeout)); err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", cfg.URL(), err)
		}
	}
	eps := make([]string, len(cfg.Endpoints))
	for i, e := range cfg.Endpoints {
		eps[i] = scheme + e
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: cfg.Timeout,
		TLS:         tlsConfig,
		Username:    cfg.User,
		Password:    cfg.Password,
		Logger:      zap.NewNop(),
		// Keep-alives find a dead member, so requests move to another.
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.URL(), err)
	}
	return &Etcd{cfg: cfg, client: client}, nil
}

func (e *Etcd) String() string { return e.cfg.URL() }

// Close implements Backend.
func (e *Etcd) Close() error { return e.client.Close() }

// key is k in the prefix's namespace: <prefix>/.fuelsync/k
// (state.EtcdNamespace, which no prefix may contain, so no other prefix
// reaches these keys).
func (e *Etcd) key(k string) string {
	return e.cfg.Prefix + "/" + state.EtcdNamespace + "/" + k
}

// oldKey is k where a fuelsync before the namespace kept it: <prefix>/k.
func (e *Etcd) oldKey(k string) string { return e.cfg.Prefix + "/" + k }

func (e *Etcd) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, e.cfg.Timeout)
}

func (e *Etcd) wrap(what string, err error) error {
	return e.wrapWithin(what, e.cfg.Timeout, err)
}

// budget is how long a request that starts now may wait for its answer:
// the request timeout, or less when ctx's deadline comes first (the reads
// of a replica's status and readiness wait 2 s).
func (e *Etcd) budget(ctx context.Context) time.Duration {
	b := e.cfg.Timeout
	if ctx != nil {
		if d, ok := ctx.Deadline(); ok {
			b = min(b, time.Until(d))
		}
	}
	return b
}

// wrapWithin is wrap for a request that waited at most within (budget), so
// that a timeout names the deadline it met.
func (e *Etcd) wrapWithin(what string, within time.Duration, err error) error {
	if r := within.Round(100 * time.Millisecond); r > 0 {
		within = r
	}
	if transient(err) {
		// The client says only that time ran out. Without a connection,
		// the endpoints say why (reach.go); with one, a member answers and
		// the cluster does not: no quorum.
		if !e.connected() {
			var un *UnreachableError
			if perr := probe(context.Background(), e.cfg.Endpoints, min(dialProbe, e.cfg.Timeout)); errors.As(perr, &un) {
				return fmt.Errorf("%s %s: %w (%w)", what, e, un, err)
			}
		}
		return fmt.Errorf("%s %s: no answer within %s (is a quorum of its members up?): %w", what, e, within, err)
	}
	return fmt.Errorf("%s %s: %w", what, e, err)
}

// retry runs f, an idempotent request, in attempts of a quarter of the
// request timeout (at least 1s) until one succeeds or the timeout is spent: a
// request sent to a member just killed may hang where the next one, sent to
// another member, succeeds. (A commit is never retried: one that got no answer
// may have happened.)
func (e *Etcd) retry(ctx context.Context, f func(context.Context) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	deadline := time.Now().Add(e.budget(ctx))
	attempt := max(e.cfg.Timeout/4, time.Second)
	for {
		actx, cancel := context.WithTimeout(ctx, min(attempt, time.Until(deadline)))
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !time.Now().Before(deadline) || !transient(err) {
			return err
		}
	}
}

// transient says err is a timeout or an unreachable member, worth a retry.
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "request timed out") ||
		strings.Contains(msg, "Unavailable") || strings.Contains(msg, "leader changed") || strings.Contains(msg, "no leader")
}

// etcdHeader is the value of <prefix>/.fuelsync/state.
type etcdHeader struct {
	FormatVersion string `json:"format_version"`
	Lineage       string `json:"lineage"`
	Serial        int64  `json:"serial"`
	Revision      string `json:"revision"`
	ToolVersion   string `json:"tool_version"`
	Encoding      string `json:"encoding"`
	// Size and SHA256 are the gzipped document's, PlainSize the document's
	// (0 in a header written before it was recorded). In format 2, Size and
	// PlainSize are the sums of the units'.
	Size      int    `json:"size"`
	PlainSize int64  `json:"plain_size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	// Parts are the keys of the document's parts (format 1).
	Parts []string `json:"parts,omitempty"`
	// Rest and Clusters are the units of format 2 (units.go): the rest of
	// the state, and each cluster's (or, above maxUnits clusters, each
	// bucket's) slice of it.
	Rest     *etcdUnit            `json:"rest,omitempty"`
	Clusters map[string]*etcdUnit `json:"clusters,omitempty"`
	// MovedTo is set in the tombstone a migration leaves at the old
	// layout's header (format_version "moved").
	MovedTo string `json:"moved_to,omitempty"`
}

// maxHeaderSize bounds a format-1 header: its fields are bounded (state push
// checks them), its parts named by digest. (A format-2 header is bounded by
// maxHeaderSizeV2.)
const maxHeaderSize = 64 << 10

// movedVersion is the format_version of the tombstone left at the old
// layout's header: an older fuelsync reading it stops ("format_version
// \"moved\"; this fuelsync reads 1").
const movedVersion = "moved"

// ReadState implements Backend.
func (e *Etcd) ReadState(ctx context.Context) (*state.State, error) {
	if err := e.reach(ctx, "reading the state from"); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		var st *state.State
		err := e.retry(ctx, func(ctx context.Context) (err error) {
			st, err = e.readState(ctx)
			return err
		})
		// Parts removed and compacted between the two reads: read again.
		if errors.Is(err, errPartGone) && attempt < 3 {
			continue
		}
		return st, err
	}
}

var errPartGone = errors.New("a part of the state is gone")

// readState reads the state in the prefix's namespace; when there is none,
// the state an older fuelsync kept at <prefix>/state (read only: the next
// writer moves it, migrate).
func (e *Etcd) readState(ctx context.Context) (*state.State, error) {
	resp, err := e.client.Get(ctx, e.key("state"))
	if err != nil {
		return nil, e.wrap("reading the state from", err)
	}
	if len(resp.Kvs) == 0 {
		st, _, err := e.readOldState(ctx)
		return st, err
	}
	h, err := e.decodeHeader(resp.Kvs[0].Value, e.key("state"), e.key("parts/"))
	if err != nil {
		return nil, err
	}
	if h.FormatVersion == formatV2 {
		return e.readV2(ctx, h, resp.Header.Revision, resp.Kvs[0].ModRevision)
	}
	return e.readDocument(ctx, h, resp.Header.Revision)
}

// oldState is what readOldState found at the old layout's keys.
type oldState struct {
	header                    etcdHeader
	stateModRev, serialModRev int64
	hasSerial                 bool
}

// readOldState reads the state an older fuelsync kept at <prefix>/state,
// <prefix>/serial and <prefix>/parts/ (before EtcdNamespace); an empty state
// when there is none. A tombstone there (a migration happened) with nothing
// in the namespace is an error.
func (e *Etcd) readOldState(ctx context.Context) (*state.State, *oldState, error) {
	resp, err := e.client.Get(ctx, e.oldKey("state"))
	if err != nil {
		return nil, nil, e.wrap("reading the state from", err)
	}
	if len(resp.Kvs) == 0 {
		return state.Empty(), nil, nil
	}
	var probe etcdHeader
	if json.Unmarshal(resp.Kvs[0].Value, &probe) == nil && probe.FormatVersion == movedVersion {
		return nil, nil, fmt.Errorf("the state in %s was moved from %s to %s by a fuelsync that keeps it there, and nothing is there now: restore it with fuelsync state push", e, e.oldKey("state"), e.key("state"))
	}
	h, err := e.decodeHeader(resp.Kvs[0].Value, e.oldKey("state"), e.oldKey("parts/"))
	if err != nil {
		return nil, nil, err
	}
	if h.FormatVersion != "1" {
		return nil, nil, fmt.Errorf("the state %s in %s has format_version %q, which no fuelsync writes there", e.oldKey("state"), e, h.FormatVersion)
	}
	st, err := e.readDocument(ctx, h, resp.Header.Revision)
	if err != nil {
		return nil, nil, err
	}
	old := &oldState{header: h, stateModRev: resp.Kvs[0].ModRevision}
	sr, err := e.client.Get(ctx, e.oldKey("serial"), clientv3.WithRev(resp.Header.Revision))
	if err != nil {
		return nil, nil, e.wrap("reading the state from", err)
	}
	if len(sr.Kvs) > 0 {
		old.serialModRev, old.hasSerial = sr.Kvs[0].ModRevision, true
	}
	return st, old, nil
}

// decodeHeader parses and checks the header at key name: its format, its
// sizes within state.MaxSize, and its parts: in format 1, each a key under
// partsPrefix named by a sha256, as many as its size needs; in format 2,
// those of each unit (checkV2).
func (e *Etcd) decodeHeader(value []byte, name, partsPrefix string) (etcdHeader, error) {
	var h etcdHeader
	if len(value) > maxHeaderSizeV2 {
		return h, fmt.Errorf("the state header %s in %s is %d bytes, over the %d a header may be", name, e, len(value), maxHeaderSizeV2)
	}
	if err := json.Unmarshal(value, &h); err != nil {
		return h, fmt.Errorf("the state header %s in %s does not parse: %w", name, e, err)
	}
	if h.FormatVersion != "1" && h.FormatVersion != formatV2 || h.Encoding != "gzip" {
		return h, fmt.Errorf("the state %s in %s has format_version %q, encoding %q; this fuelsync reads 1 or 2, gzip", name, e, h.FormatVersion, h.Encoding)
	}
	if h.FormatVersion == formatV2 {
		return h, e.checkV2(&h, name)
	}
	if len(value) > maxHeaderSize {
		return h, fmt.Errorf("the state header %s in %s is %d bytes, over the %d a header may be", name, e, len(value), maxHeaderSize)
	}
	if h.Rest != nil || h.Clusters != nil {
		return h, fmt.Errorf("the state %s in %s: its header of format_version 1 has the units of format 2", name, e)
	}
	if h.Size < 0 || h.Size > state.MaxSize || h.PlainSize < 0 || h.PlainSize > state.MaxSize {
		return h, fmt.Errorf("the state %s in %s says it is %d bytes gzipped, %d bytes whole: over the %d bytes a state may be", name, e, h.Size, h.PlainSize, state.MaxSize)
	}
	if want := (h.Size + EtcdPartSize - 1) / EtcdPartSize; len(h.Parts) != want {
		return h, fmt.Errorf("the state %s in %s names %d parts for %d bytes (%d expected)", name, e, len(h.Parts), h.Size, want)
	}
	for _, k := range h.Parts {
		if sum, ok := strings.CutPrefix(k, partsPrefix); !ok || !isSHA256(sum) {
			return h, fmt.Errorf("the state %s in %s names the part %q, which is not a key %s<sha256>", name, e, k, partsPrefix)
		}
	}
	return h, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readDocument reads the parts h names at revision rev, checks them against
// the header, and expands them: at most h.PlainSize bytes (what the header
// promises; state.MaxSize for a header that does not say), so a
// small part that expands to gigabytes (a gzip bomb) is refused after
// reading no more than the promise.
func (e *Etcd) readDocument(ctx context.Context, h etcdHeader, rev int64) (*state.State, error) {
	packed := make([]byte, 0, h.Size)
	for _, k := range h.Parts {
		pr, err := e.client.Get(ctx, k, clientv3.WithRev(rev))
		if err != nil {
			if strings.Contains(err.Error(), "compacted") {
				return nil, errPartGone
			}
			return nil, e.wrap("reading the state from", err)
		}
		if len(pr.Kvs) == 0 {
			return nil, fmt.Errorf("the state in %s (serial %d) names part %s, which is missing", e, h.Serial, k)
		}
		if len(packed)+len(pr.Kvs[0].Value) > h.Size {
			return nil, fmt.Errorf("the state in %s (serial %d) does not match its digest", e, h.Serial)
		}
		packed = append(packed, pr.Kvs[0].Value...)
	}
	sum := sha256.Sum256(packed)
	if hex.EncodeToString(sum[:]) != h.SHA256 || len(packed) != h.Size {
		return nil, fmt.Errorf("the state in %s (serial %d) does not match its digest", e, h.Serial)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
	}
	limit := h.PlainSize
	if limit == 0 {
		limit = state.MaxSize
	}
	data, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the state in %s (serial %d) expands beyond %d bytes, which its header promises (or the most a state may be): refused, read no further", e, h.Serial, limit)
	}
	if h.PlainSize > 0 && int64(len(data)) != h.PlainSize {
		return nil, fmt.Errorf("the state in %s (serial %d) expands to %d bytes, where its header says %d", e, h.Serial, len(data), h.PlainSize)
	}
	st, err := state.Parse(e.key("state"), data)
	if err != nil {
		return nil, err
	}
	if st.Serial != h.Serial || st.Lineage != h.Lineage {
		return nil, fmt.Errorf("the state in %s: its header says serial %d, lineage %s, its document serial %d, lineage %s", e, h.Serial, h.Lineage, st.Serial, st.Lineage)
	}
	return st, nil
}

// dropParts removes the parts of put (key → the revision it was put at)
// that no one created before this commit nor put since, after a commit that
// did not happen (refused, or never sent): a header that names such a part
// cannot exist. Best effort: what is left is removed by the next commit's
// gcParts.
func (e *Etcd) dropParts(ctx context.Context, put map[string]int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Timeout)
	defer cancel()
	for k, rev := range put {
		_, _ = e.client.Txn(ctx).If(
			clientv3.Compare(clientv3.CreateRevision(k), "=", rev),
			clientv3.Compare(clientv3.ModRevision(k), "=", rev),
		).Then(clientv3.OpDelete(k)).Commit()
	}
}

// Commit implements Backend. It writes the state in format 2 (units.go),
// whatever format the state it replaces had: the parts the replaced header
// does not name, then one transaction.
func (e *Etcd) Commit(ctx context.Context, prev int64, next *state.State) error {
	if err := e.reach(ctx, "committing the state to"); err != nil {
		return err
	}
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		// 1. The parts, each its own request.
		p, err := e.writeState(ctx, prev, next, attempt > 0)
		if err != nil {
			return err
		}
		cmps := append([]clientv3.Cmp{e.serialIs(prev)}, e.heldLock()...)
		cmps = append(cmps, p.compares(e, len(cmps))...)
		// 2. The commit point: header and serial, if nothing moved.
		resp, err := e.client.Txn(ctx).If(cmps...).Then(
			clientv3.OpPut(e.key("state"), string(p.header)),
			clientv3.OpPut(e.key("serial"), strconv.FormatInt(next.Serial, 10)),
		).Commit()
		if err != nil {
			// No answer: it may have committed. The parts stay (the next
			// commit's gcParts removes them if it did not).
			return e.wrap("committing the state to", err)
		}
		if resp.Succeeded {
			// 3. Parts no header names any more.
			e.committed(ctx, p, resp.Header.Revision)
			return nil
		}
		e.dropParts(ctx, p.put)
		now, rerr := e.readState(ctx)
		if rerr != nil {
			return fmt.Errorf("the state in %s moved while serial %d was being applied (read at serial %d); nothing was applied: %w", e, next.Serial, prev, rerr)
		}
		if now.Serial == prev {
			if attempt == 0 && p.base > 0 {
				// The header relied on is not the stored one, though its
				// serial is: write every part.
				continue
			}
			return fmt.Errorf("the lock on %s was lost while serial %d was being applied (its lease expired: was etcd unreachable for %s?); nothing was applied", e, next.Serial, e.cfg.LockTTL)
		}
		return &state.StaleStateError{Backend: e.String(), Read: prev, Now: now, Applying: next.Serial}
	}
}

// serialIs is the compare of a commit on serial prev: the stored serial is
// prev, or there is none when prev is 0.
func (e *Etcd) serialIs(prev int64) clientv3.Cmp {
	if prev == 0 {
		return clientv3.Compare(clientv3.CreateRevision(e.key("serial")), "=", 0)
	}
	return clientv3.Compare(clientv3.Value(e.key("serial")), "=", strconv.FormatInt(prev, 10))
}

// heldLock is the compare that this process still holds the lock, when it
// took it (none otherwise).
func (e *Etcd) heldLock() []clientv3.Cmp {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil {
		return nil
	}
	return []clientv3.Cmp{e.held.IsOwner()}
}

// migrate moves a state an older fuelsync kept at <prefix>/state (and
// <prefix>/serial, <prefix>/parts/) into the prefix's namespace, once, by the
// first writer that holds the lock: the parts are written in the namespace,
// then one transaction puts the namespace's header and serial, and replaces
// the old header with a tombstone and the old serial with "moved", if
// neither old key changed, the namespace holds no state yet, and the lock is
// still held. An older fuelsync then stops at the tombstone ("format_version
// \"moved\"") instead of writing a state this one would not read. The old
// parts are removed after. Nothing to do when the namespace holds a state or
// there is no old one.
func (e *Etcd) migrate(ctx context.Context) error {
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	resp, err := e.client.Get(ctx, e.key("serial"), clientv3.WithCountOnly())
	if err != nil {
		return e.wrap("reading the state from", err)
	}
	if resp.Count > 0 {
		return nil
	}
	st, old, err := e.readOldState(ctx)
	if err != nil || old == nil {
		return err
	}
	p, err := e.writeState(ctx, 0, st, true)
	if err != nil {
		return err
	}
	tomb, _ := json.Marshal(etcdHeader{FormatVersion: movedVersion, Lineage: st.Lineage, Serial: st.Serial, MovedTo: e.key("")})
	cmps := []clientv3.Cmp{
		e.serialIs(0),
		clientv3.Compare(clientv3.ModRevision(e.oldKey("state")), "=", old.stateModRev),
	}
	if old.hasSerial {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(e.oldKey("serial")), "=", old.serialModRev))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(e.oldKey("serial")), "=", 0))
	}
	cmps = append(cmps, e.heldLock()...)
	cmps = append(cmps, p.compares(e, len(cmps))...)
	tr, err := e.client.Txn(ctx).If(cmps...).Then(
		clientv3.OpPut(e.key("state"), string(p.header)),
		clientv3.OpPut(e.key("serial"), strconv.FormatInt(st.Serial, 10)),
		clientv3.OpPut(e.oldKey("state"), string(tomb)),
		clientv3.OpPut(e.oldKey("serial"), movedVersion),
	).Commit()
	if err != nil {
		return e.wrap("moving the state of an older fuelsync into "+e.key("")+" on", err)
	}
	if !tr.Succeeded {
		e.dropParts(ctx, p.put)
		return fmt.Errorf("moving the state of an older fuelsync from %s into %s on %s: the state changed meanwhile (is an older fuelsync still writing it?); nothing was moved; retry", e.oldKey("state"), e.key(""), e)
	}
	for _, k := range old.header.Parts {
		_, _ = e.client.Delete(ctx, k)
	}
	e.committed(ctx, p, tr.Header.Revision)
	return nil
}

// gcParts removes the parts that h, committed at revision rev, does not
// name and that were last put before rev, each only if it still was last put
// before rev (units.go: a writer puts every part the header it read does not
// name after reading it, so no part a later header needs is removed).
func (e *Etcd) gcParts(ctx context.Context, h etcdHeader, rev int64) {
	resp, err := e.client.Get(ctx, e.key("parts/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return
	}
	keep := h.digests()
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if keep[strings.TrimPrefix(k, e.key("parts/"))] || kv.ModRevision >= rev {
			continue
		}
		_, _ = e.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "<", rev)).Then(clientv3.OpDelete(k)).Commit()
	}
}

// session opens a session on a new lease of LockTTL, kept alive while keep
// lives: the lease of the lock, of a campaign, of a shard's membership. The
// endpoints are reached first; what names the operation in its errors.
func (e *Etcd) session(ctx, keep context.Context, what string) (*concurrency.Session, error) {
	if err := e.reach(ctx, what); err != nil {
		return nil, err
	}
	var lease *clientv3.LeaseGrantResponse
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		lease, err = e.client.Grant(ctx, int64(e.cfg.LockTTL/time.Second))
		return err
	})
	if err != nil {
		return nil, e.wrap(what, err)
	}
	session, err := concurrency.NewSession(e.client, concurrency.WithLease(lease.ID), concurrency.WithContext(keep))
	if err != nil {
		return nil, e.wrap(what, err)
	}
	return session, nil
}

// Lock implements Backend: a concurrency.Mutex on <prefix>/.fuelsync/lock, on
// a lease of LockTTL kept alive while this process lives. Once held, a state an
// older fuelsync kept outside the namespace is moved into it (migrate).
func (e *Etcd) Lock(ctx context.Context, op string, timeout time.Duration) (func() error, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// The session keeps its lease alive for as long as ctx lives.
	session, err := e.session(ctx, ctx, "taking the lock on")
	if err != nil {
		return nil, err
	}
	info := state.HolderInfo(op)
	data, _ := json.Marshal(info)
	leaseHex := strconv.FormatInt(int64(session.Lease()), 16)
	err = e.retry(ctx, func(ctx context.Context) error {
		_, err := e.client.Put(ctx, e.key("holders/"+leaseHex), string(data), clientv3.WithLease(session.Lease()))
		return err
	})
	if err != nil {
		session.Close()
		return nil, e.wrap("taking the lock on", err)
	}
	m := concurrency.NewMutex(session, e.key("lock"))
	if timeout <= 0 {
		tctx, tcancel := e.ctx(ctx)
		err = m.TryLock(tctx)
		tcancel()
	} else {
		lctx, lcancel := context.WithTimeout(ctx, timeout)
		err = m.Lock(lctx)
		lcancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = concurrency.ErrLocked
		}
	}
	if err != nil {
		session.Close()
		if errors.Is(err, concurrency.ErrLocked) {
			return nil, &state.LockedError{Path: e.key("lock"), What: "the state " + e.String(), Holder: e.Holder(ctx)}
		}
		return nil, e.wrap("taking the lock on", err)
	}
	e.mu.Lock()
	e.held = m
	e.mu.Unlock()
	unlock := func() error {
		e.mu.Lock()
		if e.held == m {
			e.held = nil
		}
		e.mu.Unlock()
		uctx, ucancel := e.ctx(context.Background())
		defer ucancel()
		err := m.Unlock(uctx)
		if cerr := session.Close(); err == nil {
			err = cerr
		}
		return err
	}
	// A state an older fuelsync left outside the namespace moves in now,
	// under the lock.
	if err := e.migrate(ctx); err != nil {
		_ = unlock()
		return nil, err
	}
	return unlock, nil
}

// Holder returns who holds the lock (a zero state.LockInfo when nobody does).
func (e *Etcd) Holder(ctx context.Context) state.LockInfo {
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	var info state.LockInfo
	resp, err := e.client.Get(ctx, e.key("lock/"), clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return info
	}
	lease := strconv.FormatInt(resp.Kvs[0].Lease, 16)
	hr, err := e.client.Get(ctx, e.key("holders/"+lease))
	if err == nil && len(hr.Kvs) > 0 {
		_ = json.Unmarshal(hr.Kvs[0].Value, &info)
	}
	return info
}
