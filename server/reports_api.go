package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// The report API: what nodes' agents say back.
//
//	POST /api/v1/clusters/<cluster>/nodes/<node>/reports   a node's report (JSON, reports.Parse)
//
// A node reports only for itself: its token (reports.Token: an HMAC of its
// cluster and node names under the agent secret, serve --agent-secret-file)
// is its bearer token. A report names the ETag of the graph the node ran,
// which must be one the artifact API served for that node: its graph's ETag
// in the applied set, or in one of the applied sets the work directory keeps
// (state.Keep). The report is kept in the state backend (reports.Store).

// Report results, as the metric fuelsync_reports_total counts them.
const (
	reportAccepted     = "accepted"
	reportBadRequest   = "bad_request"
	reportUnauthorized = "unauthorized"
	reportForbidden    = "forbidden"
	reportNotFound     = "not_found"
	reportConflict     = "conflict"
	reportTooLarge     = "too_large"
	reportTooMany      = "too_many"
	reportUnavailable  = "unavailable"
	reportError        = "error"
)

// ReportResults lists the results of a report (the metric's label values).
var ReportResults = []string{reportAccepted, reportBadRequest, reportUnauthorized, reportForbidden, reportNotFound, reportConflict, reportTooLarge, reportTooMany, reportUnavailable, reportError}

// bearer is the request's bearer token ("" when none).
func bearer(r *http.Request) (string, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(got), ok
}

// nodeToken reports whether the request carries the token of node of cluster
// (serve --agent-secret-file).
func (s *Server) nodeToken(r *http.Request, cluster, node string) bool {
	tok, ok := bearer(r)
	return ok && reports.CheckToken(s.AgentSecret, cluster, node, tok)
}

// authorizedNode checks the read API's bearer token, or the node's own token:
// an agent reads its node's graphs with the token it reports with.
func (s *Server) authorizedNode(w http.ResponseWriter, r *http.Request, cluster, node string) bool {
	if len(s.APIToken) > 0 && len(s.AgentSecret) > 0 && loaderName(cluster) && loaderName(node) && s.nodeToken(r, cluster, node) {
		return true
	}
	return s.authorized(w, r)
}

// ReportAnswer is the answer to an accepted report.
type ReportAnswer struct {
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Seq numbers the report in the node's history; Serial is the applied
	// set whose graph the node ran.
	Seq    int64 `json:"seq"`
	Serial int64 `json:"serial"`
	// State is the node's state with this report: converged, progressing
	// or failed.
	State string `json:"state"`
}

// report is POST /api/v1/clusters/<cluster>/nodes/<node>/reports. What costs
// nothing is checked first: the agent secret, the names, the token; then the
// body (at most reports.MaxBody), the report, the node, the ETag.
func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	cluster, node := r.PathValue("cluster"), r.PathValue("node")
	result, code, why := reportAccepted, http.StatusOK, ""
	defer func() {
		s.metrics.Reported(result)
		s.logReport(cluster, node, result, code, why)
	}()
	fail := func(res string, c int, msg string) {
		result, code, why = res, c, msg
		http.Error(w, msg, c)
	}
	if res, c, msg := s.admitReport(w, r, cluster, node); res != "" {
		result, code, why = res, c, msg
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, reports.MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(reportTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("the report is over %d bytes", reports.MaxBody))
		return
	}
	if err != nil {
		fail(reportBadRequest, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	rep, err := reports.Parse(body)
	if err != nil {
		fail(reportBadRequest, http.StatusBadRequest, "refusing the report: "+err.Error())
		return
	}
	st, ok := s.appliedOr503(w)
	if !ok {
		result, code, why = reportUnavailable, http.StatusServiceUnavailable, "nothing applied, or the applied state unreadable"
		return
	}
	cs := st.Clusters[cluster]
	if cs == nil {
		result, code, why = reportNotFound, http.StatusNotFound, "no such cluster"
		clusterNotFound(w, st, cluster)
		return
	}
	if _, ok := cs.Nodes[node]; !ok {
		fail(reportNotFound, http.StatusNotFound, fmt.Sprintf("cluster %q has no node %q in the applied set (serial %d, revision %.12s)", cluster, node, st.Serial, st.Revision))
		return
	}
	served, err := s.servedAs(st, cluster, node, rep.Graph, rep.ETag)
	if err != nil {
		fail(reportError, http.StatusInternalServerError, "checking the report's ETag: "+redact.Text(err.Error()))
		return
	}
	if served == nil {
		fail(reportConflict, http.StatusConflict, fmt.Sprintf("the ETag %q is not one this server served for graph %s of node %s of cluster %s: it is not that graph's ETag in the applied set (serial %d) nor in the sets kept before it; run the graph served now (GET /api/v1/clusters/%s/nodes/%s/graphs/%s) and report on its ETag",
			rep.ETag, rep.Graph, node, cluster, st.Serial, cluster, node, rep.Graph))
		return
	}
	rep.Cluster, rep.Node, rep.ReceivedAt = cluster, node, time.Now().UTC()
	rep.Serial, rep.Revision, rep.View = served.Serial, served.Revision, served.View
	rep.GraphDigest = s.Loop.Reports.GraphDigest(served.set, render.NodeAddress(cluster, node, rep.Graph).String())
	if rep.Revision == "" {
		rep.Revision = served.StateRevision
	}
	if !s.chargeReport(w, rep, len(body)) {
		result, code, why = reportTooMany, http.StatusTooManyRequests, "over the node's budget of bytes"
		return
	}
	if err := s.Loop.Reports.Put(r.Context(), rep); err != nil {
		fail(reportError, http.StatusInternalServerError, "keeping the report: "+redact.Text(err.Error()))
		return
	}
	writeJSONBody(w, http.StatusOK, ReportAnswer{Cluster: cluster, Node: node, Seq: rep.Seq, Serial: rep.Serial,
		State: s.Loop.Reports.NodeState(st, cluster, node, rep)})
}

// admitReport checks what costs nothing, before a report's body is read:
// the agent secret, the names, the node's token, the node's rate. When it
// refuses, it answers w (with Connection: close: the body is left unread)
// and returns the result, the status and why; result "" when admitted.
func (s *Server) admitReport(w http.ResponseWriter, r *http.Request, cluster, node string) (result string, code int, why string) {
	refuse := func(res string, c int, msg string) (string, int, string) {
		w.Header().Set("Connection", "close")
		http.Error(w, msg, c)
		return res, c, msg
	}
	if len(s.AgentSecret) == 0 {
		return refuse(reportForbidden, http.StatusForbidden, "this serve takes no report: start it with --agent-secret-file (the secret the nodes' tokens are derived from)")
	}
	for _, n := range [][2]string{{"cluster", cluster}, {"node", node}} {
		if !loaderName(n[1]) {
			return refuse(reportBadRequest, http.StatusBadRequest, nameProblem(n[0], n[1]))
		}
	}
	tok, ok := bearer(r)
	if !ok || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fuelsync"`)
		return refuse(reportUnauthorized, http.StatusUnauthorized, "a report needs Authorization: Bearer <the node's token> (fuelsync agent-token --cluster C --node N)")
	}
	if !reports.CheckToken(s.AgentSecret, cluster, node, tok) {
		return refuse(reportForbidden, http.StatusForbidden, fmt.Sprintf("the bearer token is not the token of node %s of cluster %s: a node reports only for itself", node, cluster))
	}
	if !s.nodeAllowed(w, cluster, node) {
		return reportTooMany, http.StatusTooManyRequests, "over the node's rate of requests"
	}
	return "", 0, ""
}

// keyOverhead is what chargeReport counts for each key a report writes (3
// puts and the removal of the history's oldest entry on etcd) besides its
// bytes: etcd's own per-key cost (its quota counts 256 bytes a put, and a
// revision keeps the key beside the value).
const keyOverhead = 256

// chargeReport takes what rep (of a body of n bytes) writes to the state
// backend from its node's budget of bytes (Server.ReportBytes): the report
// whole (at most its body and the fields the server adds) and its summary
// twice (the node's last report and its history entry). When the budget
// has not that much, the report is kept without its tasks (their counts and
// first failed ones; TasksDropped), if the budget has that; else it answers
// 429 with Retry-After and returns false.
func (s *Server) chargeReport(w http.ResponseWriter, rep *reports.Report, n int) bool {
	summary, err := reports.MarshalSummary(rep)
	if err != nil {
		return true // the store says why
	}
	k := nodeKey{rep.Cluster, rep.Node}
	const fields = 1024 // the fields the server adds, at most
	if ok, _ := s.nodeBytes.take(k, float64(n+fields+2*len(summary)+4*keyOverhead)); ok {
		return true
	}
	ok, wait := s.nodeBytes.take(k, float64(3*len(summary)+4*keyOverhead))
	if !ok {
		w.Header().Set("Retry-After", retrySeconds(wait))
		http.Error(w, fmt.Sprintf("node %s of cluster %s wrote over its budget of bytes (%s at once, then %s an hour): not kept; retry in %s s",
			rep.Node, rep.Cluster, mib(s.nodeBytes.rate.Burst), mib(s.nodeBytes.rate.PerSecond*3600), retrySeconds(wait)), http.StatusTooManyRequests)
		return false
	}
	*rep = *reports.Summarize(rep)
	rep.TasksDropped = true
	return true
}

// mib says a number of bytes: "4 MiB", "39.06 KiB", "12 bytes".
func mib(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.4g MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.4g KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f bytes", n)
}

// logReport logs a report: at debug level when accepted (thousands of nodes
// report), at warn level when refused, with why. Never the token or the body.
func (s *Server) logReport(cluster, node, result string, code int, why string) {
	log := s.Loop.Log
	if log == nil {
		return
	}
	level := slog.LevelWarn
	if result == reportAccepted {
		level = slog.LevelDebug
	}
	attrs := []any{"cluster", safetext.Line(cut(cluster, 128)), "node", safetext.Line(cut(node, 128)), "result", result, "status", code}
	if why != "" {
		attrs = append(attrs, "why", safetext.Line(cut(why, 512)))
	}
	log.Log(context.Background(), level, "node report", attrs...)
}

// cut cuts s to at most n bytes, at a character's start, ending with "…"
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// servedSet is the applied set whose graph has a report's ETag.
type servedSet struct {
	Serial        int64
	Revision      string // the cluster's revision in that set
	StateRevision string // the set's revision
	View          string
	set           *state.State
}

// servedAs finds the applied set whose graph of node (cluster, graph) has the
// ETag etag, as YAML or as JSON: the applied set first, then the sets the work
// directory keeps, newest first. nil when none has it.
func (s *Server) servedAs(st *state.State, cluster, node, graph, etag string) (*servedSet, error) {
	name := render.NodeAddress(cluster, node, graph).String()
	tried := map[string]bool{}
	check := func(set *state.State) (*servedSet, error) {
		view, ok := viewDigest(set.Artifacts, name)
		if !ok || tried[view] {
			return nil, nil
		}
		tried[view] = true
		for _, asJSON := range []bool{false, true} {
			_, tag, err := s.artifact(set, name, view, asJSON)
			if err != nil {
				return nil, err
			}
			if strings.Trim(tag, `"`) == etag {
				rev := ""
				if cs := set.Clusters[cluster]; cs != nil {
					rev = cs.Revision
				}
				return &servedSet{Serial: set.Serial, Revision: rev, StateRevision: set.Revision, View: view, set: set}, nil
			}
		}
		return nil, nil
	}
	if found, err := check(st); found != nil || err != nil {
		return found, err
	}
	kept := s.Loop.Workdir.KeptSets()
	for _, n := range slices.Backward(kept) {
		if n >= st.Serial {
			continue
		}
		old, err := s.keptState(n)
		if err != nil {
			continue // pruned meanwhile, or unreadable: not a set kept
		}
		found, err := check(old)
		if err != nil {
			continue // its files pruned meanwhile
		}
		if found != nil {
			return found, nil
		}
	}
	return nil, nil
}

// keptState is the state of kept applied set n, read once and kept in memory
// (at most state.Keep of them; a set's state never changes).
func (s *Server) keptState(n int64) (*state.State, error) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if st, ok := s.kept[n]; ok {
		return st, nil
	}
	st, err := s.Loop.Workdir.SetState(n)
	if err != nil {
		return nil, err
	}
	if st.Serial != n {
		return nil, fmt.Errorf("applied set %d holds the state of serial %d", n, st.Serial)
	}
	if s.kept == nil {
		s.kept = map[int64]*state.State{}
	}
	for len(s.kept) >= state.Keep {
		delete(s.kept, slices.Min(mapKeys(s.kept)))
	}
	s.kept[n] = st
	return st, nil
}

func mapKeys(m map[int64]*state.State) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
