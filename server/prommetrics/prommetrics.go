// Package prommetrics is serve's metrics on the Prometheus client
// (server.Metrics): reconciles by outcome and their duration, webhook
// deliveries by provider and result, the applied serial and the waiting
// artifact requests, each cluster's status, the build (fuelsync_build_info),
// and the Go runtime's and the process's (go_*, process_*). Only the fuelsync-server binary links it; it registers
// itself with package server from its init:
//
//	import _ "github.com/fuelsync/fuelsync/server/prommetrics"
package prommetrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/server"
	"github.com/fuelsync/fuelsync/state"
)

func init() { server.RegisterMetrics(New) }

// Metrics is a server.Metrics on a registry of its own.
type Metrics struct {
	registry   *prometheus.Registry
	reconciles *prometheus.CounterVec
	duration   prometheus.Histogram
	deliveries *prometheus.CounterVec
	reports    *prometheus.CounterVec
	notified   *prometheus.CounterVec
}

// New makes the metrics of one server; g is read at each scrape.
func New(g server.Gauges) server.Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	m.reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_reconciles_total", Help: "Reconciles by outcome.",
	}, []string{"outcome"})
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fuelsync_reconcile_duration_seconds", Help: "How long reconciles take.",
	})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_webhook_deliveries_total", Help: "Webhook deliveries by provider and result.",
	}, []string{"provider", "result"})
	m.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_reports_total", Help: "Nodes' reports by result: accepted, or why refused (bad_request, unauthorized, forbidden, not_found, conflict, too_large, too_many, unavailable, error).",
	}, []string{"result"})
	m.notified = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_notifications_total", Help: "Notifications (serve --notify-config) by provider and result: sent, failed (after every attempt), dropped (the oldest of a full queue).",
	}, []string{"provider", "result"})
	for _, r := range server.ReportResults {
		m.reports.WithLabelValues(r) // every result shown, 0 at first
	}
	serial := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fuelsync_applied_serial", Help: "The serial of the applied state.",
	}, g.Serial)
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fuelsync_api_waiting", Help: "Artifact API requests waiting for a change (long-polls).",
	}, g.Waiting)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fuelsync_build_info", Help: "The build serve runs: its version, commit (revision) and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": g.Build.Version, "revision": g.Build.Revision, "goversion": g.Build.GoVersion},
	})
	build.Set(1)
	m.registry.MustRegister(m.reconciles, m.duration, m.deliveries, m.reports, m.notified, serial, waiting, clusterCollector{g}, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

var (
	clusterStatusDesc = prometheus.NewDesc("fuelsync_cluster_status",
		"Each cluster's status: 1 for the status it has, 0 for the others.", []string{"cluster", "status"}, nil)
	clusterApplyDesc = prometheus.NewDesc("fuelsync_cluster_last_apply_timestamp_seconds",
		"When the cluster's changes were last applied by this process (Unix seconds).", []string{"cluster"}, nil)
	clusterNodesDesc = prometheus.NewDesc("fuelsync_cluster_nodes",
		"The cluster's deployed nodes.", []string{"cluster"}, nil)
	clusterNodeStateDesc = prometheus.NewDesc("fuelsync_cluster_nodes_state",
		"The cluster's deployed nodes by state, from their reports: converged, progressing, failed.", []string{"cluster", "state"}, nil)
	clusterHealthDesc = prometheus.NewDesc("fuelsync_cluster_health",
		"Each cluster's health from its nodes' reports: 1 for the health it has (healthy, progressing, degraded, unknown), 0 for the others.", []string{"cluster", "health"}, nil)
	clusterOwnerDesc = prometheus.NewDesc("fuelsync_cluster_owner",
		"The serve replica that owns the cluster (serve --shard); always 1.", []string{"cluster", "replica"}, nil)
	replicaClustersDesc = prometheus.NewDesc("fuelsync_replica_clusters",
		"How many clusters each serve replica owns (serve --shard).", []string{"replica"}, nil)
)

// clusterCollector reads the clusters' statuses at each scrape.
type clusterCollector struct{ g server.Gauges }

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clusterStatusDesc
	ch <- clusterApplyDesc
	ch <- clusterNodesDesc
	ch <- clusterNodeStateDesc
	ch <- clusterHealthDesc
	ch <- clusterOwnerDesc
	ch <- replicaClustersDesc
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	if c.g.Clusters == nil {
		return
	}
	owned := map[string]int{}
	for _, info := range c.g.Clusters() {
		for _, status := range state.Statuses {
			v := 0.0
			if info.Status == status {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(clusterStatusDesc, prometheus.GaugeValue, v, info.Name, status)
		}
		ch <- prometheus.MustNewConstMetric(clusterNodesDesc, prometheus.GaugeValue, float64(info.Nodes), info.Name)
		for state, n := range map[string]int{reports.Converged: info.NodesConverged, reports.Progressing: info.NodesProgressing, reports.Failed: info.NodesFailed} {
			ch <- prometheus.MustNewConstMetric(clusterNodeStateDesc, prometheus.GaugeValue, float64(n), info.Name, state)
		}
		for _, health := range reports.Healths {
			v := 0.0
			if info.Health == health {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(clusterHealthDesc, prometheus.GaugeValue, v, info.Name, health)
		}
		if info.Owner != "" {
			ch <- prometheus.MustNewConstMetric(clusterOwnerDesc, prometheus.GaugeValue, 1, info.Name, info.Owner)
			owned[info.Owner]++
		}
	}
	for replica, n := range owned {
		ch <- prometheus.MustNewConstMetric(replicaClustersDesc, prometheus.GaugeValue, float64(n), replica)
	}
	if c.g.LastApplied == nil {
		return
	}
	for cluster, t := range c.g.LastApplied() {
		ch <- prometheus.MustNewConstMetric(clusterApplyDesc, prometheus.GaugeValue, float64(t.UnixNano())/1e9, cluster)
	}
}

// Reconciled implements server.Metrics.
func (m *Metrics) Reconciled(o operation.Outcome, d time.Duration) {
	m.reconciles.WithLabelValues(string(o)).Inc()
	m.duration.Observe(d.Seconds())
}

// Delivered implements server.Metrics.
func (m *Metrics) Delivered(provider, result string) {
	m.deliveries.WithLabelValues(provider, result).Inc()
}

// Reported implements server.Metrics.
func (m *Metrics) Reported(result string) {
	m.reports.WithLabelValues(result).Inc()
}

// Notified implements server.Metrics.
func (m *Metrics) Notified(provider, result string) {
	m.notified.WithLabelValues(provider, result).Inc()
}

// Handler implements server.Metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
