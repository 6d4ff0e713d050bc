package reconcile

// The state on etcd, as far as the core knows it: where it is (EtcdConfig,
// from an etcd:// URL) and what a replica needs of it (Coordinator). The etcd
// client itself lives in reconcile/etcdstate, which registers itself with
// RegisterBackend: a program that does not link it (the fuelsync CLI, which
// starts faster without etcd's client, gRPC and protobuf) reports
// ErrBackendNotLinked, and the CLI hands the command to fuelsync-server.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"
)

// DefaultLockTTL is the lease TTL of the lock: how long a dead holder's lock
// outlives it.
const DefaultLockTTL = 15 * time.Second

// EtcdConfig says how to reach the state on etcd.
type EtcdConfig struct {
	Endpoints []string
	// Prefix is the key prefix, without a trailing slash ("/fuelsync/prod").
	Prefix string
	// CACert, Cert and Key are PEM files (--etcd-cacert/--etcd-cert/--etcd-key);
	// any of them makes the connection TLS.
	CACert, Cert, Key string
	// User and Password authenticate (etcd's RBAC), when User is set.
	User, Password string
	// LockTTL is the lease TTL of the lock (DefaultLockTTL when 0).
	LockTTL time.Duration
	// Timeout bounds each request (10s when 0): without a quorum a request
	// fails after it, and nothing is written.
	Timeout time.Duration
}

// ParseStateURL parses etcd://host1:2379,host2:2379/prefix. The prefix is the
// path ("/" alone is refused: a state needs a prefix of its own).
func ParseStateURL(s string) (*EtcdConfig, error) {
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return nil, fmt.Errorf("the state %q is not etcd://host:port[,host:port...]/prefix", s)
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		return nil, fmt.Errorf("the state %q has no key prefix: add one, as in etcd://%s/fuelsync", s, hosts)
	}
	var eps []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			continue
		}
		if _, err := url.Parse("http://" + h); err != nil || !strings.Contains(h, ":") {
			return nil, fmt.Errorf("the state %q: %q is not host:port", s, h)
		}
		eps = append(eps, h)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("the state %q names no etcd endpoint", s)
	}
	return &EtcdConfig{Endpoints: eps, Prefix: prefix}, nil
}

// URL is the etcd:// form of the config.
func (c *EtcdConfig) URL() string {
	return "etcd://" + strings.Join(c.Endpoints, ",") + c.Prefix
}

// Coordinator is a Backend several serve replicas share (etcd): a leader
// election, a watch of the committed serial, and reconcile requests handed
// from a follower to the leader. A Replica runs on one.
type Coordinator interface {
	Backend
	// Campaign waits until this process, named id, leads the replicas, or
	// ctx ends.
	Campaign(ctx context.Context, id string) (Leadership, error)
	// Leader returns the identity of the current leader (ErrNoLeader when
	// none).
	Leader(ctx context.Context) (string, error)
	// WatchSerial sends the committed serial now and after every commit,
	// until ctx ends (then the channel is closed).
	WatchSerial(ctx context.Context) <-chan int64
	// CommittedSerial reads the committed serial (0 when none).
	CommittedSerial(ctx context.Context) (int64, error)
	// RequestReconcile asks the leader for a reconcile; from names the asker.
	RequestReconcile(ctx context.Context, from string) error
	// WatchRequests sends one value for every RequestReconcile made after it
	// started, until ctx ends (then the channel is closed).
	WatchRequests(ctx context.Context) <-chan struct{}
	// Holder returns who holds the writers' lock (a zero LockInfo when nobody
	// does).
	Holder(ctx context.Context) LockInfo
}

// Leadership is a won election: it lasts while its lease lives; Done is
// closed when it is lost.
type Leadership interface {
	Done() <-chan struct{}
	// Resign gives the leadership up; another candidate wins the election.
	Resign(ctx context.Context) error
}

// ErrNoLeader says no replica leads now.
var ErrNoLeader = errors.New("no leader")

// ErrBackendNotLinked says the program was built without the state backend a
// URL names (the fuelsync CLI links no etcd client; fuelsync-server does).
var ErrBackendNotLinked = errors.New("this program was built without the etcd state backend")

var (
	backendsMu sync.Mutex
	backends   = map[string]func(EtcdConfig) (Backend, error){}
)

// RegisterBackend makes OpenEtcd use open for URLs of scheme ("etcd"); the
// backend's package calls it from its init, as database/sql drivers do.
func RegisterBackend(scheme string, open func(EtcdConfig) (Backend, error)) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[scheme] = open
}

// HasBackend reports whether a backend for scheme is linked in.
func HasBackend(scheme string) bool {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return backends[scheme] != nil
}

// OpenEtcd connects to the etcd of cfg through the registered etcd backend
// (ErrBackendNotLinked when none is).
func OpenEtcd(cfg EtcdConfig) (Backend, error) {
	backendsMu.Lock()
	open := backends["etcd"]
	backendsMu.Unlock()
	if open == nil {
		return nil, ErrBackendNotLinked
	}
	return open(cfg)
}

// HolderInfo is the identity of this process as a lock holder for op (the
// work directory's flock and the etcd backend record it).
func HolderInfo(op string) LockInfo {
	info := LockInfo{PID: os.Getpid(), Operation: op, Since: time.Now().UTC().Format(time.RFC3339)}
	if u, err := user.Current(); err == nil {
		info.User = u.Username
	}
	info.Host, _ = os.Hostname()
	return info
}

// EmptyState is the state a backend returns when it stores none (serial 0, no
// lineage).
func EmptyState() *State { return emptyState() }
