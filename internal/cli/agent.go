package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/agent"
	"github.com/fuelsync/fuelsync/internal/redact"
	"github.com/fuelsync/fuelsync/loader"
)

func agentCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "agent",
		Usage:        "a node's agent: run its applied graph with --exec whenever serve hands it a new one, and report back",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Long-polls the node's graph from serve's artifact API (GET /api/v1/clusters/<c>/nodes/<n>/graphs/<g>),\n" +
			"and for each new graph runs --exec (with sh -c) with the graph in the file $FUELSYNC_GRAPH_FILE and on\n" +
			"its standard input; reports running, then the result (POST .../reports): success when the command\n" +
			"exits 0 and no task failed, failed otherwise. Lines the command prints as\n" +
			"  fuelsync-task <id> <running|success|failed|skipped> [message]\n" +
			"become the report's task statuses. The ETag of the last graph run (and a result serve has not\n" +
			"taken yet) is kept in --state-dir, so that a restarted agent resumes where it was. The agent backs\n" +
			"off with jitter while serve is away or answers 429 or 503 (honouring Retry-After). SIGINT and SIGTERM\n" +
			"stop it (a running command gets SIGTERM; its graph runs again at the next start). docs/agent.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Required: true, Usage: "serve's `URL` (http:// or https://)"},
			&cli.StringFlag{Name: "cluster", Required: true, Usage: "the node's cluster `C`"},
			&cli.StringFlag{Name: "node", Required: true, Usage: "the node `N`"},
			&cli.StringFlag{Name: "graph", Value: "default", Usage: "the graph type `G` to run"},
			&cli.StringFlag{Name: "token-file", Required: true, Usage: "the node's token (fuelsync agent-token), in `FILE`"},
			&cli.StringFlag{Name: "exec", Required: true, Usage: "the `CMD` that runs a graph, with sh -c"},
			&cli.StringFlag{Name: "state-dir", EnvVars: []string{"STATE_DIRECTORY"}, Usage: "the `DIR` of the agent's state and graph files (systemd's StateDirectory=)"},
			&cli.DurationFlag{Name: "wait", Value: agent.DefaultWait, Usage: "ask serve to wait up to `DURATION` for a change (a long-poll)"},
			&cli.BoolFlag{Name: "once", Usage: "run the graph once if it is not the one run last, then exit (1 when the run failed)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log `FORMAT`: text or json"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("agent takes no arguments (got %q); quote the command of --exec", c.Args().First())}
			}
			u, err := url.Parse(c.String("server"))
			if err != nil {
				return &exitError{code: 1, msg: "--server: " + redact.Text(err.Error())}
			}
			for _, n := range [][2]string{{"--cluster", c.String("cluster")}, {"--node", c.String("node")}, {"--graph", c.String("graph")}} {
				if !loader.IsName(n[1]) {
					return &exitError{code: 1, msg: fmt.Sprintf("%s %q is not a name: %s", n[0], n[1], nameRuleText)}
				}
			}
			if c.String("state-dir") == "" {
				return &exitError{code: 1, msg: "--state-dir: where the agent keeps the ETag of the graph it ran last (systemd's StateDirectory= sets it)"}
			}
			if c.Duration("wait") < time.Second {
				return &exitError{code: 1, msg: "--wait must be at least 1s"}
			}
			token, err := readCredential(c.String("token-file"), "the token file %[1]s is empty: write the node's token into it (fuelsync agent-token, where serve's agent secret is)")
			if err != nil {
				return err
			}
			var h slog.Handler
			switch c.String("log-format") {
			case "text":
				h = slog.NewTextHandler(stderr, nil)
			case "json":
				h = slog.NewJSONHandler(stderr, nil)
			default:
				return &exitError{code: 1, msg: "--log-format must be text or json"}
			}
			shell := []string{"/bin/sh", "-c", c.String("exec")}
			if runtime.GOOS == "windows" {
				shell = []string{"cmd", "/C", c.String("exec")}
			}
			a := &agent.Agent{
				Server:  u,
				Cluster: c.String("cluster"),
				Node:    c.String("node"),
				Graph:   c.String("graph"),
				Token:   string(token),
				Command: shell,
				Dir:     c.String("state-dir"),
				Wait:    c.Duration("wait"),
				Once:    c.Bool("once"),
				Stdout:  stdout,
				Stderr:  stderr,
				Log:     slog.New(h),
			}
			if err := a.Check(); err != nil {
				return &exitError{code: 1, msg: redact.Text(err.Error())}
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			a.Log.Info("agent started", "server", redact.URL(u.String()), "cluster", a.Cluster, "node", a.Node, "graph", a.Graph)
			err = a.Run(ctx)
			switch {
			case errors.Is(err, agent.ErrRunFailed):
				return &exitError{code: 1, msg: "the graph's run failed (reported to serve)"}
			case err != nil:
				return &exitError{code: 1, msg: redact.Text(err.Error())}
			}
			return nil
		},
	}
}
