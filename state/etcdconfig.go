package state

// The state on etcd, as far as the core knows it: where it is (EtcdConfig,
// from an etcd:// URL) and what a replica needs of it (Coordinator). The etcd
// client itself lives in etcdstate, which registers itself with
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
	"unicode/utf8"
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

// EtcdNamespace is the reserved final segment under which a prefix keeps its
// keys: <prefix>/.fuelsync/state, …/serial, …/parts/<sha256>, …/lock/,
// …/holders/, …/leader/, …/trigger. A prefix may not contain it, so no
// prefix's keys are inside another's: etcd://…/fs/n/parts and etcd://…/fs/n
// share nothing, and a prefix ending in lock or leader reaches no other
// prefix's lock or election. (Before it, the keys were <prefix>/state and so on:
// see etcdstate's migration.)
const EtcdNamespace = ".fuelsync"

// MaxEtcdPrefix is the longest key prefix accepted, in bytes.
const MaxEtcdPrefix = 512

// ParseURL parses etcd://host1:2379,host2:2379/prefix. The prefix is the
// path ("/" alone is refused: a state needs a prefix of its own). Refused too:
// credentials in the URL (user:password@host; they go in --etcd-auth-file, and
// the URL is printed in messages and the status, so a URL with an @ anywhere
// is refused without being printed), and a prefix with an empty, "." or ".."
// segment, the reserved segment EtcdNamespace, a control character or space,
// or longer than MaxEtcdPrefix.
func ParseURL(s string) (*EtcdConfig, error) {
	if strings.Contains(s, "@") {
		return nil, errors.New("the state URL has an @ in it: credentials (user:password@host) do not go into the URL, which fuelsync prints in messages and the status; put them in --etcd-auth-file (one line, USER:PASSWORD). (An @ is not allowed in the key prefix either.) The URL is not repeated here")
	}
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return nil, fmt.Errorf("the state %q is not etcd://host:port[,host:port...]/prefix", s)
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		return nil, fmt.Errorf("the state %q has no key prefix: add one, as in etcd://%s/fuelsync", s, hosts)
	}
	if err := checkEtcdPrefix(prefix); err != nil {
		return nil, fmt.Errorf("the state %q: its key prefix %q %v", s, prefix, err)
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

// checkEtcdPrefix says why a key prefix ("/a/b", trimmed) is refused: nil when
// it is not.
func checkEtcdPrefix(prefix string) error {
	if len(prefix) > MaxEtcdPrefix {
		return fmt.Errorf("is longer than %d bytes", MaxEtcdPrefix)
	}
	for _, c := range prefix {
		if c <= ' ' || c == 0x7f || c == utf8.RuneError {
			return errors.New("has a space, a control character or a byte that is not UTF-8")
		}
	}
	for _, seg := range strings.Split(prefix[1:], "/") {
		switch seg {
		case "":
			return errors.New("has an empty segment (//)")
		case ".", "..":
			return fmt.Errorf("has a %q segment (etcd keys are not paths: it would be a different prefix from the one it looks like)", seg)
		case EtcdNamespace:
			return fmt.Errorf("has the segment %s, which is reserved: every prefix keeps its keys under <prefix>/%s/, where no other prefix can reach them", EtcdNamespace, EtcdNamespace)
		}
	}
	return nil
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
