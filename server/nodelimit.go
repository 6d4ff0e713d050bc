package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// What one node may write. A node's token lets it write, for itself only;
// these bound how much, per replica (each serve replica counts on its own):
// a token bucket of requests (ReportRate: 429 with Retry-After beyond) and
// one of the bytes its reports write to the state backend (ReportBytes:
// beyond, a report is kept without its tasks, and 429 when even that is
// over). They keep one node from filling etcd: etcd keeps every overwritten
// version until it compacts, and its quota, once reached, stops every write
// of every prefix on it.

// Rate is a token bucket: at most Burst tokens, PerSecond more each second.
type Rate struct {
	Burst     float64
	PerSecond float64
}

// The default bounds of one node.
var (
	// DefaultReportRate: 20 requests at once, then one every 5 s (a run of
	// a graph reports twice: running, then its result).
	DefaultReportRate = Rate{Burst: 20, PerSecond: 1.0 / 5}
	// DefaultReportBytes: 4 MiB at once (four reports of the largest
	// size), then 8 MiB an hour (2.3 KiB/s: 400 reports of 20 KB, the size
	// of a run of 150 tasks, an hour).
	DefaultReportBytes = Rate{Burst: 4 << 20, PerSecond: float64(8<<20) / 3600}
	// DefaultRunRate: the requests of a node's agent during a deployment
	// run (asking for its next task, reporting each task twice, beating
	// while one runs): 400 at once, room for the largest graph of no-op
	// tasks (a mitaka controller has 146), then 10 a second.
	DefaultRunRate = Rate{Burst: 400, PerSecond: 10}
)

// maxNodeBuckets bounds the nodes a nodeBuckets remembers: two generations
// of at most maxNodeBuckets/2 each, the older dropped when the newer is full
// (a node not heard from for a generation starts again with a full bucket).
// Only a node's valid token makes an entry.
const maxNodeBuckets = 100_000

// nodeKey names a node.
type nodeKey struct{ cluster, node string }

type bucket struct {
	tokens float64
	at     time.Time
}

// nodeBuckets is a token bucket per node (cluster, node), of at most
// maxNodeBuckets nodes.
type nodeBuckets struct {
	rate Rate
	now  func() time.Time

	mu        sync.Mutex
	cur, prev map[nodeKey]*bucket
}

func newNodeBuckets(r Rate) *nodeBuckets {
	return &nodeBuckets{rate: r, now: time.Now, cur: map[nodeKey]*bucket{}}
}

// take takes n tokens of k's bucket if it has them; else it takes none, and
// wait is how long until it would have them (a very long time for n over
// the burst).
func (b *nodeBuckets) take(k nodeKey, n float64) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	bk := b.cur[k]
	if bk == nil {
		if bk = b.prev[k]; bk == nil {
			bk = &bucket{tokens: b.rate.Burst, at: now}
		}
		if len(b.cur) >= maxNodeBuckets/2 {
			b.prev, b.cur = b.cur, map[nodeKey]*bucket{}
		}
		b.cur[k] = bk
	}
	if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(b.rate.Burst, bk.tokens+d.Seconds()*b.rate.PerSecond)
		bk.at = now
	}
	if bk.tokens >= n {
		bk.tokens -= n
		return true, 0
	}
	if n > b.rate.Burst || b.rate.PerSecond <= 0 {
		return false, 24 * time.Hour
	}
	return false, time.Duration((n - bk.tokens) / b.rate.PerSecond * float64(time.Second))
}

// retrySeconds is a Retry-After for wait: whole seconds, at least 1.
func retrySeconds(wait time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10)
}

// nodeAllowed takes one request of node of cluster from the node's rate
// of requests (Server.ReportRate, shared by every endpoint that calls it);
// when it has none left, it answers 429 with Retry-After (and Connection:
// close: the body is left unread) and returns false. Call it once the
// node's token is checked (an entry is made per node), before the body is
// read.
func (s *Server) nodeAllowed(w http.ResponseWriter, cluster, node string) bool {
	return s.nodeRate.allowed(w, cluster, node)
}

// allowed takes one token of node of cluster; when there is none, it
// answers 429 with Retry-After and Connection: close, and returns false.
func (b *nodeBuckets) allowed(w http.ResponseWriter, cluster, node string) bool {
	ok, wait := b.take(nodeKey{cluster, node}, 1)
	if ok {
		return true
	}
	w.Header().Set("Retry-After", retrySeconds(wait))
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("node %s of cluster %s sends too many requests: at most %g at once, then one every %s; retry in %s s",
		node, cluster, b.rate.Burst, perOne(b.rate), retrySeconds(wait)), http.StatusTooManyRequests)
	return false
}

// perOne says how long a rate takes to give one token ("5s").
func perOne(r Rate) string {
	if r.PerSecond <= 0 {
		return "never"
	}
	return time.Duration(float64(time.Second) / r.PerSecond).Round(time.Millisecond).String()
}
