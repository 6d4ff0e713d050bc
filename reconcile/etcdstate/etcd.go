package etcdstate

// The state on etcd, under a prefix (keys are <prefix>/...):
//
//	<prefix>/state              the state's header (JSON): lineage, serial, revision,
//	                            tool version, and the keys of its parts
//	<prefix>/serial             the serial, in decimal: what a commit compares
//	<prefix>/parts/<sha256>     the state document (JSON, gzip), cut in parts of
//	                            at most 256 KiB, named by their digest
//	<prefix>/lock/<lease>       the writers' lock (concurrency.Mutex)
//	<prefix>/holders/<lease>    who waits for or holds the lock (JSON), on the
//	                            same lease
//
// A commit writes the new parts first (each its own request, so no request
// nears etcd's 1.5 MiB limit), then one transaction puts the header and the
// serial if the serial is still the one read, every new part exists, and the
// writer still holds the lock. Parts no header names are removed after a commit.
// A reader reads the header, then its parts at the header's revision.

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
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fuelsync/fuelsync/reconcile"
)

// EtcdPartSize is the largest part of a state document stored in one key.
const EtcdPartSize = 256 << 10

// Etcd is the state on etcd (a Backend).
type Etcd struct {
	cfg    reconcile.EtcdConfig
	client *clientv3.Client

	mu sync.Mutex
	// held is the lock this process holds, for the commit's check.
	held *concurrency.Mutex
}

// Open connects to the etcd of cfg (lazily: a cluster without quorum fails the
// first request, after cfg.Timeout).
func Open(cfg reconcile.EtcdConfig) (*Etcd, error) {
	if cfg.LockTTL == 0 {
		cfg.LockTTL = reconcile.DefaultLockTTL
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

func (e *Etcd) key(k string) string { return e.cfg.Prefix + "/" + k }

func (e *Etcd) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, e.cfg.Timeout)
}

func (e *Etcd) wrap(what string, err error) error {
	if transient(err) {
		return fmt.Errorf("%s %s: no answer within %s (is a quorum of its members up?): %w", what, e, e.cfg.Timeout, err)
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
	deadline := time.Now().Add(e.cfg.Timeout)
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

// etcdHeader is the value of <prefix>/state.
type etcdHeader struct {
	FormatVersion string   `json:"format_version"`
	Lineage       string   `json:"lineage"`
	Serial        int64    `json:"serial"`
	Revision      string   `json:"revision"`
	ToolVersion   string   `json:"tool_version"`
	Encoding      string   `json:"encoding"`
	Size          int      `json:"size"`
	SHA256        string   `json:"sha256"`
	Parts         []string `json:"parts"`
}

// ReadState implements Backend.
func (e *Etcd) ReadState(ctx context.Context) (*reconcile.State, error) {
	for attempt := 0; ; attempt++ {
		var st *reconcile.State
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

func (e *Etcd) readState(ctx context.Context) (*reconcile.State, error) {
	resp, err := e.client.Get(ctx, e.key("state"))
	if err != nil {
		return nil, e.wrap("reading the state from", err)
	}
	if len(resp.Kvs) == 0 {
		return reconcile.EmptyState(), nil
	}
	var h etcdHeader
	if err := json.Unmarshal(resp.Kvs[0].Value, &h); err != nil {
		return nil, fmt.Errorf("the state header %s in %s does not parse: %w", e.key("state"), e, err)
	}
	if h.FormatVersion != "1" || h.Encoding != "gzip" {
		return nil, fmt.Errorf("the state %s in %s has format_version %q, encoding %q; this fuelsync reads 1, gzip", e.key("state"), e, h.FormatVersion, h.Encoding)
	}
	var packed []byte
	for _, k := range h.Parts {
		pr, err := e.client.Get(ctx, k, clientv3.WithRev(resp.Header.Revision))
		if err != nil {
			if strings.Contains(err.Error(), "compacted") {
				return nil, errPartGone
			}
			return nil, e.wrap("reading the state from", err)
		}
		if len(pr.Kvs) == 0 {
			return nil, fmt.Errorf("the state in %s (serial %d) names part %s, which is missing", e, h.Serial, k)
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
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("the state in %s (serial %d): %w", e, h.Serial, err)
	}
	st, err := reconcile.ParseState(e.key("state"), data)
	if err != nil {
		return nil, err
	}
	if st.Serial != h.Serial || st.Lineage != h.Lineage {
		return nil, fmt.Errorf("the state in %s: its header says serial %d, lineage %s, its document serial %d, lineage %s", e, h.Serial, h.Lineage, st.Serial, st.Lineage)
	}
	return st, nil
}

// Pack returns the state's header and parts as they are stored (for tests and
// size reports).
func packState(st *reconcile.State) (etcdHeader, [][]byte, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return etcdHeader{}, nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		return etcdHeader{}, nil, err
	}
	packed := buf.Bytes()
	sum := sha256.Sum256(packed)
	h := etcdHeader{FormatVersion: "1", Lineage: st.Lineage, Serial: st.Serial, Revision: st.Revision, ToolVersion: st.ToolVersion,
		Encoding: "gzip", Size: len(packed), SHA256: hex.EncodeToString(sum[:])}
	var parts [][]byte
	for len(packed) > 0 {
		n := min(len(packed), EtcdPartSize)
		parts = append(parts, packed[:n])
		packed = packed[n:]
	}
	return h, parts, nil
}

// Commit implements Backend.
func (e *Etcd) Commit(ctx context.Context, prev int64, next *reconcile.State) error {
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	h, parts, err := packState(next)
	if err != nil {
		return err
	}
	// 1. The parts, each its own request.
	cmps := []clientv3.Cmp{}
	if prev == 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(e.key("serial")), "=", 0))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(e.key("serial")), "=", strconv.FormatInt(prev, 10)))
	}
	for _, p := range parts {
		sum := sha256.Sum256(p)
		k := e.key("parts/" + hex.EncodeToString(sum[:]))
		h.Parts = append(h.Parts, k)
		if err := e.retry(ctx, func(ctx context.Context) error {
			_, err := e.client.Put(ctx, k, string(p))
			return err
		}); err != nil {
			return e.wrap("writing the state to", err)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), ">", 0))
	}
	e.mu.Lock()
	if e.held != nil {
		cmps = append(cmps, e.held.IsOwner())
	}
	e.mu.Unlock()
	header, _ := json.Marshal(h)
	// 2. The commit point: header and serial, if nothing moved.
	resp, err := e.client.Txn(ctx).If(cmps...).Then(
		clientv3.OpPut(e.key("state"), string(header)),
		clientv3.OpPut(e.key("serial"), strconv.FormatInt(next.Serial, 10)),
	).Commit()
	if err != nil {
		return e.wrap("committing the state to", err)
	}
	if !resp.Succeeded {
		now, rerr := e.readState(ctx)
		if rerr != nil {
			return fmt.Errorf("the state in %s moved while serial %d was being applied (read at serial %d); nothing was applied: %w", e, next.Serial, prev, rerr)
		}
		if now.Serial == prev {
			return fmt.Errorf("the lock on %s was lost while serial %d was being applied (its lease expired: was etcd unreachable for %s?); nothing was applied", e, next.Serial, e.cfg.LockTTL)
		}
		return &reconcile.StaleStateError{Backend: e.String(), Read: prev, Now: now, Applying: next.Serial}
	}
	// 3. Parts no header names any more.
	e.gcParts(ctx, h.Parts)
	return nil
}

func (e *Etcd) gcParts(ctx context.Context, keep []string) {
	resp, err := e.client.Get(ctx, e.key("parts/"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return
	}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if !containsString(keep, k) {
			_, _ = e.client.Delete(ctx, k)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Lock implements Backend: a concurrency.Mutex on <prefix>/lock, on a lease of
// LockTTL kept alive while this process lives.
func (e *Etcd) Lock(ctx context.Context, op string, timeout time.Duration) (func() error, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// The lease first, bounded by the request timeout; the session keeps it
	// alive for as long as ctx lives.
	var lease *clientv3.LeaseGrantResponse
	err := e.retry(ctx, func(ctx context.Context) (err error) {
		lease, err = e.client.Grant(ctx, int64(e.cfg.LockTTL/time.Second))
		return err
	})
	if err != nil {
		return nil, e.wrap("taking the lock on", err)
	}
	session, err := concurrency.NewSession(e.client, concurrency.WithLease(lease.ID), concurrency.WithContext(ctx))
	if err != nil {
		return nil, e.wrap("taking the lock on", err)
	}
	info := reconcile.HolderInfo(op)
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
			return nil, &reconcile.LockedError{Path: e.key("lock"), What: "the state " + e.String(), Holder: e.Holder(ctx)}
		}
		return nil, e.wrap("taking the lock on", err)
	}
	e.mu.Lock()
	e.held = m
	e.mu.Unlock()
	return func() error {
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
	}, nil
}

// Holder returns who holds the lock (a zero reconcile.LockInfo when nobody does).
func (e *Etcd) Holder(ctx context.Context) reconcile.LockInfo {
	ctx, cancel := e.ctx(ctx)
	defer cancel()
	var info reconcile.LockInfo
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
