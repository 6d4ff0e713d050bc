package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/server"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// serverFlags are the flags of the commands that may talk to a running serve
// instead of the state: its URL and the API token.
func serverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "ask the running fuelsync serve at `URL` (http://127.0.0.1:8080) instead of reading the state"},
		&cli.StringFlag{Name: "api-token-file", Usage: "the bearer token of serve's API, in `FILE` (with --server)"},
	}
}

func statusCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "status",
		Usage:        "show every cluster's status: synced, out_of_sync, held, suspended or awaiting_approval",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "One line per cluster, as flux get kustomizations or argocd app list: its status, the\n" +
			"revision its applied artifacts are the render of, the head revision, its deployed nodes and\n" +
			"what holds it. It reads the applied state (the work directory, or --state etcd://...) and\n" +
			"compares it with the repository's HEAD (--rev REV for another revision), or asks a running\n" +
			"serve with --server URL. --exit-code makes it a check for scripts: exit 2 when a cluster is\n" +
			"held, degraded, or its last deployment run failed.",
		Flags: append(serverFlags(), formatFlag(),
			&cli.BoolFlag{Name: "exit-code", Usage: "exit 2 when a cluster is held, degraded or its last deployment run failed (each said on stderr)"}),
		Action: func(c *cli.Context) error {
			env, err := openOpEnv(c, stdout, stderr)
			if err != nil {
				return err
			}
			defer env.close()
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("status takes no arguments (got %q)", c.Args().First())}
			}
			lines, err := env.clusterLines(c.String("server"))
			if err != nil {
				return err
			}
			if err := statusView(stdout, env.g, lines); err != nil {
				return err
			}
			if c.Bool("exit-code") {
				return statusExit(stderr, lines)
			}
			return nil
		},
	}
}

// statusExit is status --exit-code's verdict: exit 2 when a cluster is
// held, degraded or its last run failed, each said on stderr.
func statusExit(stderr io.Writer, lines []server.ClusterLine) error {
	failing := 0
	for i := range lines {
		if why := clusterProblem(&lines[i]); why != "" {
			fmt.Fprintln(stderr, "fuelsync: "+why)
			failing++
		}
	}
	if failing > 0 {
		return &exitError{code: 2}
	}
	return nil
}

// clusterLines are every cluster's status line with its last deployment
// run: asked of the serve at url, or (url empty) read from the applied state
// (and the runs kept beside it) and compared with the repository's head.
func (e *opEnv) clusterLines(url string) ([]server.ClusterLine, error) {
	if url != "" {
		return serverClusters(e.c, url)
	}
	infos, w, err := e.clusterInfos()
	if err != nil {
		return nil, err
	}
	lines := make([]server.ClusterLine, len(infos))
	coord := &runs.Coordinator{Store: runs.Open(w)}
	for i, info := range infos {
		lines[i].ClusterInfo = info
		if last, err := coord.Latest(e.c.Context, info.Name); err == nil {
			lines[i].LastRun = last
		}
	}
	return lines, nil
}

// clusterInfos are every cluster's status line, read from the applied state
// and compared with the repository's head, and the work directory.
func (e *opEnv) clusterInfos() ([]operation.ClusterInfo, *state.Workdir, error) {
	w, err := e.workdir()
	if err != nil {
		return nil, nil, err
	}
	st, err := w.ReadState()
	if err != nil {
		return nil, nil, &exitError{code: 1, msg: err.Error()}
	}
	live, head := headStatuses(e.g, st)
	infos := operation.ClusterInfos(st, live, head)
	// The health, from the nodes' reports kept beside the state.
	store := reports.NewWorkdirStore(w)
	if err := store.Load(e.c.Context); err != nil {
		fmt.Fprintf(e.g.stderr, "fuelsync: %s; every health is unknown\n", redact.Text(err.Error()))
		store = nil
	}
	operation.WithHealth(infos, st, store)
	if sh, ok := w.Backend.(state.Sharder); ok {
		// serve --shard replicas: each cluster's owner, as its owner key says.
		ctx, cancel := context.WithTimeout(e.c.Context, 10*time.Second)
		owners, err := sh.Owners(ctx)
		cancel()
		if err == nil {
			for i := range infos {
				infos[i].Owner = owners[infos[i].Name]
			}
		}
	}
	return infos, w, nil
}

// statusView prints the status lines, as text (a table) or JSON.
func statusView(stdout io.Writer, g *globals, lines []server.ClusterLine) error {
	if g.format == formatJSON {
		return writeJSON(stdout, map[string]any{"format_version": formatVersion, "clusters": lines})
	}
	writeStatusTable(stdout, lines)
	return nil
}

// headStatuses compares the state with the revision of the repository (its
// HEAD when it is a git repository and --rev is not given): the clusters its
// inputs change are out_of_sync. nil and "" when the repository cannot be
// read (the state alone is shown then).
func headStatuses(g *globals, st *state.State) ([]*operation.ClusterResult, string) {
	if g.rev == "" {
		if top, dir, err := g.gitRepo(""); err == nil {
			if _, _, _, err := loader.OpenRevisionDir(top, "HEAD", dir); err == nil {
				g.rev = "HEAD"
			}
		}
	}
	src, err := openSource(g)
	if err != nil {
		return nil, ""
	}
	repo, _ := loader.Load(src.fsys, loadOptions(nil))
	return operation.HeadStatuses(st, src.fsys, repo, loadOptions(nil), version, inputSkip(g, src)...), src.revision
}

// writeStatusTable prints one line per cluster: the OWNER column when serve
// --shard replicas share the clusters, LAST RUN when a cluster had a
// deployment run.
func writeStatusTable(w io.Writer, lines []server.ClusterLine) {
	if len(lines) == 0 {
		fmt.Fprintln(w, "No clusters.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	owners := slices.ContainsFunc(lines, func(c server.ClusterLine) bool { return c.Owner != "" })
	lastRuns := slices.ContainsFunc(lines, func(c server.ClusterLine) bool { return c.LastRun != nil })
	head := []string{"CLUSTER", "STATUS", "HEALTH", "CONVERGED", "APPLIED", "HEAD", "NODES"}
	if owners {
		head = append(head, "OWNER")
	}
	if lastRuns {
		head = append(head, "LAST RUN")
	}
	fmt.Fprintln(tw, strings.Join(append(head, "PROBLEMS"), "\t"))
	for _, c := range lines {
		problems := append(slices.Clone(c.Problems), c.HealthProblems...)
		problem := ""
		if len(problems) > 0 {
			problem = problems[0]
			if len(problems) > 1 {
				problem += fmt.Sprintf(" (and %d more)", len(problems)-1)
			}
		}
		health := c.Health
		if health == "" {
			health = "-" // a serve of an older version
		}
		// Every column may come from a serve (--server): each is a cell.
		cells := []string{cell(c.Name), cell(c.Status), cell(health), fmt.Sprintf("%d/%d", c.NodesConverged, c.Nodes),
			cell(shortRev(c.AppliedRevision)), cell(shortRev(c.HeadRevision)), fmt.Sprint(c.Nodes)}
		if owners {
			cells = append(cells, cell(cmp.Or(c.Owner, "-")))
		}
		if lastRuns {
			run := "-"
			if c.LastRun != nil {
				run = c.LastRun.ID + " " + c.LastRun.Status
			}
			cells = append(cells, cell(run))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, cell(problem)), "\t"))
	}
	tw.Flush()
}

// cell is s escaped to print as a cell of a table: on one line, as
// safetext.Line escapes it, and without a tab, which would end the cell.
func cell(s string) string {
	return strings.ReplaceAll(safetext.Line(s), "\t", `\t`)
}

func shortRev(rev string) string {
	if rev == "" {
		return "-"
	}
	return gitsource.Short(rev)
}

// serverClusters asks serve at url for its clusters.
func serverClusters(c *cli.Context, url string) ([]server.ClusterLine, error) {
	client, err := serveClient(c, url)
	if err != nil {
		return nil, err
	}
	var lines []server.ClusterLine
	if err := client.Clusters(c.Context, &lines); err != nil {
		return nil, &exitError{code: 1, msg: "asking serve for its clusters: " + redact.Text(err.Error())}
	}
	return lines, nil
}

func approveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "approve",
		Usage:        "apply the plan of a sync: manual cluster that awaits approval, exactly as planned",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "A cluster with sync: manual is planned on every commit and waits (awaiting_approval)\n" +
			"with its plan; approve applies exactly that plan: the revision it was made of, rendered\n" +
			"again, must give the planned artifacts, and the cluster's applied artifacts must be those\n" +
			"it was made against. --revision REV pins the plan reviewed: when a newer commit replaced\n" +
			"it, approve refuses and changes nothing. It works on the state (the work directory, or\n" +
			"--state etcd://...), or asks a running serve with --server URL (with the API token).\n" +
			"fuelsync status shows the clusters awaiting approval.",
		Flags: append(serverFlags(),
			&cli.StringFlag{Name: "cluster", Required: true, Usage: "the cluster `C` whose plan to apply"},
			&cli.StringFlag{Name: "revision", Usage: "apply the plan only if it is the plan of revision `REV` (a commit, 7 hex digits or more of it, or the plan's artifacts digest)"},
			&cli.DurationFlag{Name: "lock-timeout", Usage: "wait up to `DURATION` for the lock", DefaultText: "fail at once"},
			formatFlag()),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("approve takes no arguments (got %q)", c.Args().First())}
			}
			name, ref := c.String("cluster"), c.String("revision")
			if url := c.String("server"); url != "" {
				return serverApprove(c, url, name, ref, stdout, stderr)
			}
			env, err := openOpEnv(c, stdout, stderr)
			if err != nil {
				return err
			}
			defer env.close()
			return env.approve(name, ref, c.Duration("lock-timeout"))
		},
	}
}

// serverApprove asks serve at server (its URL) to apply the pending plan of cluster name
// (the plan of ref, when ref is not empty), and says which plan it approved.
func serverApprove(c *cli.Context, server, name, ref string, stdout, stderr io.Writer) error {
	g, err := readGlobals(c, stdout, stderr)
	if err != nil {
		return err
	}
	client, err := serveClient(c, server)
	if err != nil {
		return err
	}
	answer, err := client.Approve(c.Context, name, ref)
	if err != nil {
		return &exitError{code: 1, msg: "approving: " + redact.Text(err.Error())}
	}
	if g.format == formatJSON {
		return writeJSON(stdout, answer)
	}
	var summary diff.Summary
	if len(answer.Summary) > 0 {
		if err := json.Unmarshal(answer.Summary, &summary); err != nil {
			return &exitError{code: 1, msg: "the approval's answer: " + err.Error()}
		}
	}
	if !g.quiet {
		pd := &state.Pending{Revision: answer.Revision, Digest: answer.Digest, Summary: summary}
		fmt.Fprintf(stdout, "Approved: cluster %s, %s; serve applies it at its next reconcile.\n", safetext.Line(name), approvedPlan(pd))
	}
	return nil
}

// approvedPlan says which plan was approved: its revision and digest (short)
// and its summary, escaped (a serve's answer is text from elsewhere).
func approvedPlan(pd *state.Pending) string {
	return safetext.Line("the plan of " + operation.PendingRef(pd) + ": " + pd.Summary.Line())
}

// approve applies the pending plan of cluster name, read from the state
// (when ref is not empty, only if it is the plan of ref).
func (e *opEnv) approve(name, ref string, lockTimeout time.Duration) error {
	w, err := e.workdir()
	if err != nil {
		return err
	}
	st, err := w.ReadState()
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	cs := st.Clusters[name]
	switch {
	case cs == nil:
		return &exitError{code: 1, msg: fmt.Sprintf("no cluster %q in the applied state (%s)", name, w.StateName())}
	case cs.Pending == nil:
		return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no plan awaiting approval (its status is %s)", name, cs.StatusOf())}
	}
	if err := operation.CheckApproved(name, cs.Pending, ref); err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	pg := *e.g
	pg.rev = cs.Pending.Revision
	if gitsource.IsWorkingTree(pg.rev) {
		pg.rev = ""
	}
	src, err := openSource(&pg)
	if err != nil {
		return err
	}
	src.pin(&pg)
	req := e.request(src, opArgs{targets: []string{name}, lockTimeout: lockTimeout})
	req.Apply, req.Approve, req.Lock = true, cs.Pending, "approve"
	res, err := e.operation(src).Run(e.c.Context, req)
	if err != nil {
		var ae *operation.ApprovalError
		if errors.As(err, &ae) {
			return &exitError{code: 1, msg: err.Error()}
		}
		return e.opError(res, src, err)
	}
	v := newPlanView(e.g)
	v.diagnostics(res, src)
	if !e.g.quiet && e.g.format == formatText {
		if err := v.plan(res); err != nil {
			return err
		}
		fmt.Fprintf(e.g.stdout, "Approved: cluster %s, %s\n", safetext.Line(name), approvedPlan(cs.Pending))
	}
	return v.applied(res, w)
}
