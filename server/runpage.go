package server

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/runs"
)

// A run's page, /clusters/<c>/runs/<id> ("latest": the newest): its
// summary, its timeline (timeline.go), its critical path and its failed
// tasks, linked to their output (the runs API's, with its token when serve
// has one). It reloads itself while the run goes on, not once it ended.

var runPageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("run").Funcs(pageFuncs).Parse(pageHead + `<h1>Run {{.Run.ID}} of {{.Run.Cluster}}</h1>
{{with .Run}}<p>{{badge .Status}} graph {{.Graph}}, serial {{.Serial}}{{with .Revision}}, revision <code>{{printf "%.12s" .}}</code>{{end}}{{if .Noop}}, noop{{end}}; {{.Trigger}};
started {{.Created.Format "2006-01-02 15:04:05 MST"}}{{with .Ended}}, ended {{.Format "2006-01-02 15:04:05 MST"}}{{end}}{{with $.Took}} ({{.}}){{end}}.{{with .RetryOf}} A retry of <a href="/clusters/{{$.Run.Cluster}}/runs/{{.}}">run {{.}}</a>.{{end}}{{with .Only}} Nodes: {{range $i, $n := .}}{{if $i}}, {{end}}{{$n}}{{end}}.{{end}}</p>
{{with .Reason}}<p class="st-failed">{{.}}</p>{{end}}{{end}}
<p class="legend">{{range .Legend}}<span class="swatch" style="background:{{.Color}}"></span>{{badge .Status}} {{.Count}}{{end}}{{with .Pending}}<span class="swatch" style="border:1px solid #999"></span>{{badge "pending"}} {{.}} (no bar yet){{end}}</p>
<h2>Timeline</h2>
<p>A lane per node ({{.Timeline.Lanes}} of {{.Timeline.Nodes}} drawn), a bar per task from its start to its end{{if not .Run.Ended}} (the dashed line is now){{end}}; outlined: the critical path. A failed task's bar links to its output.</p>
<div class="tl">{{.Timeline.SVG}}</div>
{{with .Timeline.More}}<p>{{.}}</p>{{end}}
{{with .Timeline.Critical}}<h2>Critical path</h2><p>{{$.Timeline.CriticalLen}} tasks, {{$.Timeline.CriticalSpan}}: what each waited for last, from the first to the task that ended last.</p>
<ol class="critical">{{range .}}<li><code>{{.}}</code></li>{{end}}</ol>{{end}}
{{with .Timeline.Failed}}<h2>Failed tasks</h2><table><tr><th>node</th><th>task</th><th>message</th><th>output</th></tr>
{{range .}}<tr><td><a href="/clusters/{{$.Run.Cluster}}/nodes/{{.Node}}">{{.Node}}</a></td><td><code>{{.Task}}</code></td><td>{{.Message}}</td><td>{{with .Output}}<a href="{{.}}">output</a>{{else}}none kept{{end}}</td></tr>
{{end}}</table>{{with $.Timeline.MoreFailed}}<p>and {{.}} more failed tasks (GET /api/v1/clusters/{{$.Run.Cluster}}/runs/{{$.Run.ID}}?tasks=failed has every one).</p>{{end}}
<p>The output is served by the runs API (with serve's API token when it has one).</p>{{end}}
</body></html>
`))
})

type legendItem struct {
	Status, Color string
	Count         int
}

// runPage is GET /clusters/<cluster>/runs/<id>.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	cluster, id := r.PathValue("cluster"), r.PathValue("id")
	if !checkNames(w, "cluster", cluster, "run", id) || !s.runsReady(w) {
		return
	}
	run, err := s.Runs.Run(r.Context(), cluster, id, api.TasksAll)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		http.Error(w, fmt.Sprintf("cluster %s has no run %q", cluster, id), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "reading the run: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	now := time.Now()
	data := map[string]any{
		"Title": "run " + run.ID + " of " + cluster, "Run": run, "Timeline": buildTimeline(run, now),
		"Crumbs": []crumb{{cluster, "/clusters/" + cluster}, {"run " + run.ID, "/clusters/" + cluster + "/runs/" + run.ID}},
	}
	if run.Ended == nil {
		data["Refresh"] = PageRefresh
		data["Took"] = elapsed(now.Sub(run.Created).Round(time.Second)) + " so far"
	} else {
		data["Took"] = elapsed(run.Ended.Sub(run.Created))
	}
	var legend []legendItem
	for _, st := range timelineStatuses {
		legend = append(legend, legendItem{st, taskColors[st], run.Counts[st]})
	}
	data["Legend"], data["Pending"] = legend, run.Counts["pending"]
	s.writePage(w, r, runPageTemplate(), data)
}

// maxPageRuns bounds the runs a cluster's page lists.
const maxPageRuns = 20

// clusterRuns are cluster's newest runs for its page (at most
// maxPageRuns), and how many more it has; none when this serve coordinates
// no runs.
func (s *Server) clusterRuns(ctx context.Context, cluster string) ([]pageRun, int) {
	if !s.runsHere() {
		return nil, 0
	}
	list, err := s.Runs.Runs(ctx, cluster)
	if err != nil {
		s.Loop.Log.Warn("reading a cluster's runs", "cluster", cluster, "error", redact.Text(err.Error()))
		return nil, 0
	}
	out := make([]pageRun, 0, min(len(list), maxPageRuns))
	for _, run := range list[:min(len(list), maxPageRuns)] {
		pr := pageRun{Run: run, Tasks: 0}
		for _, n := range run.Counts {
			pr.Tasks += n
		}
		if run.Ended != nil {
			pr.Took = elapsed(run.Ended.Sub(run.Created))
		}
		out = append(out, pr)
	}
	return out, len(list) - len(out)
}

// pageRun is a run's line on its cluster's page.
type pageRun struct {
	api.Run
	Tasks int
	Took  string
}
