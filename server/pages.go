package server

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/server/taskgraph"
	"github.com/fuelsync/fuelsync/state"
)

// The fleet's pages, beside the status page (/): a page per cluster with a
// node × state grid (/clusters/<c>), and a page per node with its last
// report, its history and its own task graph drawn as SVG
// (/clusters/<c>/nodes/<n>). Server-rendered, no script; they refresh
// themselves every PageRefresh. Every name is escaped by html/template.

// PageRefresh is how often the pages reload themselves, in seconds.
const PageRefresh = 10

// The bounds of the node page's task table (the API has every task whole):
// at most maxPageTasks tasks of the last report, each message cut to
// maxPageMessage bytes.
const (
	maxPageTasks   = 1000
	maxPageMessage = 256
)

// pageHead is the head and style of the fleet's pages; a page with a
// Refresh reloads itself every Refresh seconds.
const pageHead = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}<title>{{.Title}} – fuelsync</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}
.error,.status-held,.state-failed,.health-degraded,.report-failed{color:#b00}.status-synced,.state-converged,.health-healthy,.report-success{color:#070}
.state-progressing,.health-progressing,.report-running{color:#a60}td.cell{text-align:center;font-weight:bold}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
.taskgraph{border:1px solid #ddd;background:#fcfcfc}.tl{overflow-x:auto}.timeline{border:1px solid #ddd;background:#fff}
` + badgeStyle + `</style>
</head><body>
<p><a href="/">fuelsync</a>{{range .Crumbs}} / <a href="{{.URL}}">{{.Name}}</a>{{end}}</p>
`

var clusterPageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("cluster").Funcs(pageFuncs).Parse(pageHead + `<h1>Cluster {{.Cluster}}</h1>
{{with .Info}}<p>Status {{badge .Status}}, health {{badge .Health}}:
{{.NodesConverged}} of {{$.Total}} nodes converged, {{.NodesProgressing}} progressing, {{.NodesFailed}} failed. Applied <code>{{printf "%.12s" .AppliedRevision}}</code>, head <code>{{printf "%.12s" .HeadRevision}}</code>.</p>
{{if .Problems}}<ul class="error">{{range .Problems}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .HealthProblems}}<ul class="error">{{range .HealthProblems}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}{{end}}
{{with .Plan}}<h2>Pending change set</h2>
<p>Awaiting approval: revision <code>{{printf "%.12s" .Pending.Revision}}</code>, digest <code>{{printf "%.12s" .Pending.Digest}}</code>. <code>fuelsync approve --cluster {{.Cluster}} --revision {{printf "%.12s" .Pending.Revision}}</code> applies it; nothing of it is applied before.</p>
{{with .Text}}<pre class="pending">{{.}}</pre>{{else}}<p>{{.Pending.Summary.Line}} (this serve has not planned it itself: fuelsync plan shows its changes).</p>{{end}}{{end}}
<h2>Nodes</h2>
<p>The nodes and roles applied{{if .NotApplied}}: the cluster is {{badge .Status}}, what its newest revision says is not applied{{end}}.</p>
<table class="grid"><tr><th>node</th><th>applied roles</th>{{range .States}}<th>{{.}}</th>{{end}}<th>last report</th></tr>
{{range .Nodes}}<tr><td><a href="{{.URL}}">{{.Name}}</a></td><td>{{range $i, $r := .Roles}}{{if $i}}, {{end}}{{$r}}{{end}}</td>{{$s := .State}}{{range $.States}}<td class="cell state-{{.}}">{{if eq . $s}}●{{end}}</td>{{end}}<td>{{with .Report}}{{badge .Status}} {{.Graph}}, {{.ReceivedAt.Format "2006-01-02 15:04:05 MST"}}{{with .FailedTasks}}: failed {{range $i, $t := .}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}{{end}}{{else}}none{{end}}</td></tr>
{{end}}</table>
{{if .Runs}}<h2>Deployment runs</h2><table><tr><th>run</th><th>status</th><th>graph</th><th>trigger</th><th>started</th><th>took</th><th>tasks</th><th>failed nodes</th></tr>
{{range .Runs}}<tr><td><a href="/clusters/{{.Cluster}}/runs/{{.ID}}">{{.ID}}</a></td><td>{{badge .Status}}</td><td>{{.Graph}}</td><td>{{.Trigger}}</td><td>{{.Created.Format "2006-01-02 15:04:05 MST"}}</td><td>{{with .Took}}{{.}}{{else}}running{{end}}</td><td>{{.Counts.succeeded}} of {{.Tasks}} succeeded{{with .Counts.failed}}, {{.}} failed{{end}}{{with .Counts.dep_failed}}, {{.}} dep_failed{{end}}</td><td>{{range $i, $n := .FailedNodes}}{{if $i}}, {{end}}{{$n}}{{end}}</td></tr>
{{end}}</table>{{with .MoreRuns}}<p>and {{.}} older runs (GET /api/v1/clusters/{{$.Cluster}}/runs lists every one).</p>{{end}}{{end}}
{{if .Reconciles}}<h2>Reconciles</h2><table><tr><th>at</th><th>revision</th><th>serial</th><th>status</th><th>nodes added / changed / removed</th><th>problems</th></tr>
{{range .Reconciles}}<tr><td>{{.At.Format "2006-01-02 15:04:05 MST"}}</td><td><code>{{printf "%.12s" .Revision}}</code></td><td>{{.Serial}}</td><td>{{badge .Status}}</td><td>{{.NodesAdded}} / {{.NodesChanged}} / {{.NodesRemoved}}</td><td class="error">{{range .Problems}}<code>{{.}}</code><br>{{end}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
})

var nodePageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("node").Parse(pageHead + `<h1>Node {{.Node.Node}} of {{.Node.Cluster}}</h1>
<p>State <span class="state-{{.Node.State}}">{{.Node.State}}</span>; id {{.Node.ID}}; roles {{range $i, $r := .Node.Roles}}{{if $i}}, {{end}}{{$r}}{{end}}; applied serial {{.Node.Serial}}, revision <code>{{printf "%.12s" .Node.Revision}}</code>.</p>
<h2>Last report</h2>
{{with .Node.Last}}<p><span class="report-{{.Status}}">{{.Status}}</span>, graph {{.Graph}} (ETag <code>{{printf "%.12s" .ETag}}</code>, serial {{.Serial}}), started {{.StartedAt.Format "2006-01-02 15:04:05 MST"}}{{with .FinishedAt}}, finished {{.Format "2006-01-02 15:04:05 MST"}}{{end}}.{{with .Message}} <code>{{.}}</code>{{end}}</p>
{{if .TasksDropped}}<p>Its tasks were not kept (the node wrote over its budget); their counts:{{range $s, $n := .TaskCounts}} {{$s}} {{$n}}{{end}}{{with .FailedTasks}}; failed: {{range $i, $t := .}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}{{end}}.</p>{{end}}{{end}}
{{with .Tasks}}<table><tr><th>task</th><th>status</th><th>started</th><th>finished</th><th>message</th></tr>
{{range .}}<tr><td><code>{{.ID}}</code></td><td class="report-{{.Status}}">{{.Status}}</td><td>{{with .StartedAt}}{{.Format "15:04:05"}}{{end}}</td><td>{{with .FinishedAt}}{{.Format "15:04:05"}}{{end}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}{{with .MoreTasks}}<p>{{.}}</p>{{end}}{{if not .Node.Last}}<p>No report yet.</p>{{end}}
<h2>Task graph {{.Graph}}</h2>
{{if .SVG}}<p>The node's tasks, each below what it requires, in bands by the stage they come after; a badge is another node's task it waits for; a box links to its requirements and dependents{{if .Colored}}; coloured by the last report{{end}}.
Show {{if .Filtered}}<a href="{{.GraphPage}}">all tasks</a>, {{end}}<a href="{{.GraphPage}}&amp;failed=1">the failed tasks and what they blocked</a>.</p>
<div class="graph">{{.SVG}}</div>{{else}}<p class="error">{{.GraphError}}</p>{{end}}
<h2>History</h2>
{{if .Node.History}}<table><tr><th>#</th><th>status</th><th>graph</th><th>serial</th><th>started</th><th>received</th><th>failed tasks</th><th>message</th></tr>
{{range .Node.History}}<tr><td>{{.Seq}}</td><td class="report-{{.Status}}">{{.Status}}</td><td>{{.Graph}}</td><td>{{.Serial}}</td><td>{{.StartedAt.Format "2006-01-02 15:04:05 MST"}}</td><td>{{.ReceivedAt.Format "2006-01-02 15:04:05 MST"}}</td><td>{{range $i, $t := .FailedTasks}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{else}}<p>No report yet.</p>{{end}}
</body></html>
`))
})

type crumb struct{ Name, URL string }

type pageNode struct {
	Name, URL, State string
	Roles            []string
	Report           *NodeReport
}

// clusterPage is GET /clusters/<cluster>.
func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) {
		return
	}
	st, cs, ok := s.appliedCluster(w, cluster)
	if !ok {
		return
	}
	var info *operation.ClusterInfo
	for _, i := range s.Loop.Clusters(st) {
		if i.Name == cluster {
			info = &i
		}
	}
	var last map[string]*reports.Report
	var recs []*reports.Reconcile
	if s.Loop.Reports != nil {
		last = s.Loop.Reports.Cluster(cluster)
		recs, _ = s.Loop.Reports.Reconciles(r.Context(), cluster)
	}
	var nodes []pageNode
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range cs.Nodes {
			if !yield(n) {
				return
			}
		}
	}) {
		nodes = append(nodes, pageNode{Name: name, URL: "/clusters/" + cluster + "/nodes/" + name, Roles: cs.Nodes[name].Roles,
			State: s.Loop.Reports.NodeState(st, cluster, name, last[name]), Report: nodeReport(last[name])})
	}
	data := map[string]any{
		"Refresh": PageRefresh, "Title": cluster, "Crumbs": []crumb{{cluster, "/clusters/" + cluster}},
		"Cluster": cluster, "Info": info, "Total": len(nodes), "Nodes": nodes, "States": reports.NodeStates, "Reconciles": recs,
		"Plan": s.clusterPlan(st, cluster), "Status": cs.StatusOf(), "NotApplied": cs.StatusOf() != state.StatusSynced,
	}
	data["Runs"], data["MoreRuns"] = s.clusterRuns(r.Context(), cluster)
	s.writePage(w, r, clusterPageTemplate(), data)
}

// nodePage is GET /clusters/<cluster>/nodes/<node>[?graph=G].
func (s *Server) nodePage(w http.ResponseWriter, r *http.Request) {
	cluster, node := r.PathValue("cluster"), r.PathValue("node")
	graph := r.URL.Query().Get("graph")
	if graph == "" {
		graph = "default"
	}
	if !checkNames(w, "cluster", cluster, "node", node, "graph", graph) {
		return
	}
	if focus := r.URL.Query().Get("focus"); len(focus) > reports.MaxTaskID {
		http.Error(w, fmt.Sprintf("focus: a task id is at most %d bytes", reports.MaxTaskID), http.StatusBadRequest)
		return
	}
	st, ok := s.appliedOr503(w)
	if !ok {
		return
	}
	d, code, msg := s.nodeDetail(r, cluster, node)
	if d == nil {
		http.Error(w, msg, code)
		return
	}
	data := map[string]any{
		"Refresh": PageRefresh, "Title": node + " of " + cluster,
		"Crumbs": []crumb{{cluster, "/clusters/" + cluster}, {node, "/clusters/" + cluster + "/nodes/" + node}},
		"Node":   d, "Graph": graph,
	}
	if d.Last != nil {
		data["Tasks"], data["MoreTasks"] = pageTasks(d.Last.Tasks, cluster, node)
	}
	name := render.NodeAddress(cluster, node, graph).String()
	if view := viewOf(st, name); view == "" {
		data["GraphError"] = "The node has no " + graph + " graph in the applied set."
	} else if body, etag, err := s.artifact(st, name, view, false); err != nil {
		data["GraphError"] = "The graph does not read: " + redact.Text(err.Error())
	} else {
		// The last report's task statuses colour the graph it ran.
		status := map[string]string{}
		if d.Last != nil && d.Last.Graph == graph && d.Last.ETag == strings.Trim(etag, `"`) {
			for _, t := range d.Last.Tasks {
				status[t.ID] = t.Status
			}
		}
		drawGraph(data, body, "/clusters/"+cluster+"/nodes/"+node+"?graph="+url.QueryEscape(graph), taskgraph.Options{
			Node: node, Status: status, Focus: r.URL.Query().Get("focus"), Failed: r.URL.Query().Get("failed") == "1"})
	}
	s.writePage(w, r, nodePageTemplate(), data)
}

// drawGraph draws a node's expanded view (body) into the page's data: its
// picture (taskgraph escapes every name), each box a link to the task's
// focus on page, the node page's address with its graph.
func drawGraph(data map[string]any, body []byte, page string, o taskgraph.Options) {
	g, err := taskgraph.Read(body)
	if err != nil {
		data["GraphError"] = err.Error()
		return
	}
	o.Link = func(task string) string { return page + "&focus=" + url.QueryEscape(task) }
	data["SVG"] = template.HTML(taskgraph.Draw(g, o).SVG)
	data["Colored"] = len(o.Status) > 0
	data["GraphPage"], data["Filtered"] = page, o.Focus != "" || o.Failed
}

// pageTasks is what the node page shows of a report's tasks: the first
// maxPageTasks, each message cut to maxPageMessage bytes, and a line saying
// how many more there are ("" when none).
func pageTasks(tasks []reports.Task, cluster, node string) ([]reports.Task, string) {
	shown := make([]reports.Task, 0, min(len(tasks), maxPageTasks))
	for _, t := range tasks[:min(len(tasks), maxPageTasks)] {
		t.Message = cut(t.Message, maxPageMessage)
		shown = append(shown, t)
	}
	if more := len(tasks) - len(shown); more > 0 {
		return shown, fmt.Sprintf("and %d more tasks (at most %d are shown here; GET /api/v1/clusters/%s/nodes/%s has every one)", more, maxPageTasks, cluster, node)
	}
	return shown, ""
}

// writePage answers a page made of t and data: rendered whole first, so
// that a template that fails is answered 500 and logged, not sent cut short
// with a 200.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.Loop.Log.Error("a page does not render", "path", r.URL.Path, "template", t.Name(), "error", redact.Text(err.Error()))
		http.Error(w, "the page does not render (the server's log says why)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(buf.Bytes())
}
