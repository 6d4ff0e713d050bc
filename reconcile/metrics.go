package reconcile

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The few metrics serve exports, written in the Prometheus text exposition
// format (version 0.0.4) by hand: the Prometheus client library initialises
// procfs, protobuf and its registry in every process that links it, which made
// every fuelsync command (shell completion included) start a few milliseconds
// slower for the sake of serve alone.

// metric is one metric family.
type metric interface {
	write(w io.Writer)
}

// metrics is a set of metric families, written in the order they were added.
type metrics struct {
	families []metric
}

func (m *metrics) add(ms ...metric) { m.families = append(m.families, ms...) }

// ServeHTTP writes every family in the text format.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	for _, f := range m.families {
		f.write(&b)
	}
	io.WriteString(w, b.String())
}

func writeHeader(w io.Writer, name, help, typ string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help), name, typ)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// labelText is {a="x",b="y"} for names and values.
func labelText(names, values []string) string {
	if len(names) == 0 {
		return ""
	}
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + `="` + esc.Replace(values[i]) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// counterVec is a counter with labels.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	values     map[string]float64 // by the label values joined with \x00
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, values: map[string]float64{}}
}

// inc adds one to the counter of the label values.
func (c *counterVec) inc(values ...string) {
	c.mu.Lock()
	c.values[strings.Join(values, "\x00")]++
	c.mu.Unlock()
}

func (c *counterVec) write(w io.Writer) {
	writeHeader(w, c.name, c.help, "counter")
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.values))
	for k := range c.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s%s %s\n", c.name, labelText(c.labels, strings.Split(k, "\x00")), formatValue(c.values[k]))
	}
}

// defaultBuckets are the Prometheus client's default histogram buckets.
var defaultBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// histogram counts observations in cumulative buckets.
type histogram struct {
	name, help string
	mu         sync.Mutex
	counts     []uint64 // per bucket, not cumulative
	count      uint64
	sum        float64
}

func newHistogram(name, help string) *histogram {
	return &histogram{name: name, help: help, counts: make([]uint64, len(defaultBuckets))}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	h.sum += v
	for i, le := range defaultBuckets {
		if v <= le {
			h.counts[i]++
			break
		}
	}
}

func (h *histogram) write(w io.Writer) {
	writeHeader(w, h.name, h.help, "histogram")
	h.mu.Lock()
	defer h.mu.Unlock()
	var cum uint64
	for i, le := range defaultBuckets {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", h.name, formatValue(le), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %s\n%s_count %d\n", h.name, h.count, h.name, formatValue(h.sum), h.name, h.count)
}

// gaugeFunc is a gauge whose value is read when the metrics are.
type gaugeFunc struct {
	name, help string
	value      func() float64
}

func (g *gaugeFunc) write(w io.Writer) {
	writeHeader(w, g.name, g.help, "gauge")
	fmt.Fprintf(w, "%s %s\n", g.name, formatValue(g.value()))
}
