package server

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/state"
)

// The status page (/), as an Argo CD user expects it: it opens on the
// clusters, each with its status and health (a colour and a glyph), its
// applied and head revisions, its nodes converged, its last run and its
// problems; then the reconcile's errors, the last change set, and each
// cluster's nodes with their applied roles (and, when the cluster's newest
// revision is not applied, the roles it would give them, said "pending").

// pageTemplate is parsed on first use, not at every start of the CLI.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(pageFuncs).Parse(pageHead + `<h1>fuelsync</h1>
<p>fuelsync {{.Version}} (commit <code>{{.Commit}}</code>). {{if .Ready}}<span class="status-synced">Ready.</span>{{else}}<span class="error">Not ready: {{.ReadyError}}</span>{{end}}
Newest commit: <code>{{printf "%.12s" .Revision}}</code>. Applied: <code>{{printf "%.12s" .Applied}}</code> (serial {{.Serial}}).
{{if not .LastReconcile.IsZero}}Last reconcile: {{.LastReconcile.Format "2006-01-02 15:04:05 MST"}}, {{.Outcome}}.{{end}}</p>
{{with .Replica}}<p>Replica <code>{{.ID}}</code>: {{.Role}}{{if .Leader}}; leader <code>{{.Leader}}</code>{{else}}; no leader elected{{end}}; serving serial {{.Serving}}.{{if .Problem}} <span class="error">{{.Problem}}</span>{{end}}</p>{{end}}
<h2>Clusters</h2>
{{with .Pages}}<p class="pages">Clusters {{.From}}–{{.To}} of {{.Total}}.{{if .Prev}} <a href="/?page={{.Prev}}">previous</a>{{end}}{{if .Next}} <a href="/?page={{.Next}}">next</a>{{end}}</p>{{end}}
{{if .Lines}}<table class="clusters"><tr><th>cluster</th><th>status</th><th>health</th><th>converged</th><th>applied</th><th>head</th><th>last run</th>{{if .Owners}}<th>owner</th>{{end}}<th>problems</th></tr>
{{range .Lines}}<tr><td><a href="/clusters/{{.Name}}">{{.Name}}</a></td><td>{{badge .Status}}</td><td>{{badge .Health}}</td><td>{{.NodesConverged}}/{{.Nodes}}</td><td><code>{{printf "%.12s" .AppliedRevision}}</code></td><td><code>{{printf "%.12s" .HeadRevision}}</code></td><td>{{with .LastRun}}<a href="/clusters/{{.Cluster}}/runs/{{.ID}}">run {{.ID}}</a> {{badge .Status}}{{else}}none{{end}}</td>{{if $.Owners}}<td><code>{{.Owner}}</code></td>{{end}}<td class="error">{{range .Problems}}<code>{{.}}</code><br>{{end}}{{range .HealthProblems}}<code>{{.}}</code><br>{{end}}</td></tr>
{{end}}</table>{{else}}<p>No cluster rendered yet.</p>{{end}}
{{with .Pages}}<p class="pages">Clusters {{.From}}–{{.To}} of {{.Total}}.{{if .Prev}} <a href="/?page={{.Prev}}">previous</a>{{end}}{{if .Next}} <a href="/?page={{.Next}}">next</a>{{end}}</p>{{end}}
{{if .Errors}}<h2 class="error">Errors</h2><ul class="error">{{range .Errors}}<li><code>{{.}}</code></li>{{end}}{{with .MoreErrors}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Changes}}<h2>Last change set</h2><pre>{{.Changes.Text .NoColors}}</pre>{{end}}
{{if .Shown}}<h2>Nodes</h2>{{end}}
{{range $c := .Shown}}<h3>{{$c.Name}}</h3>
{{if $c.Pending}}<p>{{badge $c.Status}}: the roles applied, and those its newest revision would give (pending: not applied).</p>{{end}}
<table><tr><th>node</th><th>id</th><th>applied roles</th>{{if $c.Pending}}<th>pending roles</th><th>pending tags</th>{{else}}<th>tags</th>{{end}}</tr>
{{range $c.Nodes}}<tr><td>{{.Name}}</td><td>{{.ID}}</td><td>{{range $i, $r := .Roles}}{{if $i}}, {{end}}{{$r}}{{else}}<em>none</em>{{end}}</td>{{if $c.Pending}}<td>{{if .Changed}}{{range $i, $r := .Pending}}{{if $i}}, {{end}}{{$r}}{{else}}<em>none</em>{{end}}{{else}}the same{{end}}</td>{{end}}<td>{{range $i, $t := .Tags}}{{if $i}}, {{end}}{{$t}}{{end}}</td></tr>
{{end}}</table>{{with $c.More}}<p>and {{.}} more nodes: see <a href="/clusters/{{$c.Name}}">its page</a>.</p>{{end}}
{{end}}
</body></html>
`))
})

// The bounds of the status page: at most maxPageClusters clusters a page
// (/?page=N), and maxPageNodes rows of their nodes' tables (10,000 cluster
// specs that did not validate made a page of 3.4 MB).
const (
	maxPageClusters = 100
	maxPageNodes    = 2000
)

// pageNav is the status page's place among its pages (nil when one is
// enough).
type pageNav struct{ From, To, Total, Prev, Next int }

// pageCluster is a cluster's table of nodes on the status page, cut to the
// page's bound (More: how many nodes are left out). Pending says its newest
// revision is not applied: its nodes' roles there are pending.
type pageCluster struct {
	Name, Status string
	Pending      bool
	Nodes        []pageClusterNode
	More         int
}

// pageClusterNode is a node's row: its applied roles, and those of the
// newest revision when they are pending (Changed: they differ).
type pageClusterNode struct {
	Name           string
	ID             int
	Roles, Pending []string
	Changed        bool
	Tags           []string
}

// page is the status page: server-rendered, no JavaScript; the clusters of
// one page (?page=N, from 1), in the order of their names.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	st := s.status(r.Context())
	applied, err := s.applied()
	var lines []ClusterLine
	if err == nil {
		lines = s.clusterLines(r.Context(), applied)
	}
	pages := max(1, (len(lines)+maxPageClusters-1)/maxPageClusters)
	n := 1
	if q := r.URL.Query().Get("page"); q != "" {
		var err error
		if n, err = strconv.Atoi(q); err != nil || n < 1 || n > pages {
			http.Error(w, fmt.Sprintf("page %s: the status page has pages 1 to %d (%d clusters, %d a page)", strconv.Quote(cut(q, 20)), pages, len(lines), maxPageClusters), http.StatusBadRequest)
			return
		}
	}
	var nav *pageNav
	if pages > 1 {
		nav = &pageNav{From: (n-1)*maxPageClusters + 1, To: min(n*maxPageClusters, len(lines)), Total: len(lines)}
		if n > 1 {
			nav.Prev = n - 1
		}
		if n < pages {
			nav.Next = n + 1
		}
		lines = lines[nav.From-1 : nav.To]
	}
	// An owner column when the replicas share the clusters (serve --shard).
	owners := slices.ContainsFunc(lines, func(c ClusterLine) bool { return c.Owner != "" })
	s.writePage(w, r, pageTemplate(), struct {
		controller.Status
		Refresh    int
		Title      string
		Crumbs     []crumb
		Lines      []ClusterLine
		Shown      []pageCluster
		Pages      *pageNav
		Owners     bool
		NoColors   diff.Colors
		MoreErrors string
	}{st, PageRefresh, "clusters", nil, lines, shownClusters(st.Clusters, lines, applied, nav != nil), nav, owners, diff.Colors{}, controller.MoreProblems(st.ErrorsOmitted)})
}

// shownClusters are the node tables of the status page: of the clusters of
// lines when paged (all otherwise), in the order of their names, with at
// most maxPageNodes rows in all. all are the clusters of the newest
// revision rendered; applied the applied state (nil when unread).
func shownClusters(all []controller.ClusterStatus, lines []ClusterLine, applied *state.State, paged bool) []pageCluster {
	status := map[string]string{}
	for _, l := range lines {
		status[l.Name] = l.Status
	}
	sorted := slices.SortedFunc(slices.Values(all), func(a, b controller.ClusterStatus) int { return strings.Compare(a.Name, b.Name) })
	var out []pageCluster
	left := maxPageNodes
	for _, c := range sorted {
		st, on := status[c.Name]
		if paged && !on {
			continue
		}
		shown := c.Nodes[:min(len(c.Nodes), left)]
		left -= len(shown)
		pc := pageCluster{Name: c.Name, Status: st, Pending: on && st != state.StatusSynced, More: len(c.Nodes) - len(shown)}
		var cs *state.ClusterState
		if applied != nil {
			cs = applied.Clusters[c.Name]
		}
		for _, n := range shown {
			row := pageClusterNode{Name: n.Name, ID: n.ID, Tags: n.Tags, Roles: n.Roles}
			if pc.Pending {
				row.Roles, row.Pending = nil, n.Roles
				if cs != nil {
					row.Roles = cs.Nodes[n.Name].Roles
				}
				row.Changed = !slices.Equal(row.Roles, row.Pending)
			}
			pc.Nodes = append(pc.Nodes, row)
		}
		out = append(out, pc)
	}
	return out
}
