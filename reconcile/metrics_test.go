package reconcile

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// TestMetricsText checks the hand-written exposition format with the
// Prometheus parser: counters by label (escaped), a histogram's cumulative
// buckets, sum and count, and a gauge read at scrape time.
func TestMetricsText(t *testing.T) {
	var m metrics
	c := newCounterVec("t_total", "A counter\nwith a newline.", "a", "b")
	c.inc("x", `quote " and \ backslash`)
	c.inc("x", `quote " and \ backslash`)
	c.inc("y", "")
	h := newHistogram("t_seconds", "A histogram.")
	for _, v := range []float64{0.001, 0.3, 0.3, 7, 100} {
		h.observe(v)
	}
	serial := 3.0
	m.add(c, h, &gaugeFunc{name: "t_serial", help: "A gauge.", value: func() float64 { return serial }})
	serial = 4

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	fams, err := (&expfmt.TextParser{}).TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Body.String())
	}
	got := map[string]float64{}
	for _, mt := range fams["t_total"].GetMetric() {
		key := ""
		for _, l := range mt.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ";"
		}
		got[key] = mt.GetCounter().GetValue()
	}
	if got[`a=x;b=quote " and \ backslash;`] != 2 || got["a=y;b=;"] != 1 || len(got) != 2 {
		t.Errorf("counter: %v", got)
	}
	if help := fams["t_total"].GetHelp(); help != "A counter\nwith a newline." {
		t.Errorf("help %q", help)
	}
	hist := fams["t_seconds"].GetMetric()[0].GetHistogram()
	if hist.GetSampleCount() != 5 || hist.GetSampleSum() != 107.601 {
		t.Errorf("histogram count %d, sum %v", hist.GetSampleCount(), hist.GetSampleSum())
	}
	want := map[float64]uint64{0.005: 1, 0.25: 1, 0.5: 3, 5: 3, 10: 4}
	for _, b := range hist.GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if g := fams["t_serial"].GetMetric()[0].GetGauge().GetValue(); g != 4 {
		t.Errorf("gauge %v, want 4", g)
	}
}
