package notify

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// Notifier sends events to its configuration's providers: Notify never
// blocks; each provider has a worker and a queue of its own (Config.Queue
// events; beyond, an event is dropped and logged), and each delivery is tried
// again after a failure (Config.Retries times, waiting Config.Backoff, then
// twice as long each time, at most MaxBackoff, or the Retry-After a receiver
// asks for within that bound).
type Notifier struct {
	cfg *Config
	log *slog.Logger
	// UserAgent is the webhooks' User-Agent.
	UserAgent string
	// Counted, when set, is told each delivery's result, by provider:
	// "sent", "failed" (after every attempt) or "dropped" (the oldest
	// event of a full queue, to make room). Set before Run.
	Counted func(provider, result string)
	// client posts the webhooks: no redirect followed (one could carry the
	// signed body elsewhere), no cookie.
	client *http.Client

	workers []*worker
	start   sync.Once
	// sleep waits d or until ctx ends (tests make it instant).
	sleep func(ctx context.Context, d time.Duration) bool
}

type worker struct {
	p       *Provider
	q       chan *Event
	mu      sync.Mutex // held to queue (dropping the oldest when full)
	dropped atomic.Int64
	sent    atomic.Int64
	failed  atomic.Int64
}

// New makes a Notifier of cfg, logging to log. Start it with Run.
func New(cfg *Config, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{cfg: cfg, log: log, UserAgent: "fuelsync", sleep: sleepCtx, client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	for _, p := range cfg.Providers {
		n.workers = append(n.workers, &worker{p: p, q: make(chan *Event, cfg.Queue)})
	}
	return n
}

// Run delivers the events until ctx ends (events still queued then are
// dropped); it returns once every worker stopped.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range n.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.work(ctx, w)
		}()
	}
	wg.Wait()
}

// Notify queues e for every provider that wants it; it never blocks: a
// provider's queue full, its oldest event is dropped (counted and logged)
// to make room. A nil Notifier sends nothing.
func (n *Notifier) Notify(e Event) {
	if n == nil {
		return
	}
	e.Source, e.ID = "fuelsync", newID()
	if e.Severity == "" {
		e.Severity = SeverityOf(e.Type)
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Message = safetext.Line(e.Message)
	if n.cfg.BaseURL != "" && e.Path != "" {
		e.URL = n.cfg.BaseURL + e.Path
	}
	for _, w := range n.workers {
		if !w.p.Wants(&e) {
			continue
		}
		ev := e
		n.enqueue(w, &ev)
	}
}

// enqueue puts e on w's queue, dropping the oldest events while it is full.
func (n *Notifier) enqueue(w *worker, e *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		select {
		case w.q <- e:
			return
		default:
		}
		select {
		case old := <-w.q:
			w.dropped.Add(1)
			n.count(w, "dropped")
			n.log.Warn("notification dropped: the provider's queue is full", "provider", w.p.Name, "event", old.Type,
				"cluster", old.Cluster, "id", old.ID, "queue", cap(w.q), "dropped", w.dropped.Load())
		default: // the worker took one meanwhile
		}
	}
}

// count tells Counted of a result.
func (n *Notifier) count(w *worker, result string) {
	if n.Counted != nil {
		n.Counted(w.p.Name, result)
	}
}

// newID is a delivery's id: 16 random bytes in hex, the same for each
// attempt (X-Fuelsync-Delivery), so that a receiver can drop a repeat.
func newID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Counts are a provider's deliveries: sent, failed (after every attempt),
// dropped (its queue full).
type Counts struct{ Sent, Failed, Dropped int64 }

// Counts returns each provider's counts, by name.
func (n *Notifier) Counts() map[string]Counts {
	out := map[string]Counts{}
	for _, w := range n.workers {
		out[w.p.Name] = Counts{Sent: w.sent.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load()}
	}
	return out
}

// work delivers w's events one at a time, in order.
func (n *Notifier) work(ctx context.Context, w *worker) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-w.q:
			n.deliver(ctx, w, e)
		}
	}
}

// attemptError is a failed attempt: whether to try again, and the wait a
// receiver asked for (0: none).
type attemptError struct {
	err        error
	retry      bool
	retryAfter time.Duration
}

func (e *attemptError) Error() string { return e.err.Error() }

// deliver sends e to w's provider, trying again after a failure that may
// pass.
func (n *Notifier) deliver(ctx context.Context, w *worker, e *Event) {
	wait := n.cfg.Backoff
	for attempt := 1; ; attempt++ {
		err := n.send(ctx, w.p, e)
		if err == nil {
			w.sent.Add(1)
			n.count(w, "sent")
			n.log.Debug("notification sent", "provider", w.p.Name, "event", e.Type, "cluster", e.Cluster, "id", e.ID, "attempt", attempt)
			return
		}
		var ae *attemptError
		retry := !errors.As(err, &ae) || ae.retry
		last := !retry || attempt > n.cfg.Retries || ctx.Err() != nil
		n.log.Warn("notification not delivered", "provider", w.p.Name, "event", e.Type, "cluster", e.Cluster, "id", e.ID,
			"attempt", attempt, "error", err.Error(), "again", !last)
		if last {
			w.failed.Add(1)
			n.count(w, "failed")
			return
		}
		d := wait + time.Duration(rand.Int64N(int64(wait)/10+1)) // a little jitter
		if ae != nil && ae.retryAfter > d {
			d = min(ae.retryAfter, MaxBackoff)
		}
		if !n.sleep(ctx, d) {
			w.failed.Add(1)
			n.count(w, "failed")
			return
		}
		wait = min(2*wait, MaxBackoff)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// send makes one attempt.
func (n *Notifier) send(ctx context.Context, p *Provider, e *Event) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	switch p.Type {
	case Webhook:
		return n.postWebhook(ctx, p, e)
	case Slack:
		return n.postSlack(ctx, p, e)
	}
	return runCommand(ctx, p, e)
}
