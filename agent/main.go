package agent

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Usage is the agent's usage, as fuelsync agent --help and fuelsync-agent
// --help print it.
const Usage = `usage: fuelsync agent --server URL --cluster C --node N --token-file F [--state-dir DIR]
                      [--wait D] [--once] [--exec TYPE=CMD]... [--puppet CMD] [--reboot CMD]
                      [--root DIR] [--log-format text|json]

A node's agent: it asks serve for the node's next task of its cluster's deployment run
(GET /api/v1/clusters/<c>/nodes/<n>/tasks/next, a long-poll), runs it with the built-in
executor of its type (shell, puppet, upload_file, sync, copy_files, reboot; stage, group,
skipped and noop do nothing), says every few seconds that it still runs, and reports how it
ended (POST .../nodes/<n>/runs/<run>/tasks). Serve decides the order: the agent runs only
what it is given, for its own node, exactly as rendered. docs/agent.md, docs/executors.md.

flags:
`

// Version and Commit are the build's (cmd/fuelsync-agent sets them from its
// link flags); "fuelsync-agent version" prints them.
var Version, Commit string

// Main runs the agent with the command line args (without the program's
// name) and returns the exit status: 0, or 1 on a bad flag, a refused
// token, or (with --once) a failed task. "version" prints the build.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "version" {
		fmt.Fprintf(stdout, "fuelsync-agent %s\ncommit: %s\ngo: %s\n", cmp.Or(Version, "dev"), cmp.Or(Commit, "unknown"), runtime.Version())
		return 0
	}
	a, logFormat, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "fuelsync agent:", err)
		return 1
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if logFormat == "json" {
		h = slog.NewJSONHandler(stderr, nil)
	}
	a.Log = slog.New(h)
	a.Executor.Journal = stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.Log.Info("agent started", "server", a.Server.Redacted(), "cluster", a.Cluster, "node", a.Node)
	switch err := a.Run(ctx); {
	case errors.Is(err, ErrTaskFailed):
		fmt.Fprintln(stderr, "fuelsync agent: a task failed (reported to serve)")
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "fuelsync agent:", err)
		return 1
	}
	return 0
}

// execFlag collects --exec TYPE=CMD.
type execFlag map[string][]string

func (e execFlag) String() string { return "" }

func (e execFlag) Set(v string) error {
	typ, cmd, ok := strings.Cut(v, "=")
	if !ok || typ == "" || strings.TrimSpace(cmd) == "" {
		return errors.New("want TYPE=CMD (the command that runs tasks of that type, with /bin/sh -c)")
	}
	e[typ] = []string{"/bin/sh", "-c", cmd}
	return nil
}

// FlagsHelp lists the agent's flags as its --help does.
func FlagsHelp() string {
	var b strings.Builder
	fs, _ := newFlags(&b)
	fs.PrintDefaults()
	return b.String()
}

// flagValues are the parsed flags.
type flagValues struct {
	server, cluster, node, tokenFile, stateDir, puppet, reboot, logFormat, root *string
	wait                                                                        *time.Duration
	once                                                                        *bool
	execs                                                                       execFlag
}

// newFlags defines the agent's flags.
func newFlags(out io.Writer) (*flag.FlagSet, *flagValues) {
	fs := flag.NewFlagSet("fuelsync agent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, Usage); fs.PrintDefaults() }
	v := &flagValues{execs: execFlag{}}
	v.server = fs.String("server", "", "serve's `URL` (http:// or https://)")
	v.cluster = fs.String("cluster", "", "the node's cluster `C`")
	v.node = fs.String("node", "", "the node `N`")
	v.tokenFile = fs.String("token-file", "", "the node's token (fuelsync agent-token), in `FILE`")
	v.stateDir = fs.String("state-dir", os.Getenv("STATE_DIRECTORY"), "the agent's state `DIR` (default $STATE_DIRECTORY, systemd's StateDirectory=)")
	v.wait = fs.Duration("wait", DefaultWait, "ask serve to wait up to `DURATION` for a task (a long-poll)")
	v.once = fs.Bool("once", false, "exit after a poll that brings no task: 0 when every task run succeeded, 1 when one failed")
	v.puppet = fs.String("puppet", "", "the puppet `COMMAND` words (default: puppet apply --detailed-exitcodes)")
	v.reboot = fs.String("reboot", "", "the reboot `COMMAND` words (default: shutdown -r now)")
	v.logFormat = fs.String("log-format", "text", "log `FORMAT`: text or json")
	v.root = fs.String("root", "", "take every absolute path of a task under `DIR` (the node's root as a container mounts it)")
	fs.Var(v.execs, "exec", "`TYPE=CMD`: run tasks of TYPE with /bin/sh -c CMD instead of the built-in executor (the task as JSON on its input and in $FUELSYNC_TASK_FILE); repeatable")
	return fs, v
}

// parseArgs reads the command line into an Agent.
func parseArgs(args []string, stderr io.Writer) (*Agent, string, error) {
	fs, v := newFlags(stderr)
	server, cluster, node, tokenFile, stateDir := v.server, v.cluster, v.node, v.tokenFile, v.stateDir
	wait, once, puppet, reboot, logFormat, execs := v.wait, v.once, v.puppet, v.reboot, v.logFormat, v.execs
	if err := fs.Parse(args); err != nil {
		return nil, "", err
	}
	if fs.NArg() > 0 {
		return nil, "", fmt.Errorf("no arguments are taken (got %q)", fs.Arg(0))
	}
	for _, f := range [][2]string{{"--server", *server}, {"--cluster", *cluster}, {"--node", *node}, {"--token-file", *tokenFile}} {
		if f[1] == "" {
			return nil, "", fmt.Errorf("%s is required", f[0])
		}
	}
	if *stateDir == "" {
		return nil, "", errors.New("--state-dir: where the agent keeps the task it runs (systemd's StateDirectory= sets it)")
	}
	if *wait < time.Second {
		return nil, "", errors.New("--wait must be at least 1s")
	}
	if *logFormat != "text" && *logFormat != "json" {
		return nil, "", errors.New("--log-format must be text or json")
	}
	u, err := url.Parse(*server)
	if err != nil {
		return nil, "", fmt.Errorf("--server: %s", strings.ReplaceAll(err.Error(), *server, "<the URL>"))
	}
	token, err := os.ReadFile(*tokenFile)
	if err != nil {
		return nil, "", fmt.Errorf("--token-file: %w", err)
	}
	if len(strings.TrimSpace(string(token))) == 0 {
		return nil, "", fmt.Errorf("the token file %s is empty: write the node's token into it (fuelsync agent-token, where serve's agent secret is)", *tokenFile)
	}
	a := &Agent{Server: u, Cluster: *cluster, Node: *node, Token: strings.TrimSpace(string(token)), Dir: *stateDir,
		Wait: *wait, Once: *once}
	a.Executor.Puppet, a.Executor.Reboot, a.Executor.Root = strings.Fields(*puppet), strings.Fields(*reboot), *v.root
	if len(execs) > 0 {
		a.Executor.Overrides = execs
	}
	if err := a.Check(); err != nil {
		return nil, "", err
	}
	return a, *logFormat, nil
}
