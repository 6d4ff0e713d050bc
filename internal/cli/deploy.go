package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/base/safetext"
)

// deployCommand is fuelsync deploy: the deployment runs of a running serve.
func deployCommand(stdout, stderr io.Writer) *cli.Command {
	nodes := &cli.StringSliceFlag{Name: "node", Usage: "only node `N` (repeatable)"}
	return &cli.Command{
		Name:         "deploy",
		Usage:        "deploy a cluster's applied graph with its nodes' agents, as Fuel's astute did; retry, stop, show runs",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Asks the running serve (--server) to start a deployment run of the cluster's applied graph\n" +
			"(--graph, default default), on every node or those of --node: each node's agent (fuelsync agent)\n" +
			"takes its tasks in dependency order, across nodes, with the tasks' strategies and at most\n" +
			"--max-nodes busy nodes; a failed task fails its node, and the fault-tolerance groups decide\n" +
			"when the run stops. --noop runs puppet with --noop and nothing else. --watch follows the run\n" +
			"until it ends (exit 1 when it failed). Needs serve --agent-secret-file and --api-token-file.\n" +
			"docs/deploy.md.",
		Flags: append(deployServerFlags(),
			&cli.StringFlag{Name: "graph", Value: "default", Usage: "the graph type `G` to deploy"},
			nodes,
			&cli.BoolFlag{Name: "noop", Usage: "a noop run: puppet --noop, nothing else runs"},
			&cli.IntFlag{Name: "max-nodes", Usage: "at most `N` nodes busy at once (serve's --max-nodes by default)"},
			&cli.BoolFlag{Name: "watch", Usage: "follow the run until it ends; exit 1 when it failed"},
		),
		Action: runAction(stdout, stderr, "starting the run", func(c *cli.Context, client *api.Client) (*api.Run, error) {
			return client.StartRun(c.Context, c.String("cluster"), &api.StartRun{Graph: c.String("graph"),
				Nodes: c.StringSlice("node"), Noop: c.Bool("noop"), MaxNodes: c.Int("max-nodes")})
		}),
		Subcommands: []*cli.Command{
			deployRetryCommand(stdout, stderr),
			deployStopCommand(stdout, stderr),
			deployStatusCommand(stdout, stderr),
		},
	}
}

// deployServerFlags are the flags every deploy command takes: the serve
// asked, its API token, the cluster and the output format.
func deployServerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Value: "http://127.0.0.1:8080", Usage: "the running fuelsync serve at `URL` that coordinates the runs"},
		&cli.StringFlag{Name: "api-token-file", Usage: "the bearer token of serve's API, in `FILE`"},
		&cli.StringFlag{Name: "cluster", Usage: "the cluster `C` (required)"},
		formatFlag(),
	}
}

// deployRetryCommand is fuelsync deploy retry: a new run of what the last did not do.
func deployRetryCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "retry",
		Usage:     "run again what failed, was dep_failed or did not run in the cluster's last run",
		ArgsUsage: " ",
		Description: "A new run of the last run's graph and serial, in which every task that succeeded there is\n" +
			"done already; on the nodes retried (all, or --node), the rest runs again. Refused while the last\n" +
			"run runs. docs/deploy.md.",
		OnUsageError: usageError,
		Flags:        append(deployServerFlags(), &cli.StringSliceFlag{Name: "node", Usage: "only node `N` (repeatable)"}, &cli.BoolFlag{Name: "watch", Usage: "follow the run until it ends"}),
		Action: runAction(stdout, stderr, "retrying", func(c *cli.Context, client *api.Client) (*api.Run, error) {
			return client.RetryRun(c.Context, c.String("cluster"), &api.RetryRun{Nodes: c.StringSlice("node")})
		}),
	}
}

// deployStopCommand is fuelsync deploy stop: the cluster's running run stopped.
func deployStopCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "stop the cluster's running run: running tasks finish, nothing new starts",
		ArgsUsage: " ",
		Description: "As a fault-tolerance group over its tolerance stops a run: the tasks running finish and are\n" +
			"reported, nothing new starts, the tasks not started end skipped. docs/deploy.md.",
		OnUsageError: usageError,
		Flags:        append(deployServerFlags(), &cli.BoolFlag{Name: "watch", Usage: "follow the run until it ends"}),
		Action: runAction(stdout, stderr, "stopping", func(c *cli.Context, client *api.Client) (*api.Run, error) {
			return client.StopRun(c.Context, c.String("cluster"))
		}),
	}
}

// runAction is the action of a deploy command that asks serve for a run
// (start, retry, stop: what, said when it fails) and shows it, following it
// with --watch.
func runAction(stdout, stderr io.Writer, what string, ask func(*cli.Context, *api.Client) (*api.Run, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		d, err := newDeployer(c, stdout, stderr)
		if err != nil {
			return err
		}
		run, err := ask(c, d.client)
		if err != nil {
			return d.fail(what, err)
		}
		return d.follow(run, c.Bool("watch"))
	}
}

// deployStatusCommand is fuelsync deploy status: a run, its nodes and failed tasks.
func deployStatusCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show the cluster's runs, and one run's nodes and failed tasks",
		ArgsUsage: " ",
		Description: "A run (--run ID, the newest by default): its status (running, stopping, succeeded, failed), why\n" +
			"it stopped, its tasks by status, its failed nodes and failed tasks with their messages; with\n" +
			"--format json, the whole run (every node's tasks, times, requirements).",
		OnUsageError: usageError,
		Flags:        append(deployServerFlags(), &cli.StringFlag{Name: "run", Value: "latest", Usage: "the run `ID`"}),
		Action: func(c *cli.Context) error {
			d, err := newDeployer(c, stdout, stderr)
			if err != nil {
				return err
			}
			tasks := api.TasksFailed
			if d.format == formatJSON {
				tasks = api.TasksAll
			}
			run, err := d.client.RunTasks(c.Context, c.String("cluster"), c.String("run"), tasks)
			if err != nil {
				return d.fail("reading the run", err)
			}
			return d.show(run)
		},
	}
}

// deployer is what the deploy commands share: the client and the output.
type deployer struct {
	c              *cli.Context
	client         *api.Client
	format         outputFormat
	stdout, stderr io.Writer
}

func newDeployer(c *cli.Context, stdout, stderr io.Writer) (*deployer, error) {
	if c.NArg() > 0 {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("%s takes no arguments (got %q)", c.Command.HelpName, c.Args().First())}
	}
	if c.String("cluster") == "" {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("%s: --cluster is required", c.Command.HelpName)}
	}
	d := &deployer{c: c, format: commandFormat(c), stdout: stdout, stderr: stderr}
	client, err := serveClient(c, c.String("server"))
	if err != nil {
		return nil, err
	}
	d.client = client
	return d, nil
}

// serveClient is the client of serve's API at server (its --server URL),
// with the bearer token of --api-token-file when given: the one client of
// every command that asks a running serve (deploy, wait, status, approve).
func serveClient(c *cli.Context, server string) (*api.Client, error) {
	u, err := serveURL("--server", server)
	if err != nil {
		return nil, err
	}
	client := &api.Client{Base: u}
	if f := c.String("api-token-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &exitError{code: 1, msg: "--api-token-file: " + err.Error()}
		}
		client.Token = strings.TrimSpace(string(data))
	}
	return client, nil
}

// serveURL is serve's URL s, given by flag: http:// or https://, with a host.
func serveURL(flag, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &exitError{code: 1, msg: flag + ": want serve's http:// or https:// URL"}
	}
	return u, nil
}

func (d *deployer) fail(what string, err error) error {
	return &exitError{code: 1, msg: what + ": " + redact.Text(err.Error())}
}

// follow shows a run, and with watch follows it until it ends (exit 1 when
// it failed), showing its progress as it goes.
func (d *deployer) follow(run *api.Run, watch bool) error {
	if !watch {
		return d.show(run)
	}
	p := newProgress(d.format, d.stdout, d.stderr)
	for run.Status == api.RunRunning || run.Status == api.RunStopping {
		p.showRun(run)
		select {
		case <-time.After(time.Second):
		case <-d.c.Context.Done():
			return &exitError{code: 1, msg: "interrupted; the run goes on"}
		}
		ctx, cancel := context.WithTimeout(d.c.Context, 30*time.Second)
		next, err := d.client.RunTasks(ctx, run.Cluster, run.ID, api.TasksNone)
		cancel()
		if err != nil {
			fmt.Fprintln(d.stderr, "reading the run:", redact.Text(err.Error()))
			continue
		}
		run = next
	}
	if full, err := d.client.RunTasks(d.c.Context, run.Cluster, run.ID, api.TasksFailed); err == nil {
		run = full // its failed tasks, for show
	}
	if err := d.show(run); err != nil {
		return err
	}
	if run.Status == api.RunFailed {
		return &exitError{code: 1}
	}
	return nil
}

// show prints a run: its status, counts, failed nodes and failed tasks.
func (d *deployer) show(run *api.Run) error {
	if d.format == formatJSON {
		return writeJSON(d.stdout, run)
	}
	w := d.stdout
	fmt.Fprintf(w, "run %s of cluster %s: %s (graph %s, serial %d", run.ID, safetext.Line(run.Cluster), run.Status, run.Graph, run.Serial)
	if run.Revision != "" {
		fmt.Fprintf(w, ", revision %s", shortRev(run.Revision))
	}
	if run.Noop {
		fmt.Fprint(w, ", noop")
	}
	fmt.Fprintln(w, ")")
	if run.Reason != "" {
		fmt.Fprintf(w, "  stopped: %s\n", safetext.Line(run.Reason))
	}
	var counts []string
	for _, st := range []string{"succeeded", "failed", "dep_failed", "skipped", "running", "pending"} {
		if n := run.Counts[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, st))
		}
	}
	fmt.Fprintf(w, "  tasks: %s\n", strings.Join(counts, ", "))
	if len(run.FailedNodes) > 0 {
		fmt.Fprintf(w, "  failed nodes: %s\n", safetext.Line(strings.Join(run.FailedNodes, ", ")))
	}
	for _, n := range run.Nodes {
		for _, t := range n.Tasks {
			if t.Status == api.TaskFailed {
				fmt.Fprintf(w, "  %s@%s failed: %s\n", safetext.Line(t.ID), n.Name, safetext.Line(t.Message))
			}
		}
	}
	return nil
}
