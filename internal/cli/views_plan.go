package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/operation"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// planView shows the results of the reconcile operation (plan, apply,
// approve): the diagnostics, the plan with every cluster's status, and what
// an apply did. One per output format, as Terraform's views.
type planView interface {
	diagnostics(res *operation.Result, src *source)
	plan(res *operation.Result) error
	applied(res *operation.Result, w *state.Workdir) error
}

func newPlanView(g *globals) planView {
	if g.format == formatJSON {
		return &planJSONView{g: g}
	}
	return &planTextView{g: g}
}

// writeResultDiagnostics prints the diagnostics of res to stderr (with source
// snippets), in every format.
func writeResultDiagnostics(g *globals, res *operation.Result, src *source) {
	if res.Repo == nil || len(res.Diagnostics) == 0 {
		return
	}
	g.writeDiagnostics(g.stderr, res.Diagnostics, res.Repo.Sources.Files(), src.prefix)
}

// planTextView is the text view.
type planTextView struct {
	g *globals
	// planned says plan printed the plan (apply prints its result after).
	planned bool
}

func (v *planTextView) diagnostics(res *operation.Result, src *source) {
	writeResultDiagnostics(v.g, res, src)
}

func (v *planTextView) plan(res *operation.Result) error {
	g := v.g
	v.planned = true
	p := res.Plan
	if !g.quiet || p.ChangesPresent {
		fmt.Fprint(g.stdout, p.Changes.Text(changeColors(g, g.stdout)))
	}
	writeClusterStatuses(g.stdout, g, res)
	return nil
}

// writeClusterStatuses prints what the change set does not say: the clusters
// held (with their problems), awaiting approval or waiting (with the changes
// that wait), suspended, and those whose status changes without a change of
// their artifacts.
func writeClusterStatuses(w io.Writer, g *globals, res *operation.Result) {
	colors := changeColors(g, w)
	var b strings.Builder
	for _, c := range res.Clusters {
		was := ""
		if cs := res.State.Clusters[c.Name]; cs != nil {
			was = cs.StatusOf()
		}
		switch c.Status {
		case state.StatusHeld:
			fmt.Fprintf(&b, "Held: cluster %s keeps its applied artifacts (%s):\n", c.Name, plural(max(1, len(c.Diagnostics)), "error"))
			for _, p := range c.Problems {
				fmt.Fprintf(&b, "  %s\n", p)
			}
		case state.StatusAwaitingApproval:
			fmt.Fprintf(&b, "Awaiting approval (sync: manual): cluster %s; apply it with: %s\n", c.Name, commandLine(g, approveArgs(res, c.Name)...))
			writeDeferred(&b, colors, c)
		case state.StatusSuspended:
			fmt.Fprintf(&b, "Suspended: cluster %s is not reconciled (suspend: true); its applied artifacts stay\n", c.Name)
		case state.StatusOutOfSync:
			if len(c.Problems) > 0 { // waiting for its dependencies
				fmt.Fprintf(&b, "Waiting: cluster %s: %s\n", c.Name, strings.Join(c.Problems, "; "))
				writeDeferred(&b, colors, c)
			}
		case state.StatusSynced:
			if was != "" && was != state.StatusSynced && c.Changes == nil {
				fmt.Fprintf(&b, "Synced: cluster %s was %s; its applied artifacts are the revision's render\n", c.Name, was)
			}
		}
	}
	if b.Len() > 0 {
		fmt.Fprintf(w, "\n%s", b.String())
	}
}

// approveArgs is the approve command for the pending plan of cluster name
// that res planned, pinned to it (--revision: its commit, or its digest when
// it has none).
func approveArgs(res *operation.Result, name string) []string {
	args := []string{"approve", "--cluster", name}
	if res.Plan == nil {
		return args
	}
	for _, rec := range res.Plan.Clusters {
		if pd := rec.Pending; rec.Name == name && pd != nil {
			ref := pd.Revision
			if ref == gitsource.WorkingTree {
				ref = pd.Digest
			}
			return append(args, "--revision", gitsource.Short(ref))
		}
	}
	return args
}

// writeDeferred prints the changes of a cluster that are planned but not
// applied, indented.
func writeDeferred(b *strings.Builder, colors diff.Colors, c *operation.ClusterResult) {
	if c.Changes == nil {
		return
	}
	cs := &diff.ChangeSet{Clusters: []*diff.ClusterChange{c.Changes}, Summary: diff.Summarize([]*diff.ClusterChange{c.Changes})}
	for _, line := range strings.Split(strings.TrimRight(cs.Text(colors), "\n"), "\n") {
		if line == "" {
			b.WriteByte('\n')
			continue
		}
		fmt.Fprintf(b, "  %s\n", line)
	}
}

func (v *planTextView) applied(res *operation.Result, w *state.Workdir) error {
	g := v.g
	if g.format != formatText || g.quiet {
		return nil
	}
	if res.Next == nil {
		fmt.Fprintln(g.stdout, "Nothing to apply.")
		return nil
	}
	fmt.Fprintf(g.stdout, "Apply complete: serial %d, revision %s; artifacts in %s.\n", res.Next.Serial, gitsource.Short(res.Next.Revision), w.CurrentDir())
	return nil
}

// planJSONView is the JSON view: one document, the plan (and, after an
// apply, what it applied).
type planJSONView struct {
	g   *globals
	doc *planJSON
}

// planJSON is the JSON form of a plan (plan --format json), and of an apply
// (apply --format json: with applied).
type planJSON struct {
	FormatVersion  string              `json:"format_version"`
	ChangesPresent bool                `json:"changes_present"`
	Lineage        string              `json:"lineage"`
	Serial         int64               `json:"serial"`
	Revision       string              `json:"revision"`
	Summary        diff.Summary        `json:"summary"`
	Changes        *diff.ChangeSet     `json:"changes"`
	Clusters       []clusterResultJSON `json:"clusters"`
	Applied        *appliedJSON        `json:"applied,omitempty"`
}

// clusterResultJSON is one cluster of planJSON.
type clusterResultJSON struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Problems []string `json:"problems"`
	// Changes are its planned changes, applied or not (awaiting approval,
	// waiting for its dependencies).
	Changes *diff.ClusterChange `json:"changes,omitempty"`
}

// appliedJSON is what an apply did.
type appliedJSON struct {
	Serial    int64  `json:"serial"`
	Revision  string `json:"revision"`
	Artifacts string `json:"artifacts"`
}

func (v *planJSONView) diagnostics(res *operation.Result, src *source) {
	writeResultDiagnostics(v.g, res, src)
}

func (v *planJSONView) plan(res *operation.Result) error {
	p := res.Plan
	v.doc = &planJSON{FormatVersion: formatVersion, ChangesPresent: p.ChangesPresent, Lineage: p.Lineage, Serial: p.Serial,
		Revision: p.Revision, Summary: p.Changes.Summary, Changes: p.Changes, Clusters: []clusterResultJSON{}}
	for _, c := range res.Clusters {
		problems := c.Problems
		if problems == nil {
			problems = []string{}
		}
		v.doc.Clusters = append(v.doc.Clusters, clusterResultJSON{Name: c.Name, Status: c.Status, Problems: problems, Changes: c.Changes})
	}
	if v.g.command == "plan" {
		return writeJSON(v.g.stdout, v.doc)
	}
	return nil // apply prints one document, with what it applied
}

func (v *planJSONView) applied(res *operation.Result, w *state.Workdir) error {
	if v.doc == nil {
		if err := v.plan(res); err != nil {
			return err
		}
	}
	if res.Next != nil {
		v.doc.Applied = &appliedJSON{Serial: res.Next.Serial, Revision: res.Next.Revision, Artifacts: w.CurrentDir()}
	}
	return writeJSON(v.g.stdout, v.doc)
}
