package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/operation"
)

// Metrics is what serve measures, for /metrics. Its Prometheus implementation
// (server/prommetrics) registers itself with RegisterMetrics from its init:
// only the fuelsync-server binary links it (the Prometheus client's inits slow
// down every start of the CLI). Without it, /metrics answers 404.
type Metrics interface {
	// Reconciled counts a reconcile by outcome and observes its duration.
	Reconciled(o operation.Outcome, d time.Duration)
	// Delivered counts a webhook delivery by provider and result.
	Delivered(provider, result string)
	// Reported counts a node's report by result (accepted, or why it was
	// refused: ReportResults).
	Reported(result string)
	// Notified counts a notification by provider and result (sent,
	// failed, dropped: notify.Notifier.Counted).
	Notified(provider, result string)
	// Handler serves the metrics (the Prometheus text format).
	Handler() http.Handler
}

// Gauges are the values a Metrics reads at each scrape, and the build it
// describes.
type Gauges struct {
	// Build is the build serve runs (fuelsync_build_info).
	Build Build
	// Serial is the serial of the applied state.
	Serial func() float64
	// Waiting is the number of artifact API requests waiting for a change.
	Waiting func() float64
	// Clusters are every cluster's status line, and LastApplied when each
	// cluster's changes were last applied (by this process).
	Clusters    func() []operation.ClusterInfo
	LastApplied func() map[string]time.Time
}

// Build is a build's version (as the version command says it), its commit
// and its Go version.
type Build struct {
	Version, Revision, GoVersion string
}

var (
	metricsMu  sync.Mutex
	metricsNew func(Gauges) Metrics
)

// RegisterMetrics makes every Server measure through the Metrics newm makes.
func RegisterMetrics(newm func(Gauges) Metrics) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	metricsNew = newm
}

// HasMetrics reports whether a Metrics implementation is registered.
func HasMetrics() bool {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	return metricsNew != nil
}

func newMetrics(g Gauges) Metrics {
	metricsMu.Lock()
	newm := metricsNew
	metricsMu.Unlock()
	if newm == nil {
		return noMetrics{}
	}
	return newm(g)
}

// noMetrics measures nothing; its /metrics is 404.
type noMetrics struct{}

func (noMetrics) Reconciled(operation.Outcome, time.Duration) {}
func (noMetrics) Delivered(string, string)                    {}
func (noMetrics) Reported(string)                             {}
func (noMetrics) Notified(string, string)                     {}
func (noMetrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "this program was built without the Prometheus metrics (they are in fuelsync-server)", http.StatusNotFound)
	})
}
