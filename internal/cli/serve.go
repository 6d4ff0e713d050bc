package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/server"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

func watchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "branch", Usage: "follow branch `B` (default: HEAD)"},
		&cli.DurationFlag{Name: "interval", Value: time.Minute, Usage: "reconcile every `DURATION` besides triggers"},
		&cli.BoolFlag{Name: "dry-run", Usage: "plan only, never apply"},
		&cli.BoolFlag{Name: "allow-empty", Usage: "apply a revision that removes every node of a cluster, or every cluster (held back otherwise)"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log `FORMAT`: text or json"},
		&cli.StringFlag{Name: "ssh-key", Usage: "private key `FILE` for an ssh:// or git@host: remote (default: the SSH agent)"},
		&cli.BoolFlag{Name: "worktree", Usage: "follow the working tree of a local repository, not its commits"},
		&cli.StringFlag{Name: "publish", Usage: "`git`: commit every applied set to --publish-branch"},
		&cli.StringFlag{Name: "publish-branch", Value: "rendered", Usage: "the `BRANCH` --publish git commits to"},
	}
}

// newLoop builds the reconcile loop of watch and serve.
func newLoop(g *globals, c *cli.Context) (*controller.Loop, error) {
	if err := checkLoadEnv(); err != nil {
		return nil, err
	}
	settings, err := loopSettingsFor(c, g) // flags over fuelsync.yaml
	if err != nil {
		return nil, err
	}
	if err := checkBranchFlags(c, settings); err != nil {
		return nil, err
	}
	// A directory fuelsync refuses stays refused: say so once, at start-up,
	// rather than at every retry of the reconcile.
	if err := settings.Workdir.CheckUsable(); err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	src, err := loopSource(g, c)
	if err != nil {
		return nil, err
	}
	var h slog.Handler
	switch c.String("log-format") {
	case "text":
		h = slog.NewTextHandler(g.stderr, nil)
	case "json":
		h = slog.NewJSONHandler(g.stderr, nil)
	default:
		return nil, &exitError{code: 1, msg: "--log-format must be text or json"}
	}
	var publish *gitsource.Publisher
	switch settings.Publish {
	case "":
	case "git":
		publish = &gitsource.Publisher{Branch: settings.PublishBranch}
	default:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--publish takes git, not %q", settings.Publish)}
	}
	return &controller.Loop{
		Publish:     publish,
		Workdir:     settings.Workdir,
		Source:      src,
		DryRun:      c.Bool("dry-run"),
		AllowEmpty:  c.Bool("allow-empty"),
		Interval:    settings.Interval,
		ToolVersion: version,
		ToolCommit:  commit,
		Log:         slog.New(h),
		// The budget of every load; the loop makes its own cache.
		Load: loadOptions(nil),
	}, nil
}

// loopSource is what watch and serve follow: a branch of a remote repository
// (--repo URL), of a local one, or with --worktree its working tree; the
// folder --path (or the way from the top of the git work tree to --repo) of
// each. A local repository that does not exist, or is in no git repository,
// fails at start-up.
func loopSource(g *globals, c *cli.Context) (gitsource.Source, error) {
	if isRemote(g.repo) {
		auth, err := gitAuth(g.repo, c.String("ssh-key"))
		if err != nil {
			return nil, &exitError{code: 1, msg: err.Error()}
		}
		return &gitsource.RemoteSource{URL: g.repo, Branch: c.String("branch"), CacheDir: filepath.Join(g.workdir, "cache"), Dir: g.path, Auth: auth}, nil
	}
	if _, err := os.Stat(g.repo); err != nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
	}
	top, dir, err := g.gitRepo(c.Command.Name + " follows the")
	if c.Bool("worktree") {
		wt := &gitsource.WorktreeSource{Path: g.repo, Load: loadOptions(nil), Skip: inputSkip(g, &source{worktree: true})}
		if err == nil {
			wt.Top, wt.Dir = top, dir
		}
		return wt, nil
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			ee.msg += ", or follow its working tree (--worktree)"
		}
		return nil, err
	}
	return &gitsource.LocalSource{Path: top, Branch: c.String("branch"), Dir: dir}, nil
}

func watchCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "watch",
		Usage:        "follow a branch: reconcile every new commit (validate, plan, apply)",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Follows a branch of the repository --repo (a path or a URL): reconciles at start, then\n" +
			"every --interval. A commit that does not validate is not applied; its errors are logged with\n" +
			"file and line. A commit that removes every node of a cluster, or every cluster, is held back\n" +
			"unless --allow-empty (or allow_empty: true in fuelsync.yaml). SIGINT and SIGTERM stop it\n" +
			"between reconciles, never in one.",
		Flags: watchFlags(),
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			loop, err := newLoop(g, c)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := checkPublish(ctx, loop); err != nil {
				return err
			}
			logFollowing(g, c, loop)
			watchLocal(ctx, g, c, loop)
			err = loop.Run(ctx)
			loop.Log.Info("stopped", "reason", "signal")
			return err
		},
	}
}

// fdReserve is the open files serve keeps for itself beyond its sockets: the
// reconciles' files, the git fetch, etcd, the log.
const fdReserve = 1024

func serveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "serve",
		Usage:        "watch, plus webhooks, health, status, metrics and a status page over HTTP",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "watch plus HTTP on --listen: POST /hooks/github|gitlab|gitea|generic (signed with the\n" +
			"secret of --webhook-secret-file, which must not be empty; 202 then a reconcile), GET /healthz,\n" +
			"/readyz, /metrics, /api/v1/status, /api/v1/releases/<version>/components and the status page /.\n" +
			"Nodes' agents read their applied graphs from GET /api/v1/clusters/<cluster>/nodes/<node>/graphs/<graph>\n" +
			"(ETag = sha256; If-None-Match with ?wait=60s waits for a change, at most --max-wait, at most\n" +
			"--max-waiting at once, 429 with Retry-After beyond) and the cluster from\n" +
			"GET /api/v1/clusters/<cluster>. With --api-token-file, these and the component registry\n" +
			"need Authorization: Bearer <token>; the rest stays open:\n" +
			"keep --listen on loopback or behind a reverse proxy.\n" +
			"Limits: headers in 10 s, requests in 30 s, responses in 60 s, idle connections closed after\n" +
			"60 s, at most --max-connections connections (idle ones closed first to make room, then ones\n" +
			"that have not sent their headers in 1 s answered 429), waiting requests counted apart. serve\n" +
			"needs 2 x --max-connections + --max-waiting + 1024 open files (ulimit -n, LimitNOFILE).\n" +
			"With the state on etcd (--state etcd://…), any number of serve processes may run, each with\n" +
			"its own --workdir: one is elected leader and reconciles; the others (followers) render the\n" +
			"applied revision themselves, serve it once every file matches the state's sha256, and hand\n" +
			"webhooks to the leader. The status names each replica's role and the leader (--replica-id).\n" +
			"With --shard, the replicas share the clusters instead: each cluster is owned by one live\n" +
			"replica (rendezvous hashing over the members), which alone applies it; every replica still\n" +
			"serves every cluster. Off by default (docs/etcd.md, Shards).",
		Flags: append(watchFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "listen on `ADDR`"},
			&cli.StringFlag{Name: "webhook-secret-file", Usage: "the webhooks' shared secret, in `FILE` (not empty)"},
			&cli.IntFlag{Name: "max-connections", Value: server.DefaultLimits.MaxConnections, Usage: "serve at most `N` connections at once (waiting requests not counted; beyond, new ones wait in the accept queue)"},
			&cli.StringFlag{Name: "api-token-file", Usage: "the bearer token of the read API (artifacts, clusters, components), in `FILE` (not empty)"},
			&cli.DurationFlag{Name: "max-wait", Value: server.DefaultMaxWait, Usage: "the longest `DURATION` an artifact request waits for a change (?wait= is cut to it)"},
			&cli.IntFlag{Name: "max-waiting", Value: server.DefaultMaxWaiting, Usage: "at most `N` artifact requests wait at once (429 with Retry-After beyond); each holds a connection and about 26 KB"},
			&cli.StringFlag{Name: "agent-secret-file", Usage: "the secret the nodes' report tokens are derived from (fuelsync agent-token), in `FILE` (not empty); without it, no report is taken"},
			&cli.IntFlag{Name: "report-history", Value: reports.DefaultHistoryKeep, Usage: "keep the last `N` reports of each node"},
			&cli.IntFlag{Name: "reconcile-history", Value: reports.DefaultReconcileKeep, Usage: "keep the last `M` reconciles of each cluster"},
			&cli.StringFlag{Name: "replica-id", Usage: "with the state on etcd, this replica's `NAME` in the election and the status (default: host:pid)"},
			&cli.BoolFlag{Name: "shard", Usage: "with the state on etcd, share the clusters among the replicas (each owned by one) instead of electing one leader"},
			&cli.IntFlag{Name: "max-nodes", Value: runs.DefaultMaxNodes, Usage: "a deployment run keeps at most `N` nodes busy at once (astute's max_nodes_per_call)"},
			&cli.DurationFlag{Name: "agent-heartbeat", Value: runs.DefaultHeartbeat, Usage: "how often an agent says it still runs its task; a task whose agent was silent for three times `DURATION` fails"},
			&cli.StringFlag{Name: "advertise-url", Usage: "with --shard, the `URL` where the other replicas fetch this replica's clusters' files (default: http:// and the --listen address, unless it is a wildcard)"},
			notifyFlag,
		),
		Action: func(c *cli.Context) error { return runServe(c, stdout, stderr) },
	}
}

// enableRuns makes serve coordinate deployments when it takes agents
// (--agent-secret-file): the runs are kept in the work directory.
func enableRuns(c *cli.Context, loop *controller.Loop, srv *server.Server) error {
	if len(srv.AgentSecret) == 0 {
		return nil
	}
	if c.Int("max-nodes") < 1 {
		return &exitError{code: 1, msg: "--max-nodes must be at least 1"}
	}
	if hb := c.Duration("agent-heartbeat"); hb < time.Second {
		return &exitError{code: 1, msg: "--agent-heartbeat must be at least 1s"}
	}
	if c.Bool("shard") {
		loop.Log.Warn("deployment runs are not coordinated by replicas that share the clusters (serve --shard) yet: no run starts")
		return nil
	}
	srv.EnableRuns(&runs.Coordinator{Store: runs.Open(loop.Workdir), Log: loop.Log,
		MaxNodes: c.Int("max-nodes"), Heartbeat: c.Duration("agent-heartbeat")})
	return nil
}

// checkReplicaRoles refuses to start a replica (nil: none) beside replicas
// of the other kind on its state: shards, without --shard; a leader, with
// it. When etcd does not answer within 10 s, the replica starts, and checks
// again once it leads or joins (controller.Replica.Run).
func checkReplicaRoles(ctx context.Context, r *controller.Replica) error {
	if r == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var conflict *controller.RoleConflictError
	if err := r.CheckRoles(cctx); errors.As(err, &conflict) {
		return &exitError{code: 1, msg: err.Error()}
	}
	return nil
}

// readSecret reads the webhook secret of file, trimmed; an empty one is refused,
// since it would let anyone sign deliveries.
func readSecret(file string) ([]byte, error) {
	return readCredential(file, "the webhook secret file %[1]s is empty: anyone could sign a delivery; write a secret into it (for example: openssl rand -hex 32 > %[1]s)")
}

// readToken reads the read API's bearer token from file, trimmed; an empty one
// is refused, since it would let anyone read.
func readToken(file string) ([]byte, error) {
	return readCredential(file, "the API token file %[1]s is empty: the read API would need no token; write a token into it (for example: openssl rand -hex 32 > %[1]s)")
}

// readCredential reads file, trimmed; empty, it is refused with the message
// ifEmpty (a format whose argument is the file name).
func readCredential(file, ifEmpty string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	v := bytes.TrimSpace(data)
	if len(v) == 0 {
		return nil, &exitError{code: 1, msg: fmt.Sprintf(ifEmpty, file)}
	}
	return v, nil
}

// checkBranchFlags refuses a --branch or publish branch (--publish-branch, or
// publish_branch in fuelsync.yaml) that git would not take as a branch name,
// and HEAD (loader.CheckBranchName), before anything starts.
func checkBranchFlags(c *cli.Context, settings loopSettings) error {
	if b := c.String("branch"); b != "" {
		if err := loader.CheckBranchName(b); err != nil {
			msg := "--branch: " + err.Error()
			if strings.TrimPrefix(b, "refs/heads/") == "HEAD" {
				msg += "; leave --branch out to follow HEAD"
			}
			return &exitError{code: 1, msg: msg}
		}
	}
	if settings.Publish != "" {
		if err := loader.CheckBranchName(settings.PublishBranch); err != nil {
			return &exitError{code: 1, msg: "--publish-branch: " + err.Error()}
		}
	}
	return nil
}

// checkPublish refuses --publish git onto the branch followed.
func checkPublish(ctx context.Context, loop *controller.Loop) error {
	if loop.Publish == nil {
		return nil
	}
	if err := loop.Publish.Check(ctx, loop.Source); err != nil {
		return &exitError{code: 1, msg: "--publish-branch: " + err.Error()}
	}
	return nil
}

// logFollowing logs what the loop follows, once at start.
func logFollowing(g *globals, c *cli.Context, loop *controller.Loop) {
	branch := c.String("branch")
	switch {
	case c.Bool("worktree"):
		branch = "(working tree)"
	case branch == "" && isRemote(g.repo):
		branch = "HEAD of the remote"
	case branch == "":
		branch = "HEAD"
	}
	attrs := []any{"repo", redact.URL(g.repo), "branch", branch, "interval", loop.Interval.String(), "workdir", g.workdir, "dry_run", loop.DryRun}
	if loop.Publish != nil {
		attrs = append(attrs, "publish_branch", loop.Publish.Branch)
	}
	loop.Log.Info("watching", attrs...)
}

// isRemote reports whether repo is a URL go-git fetches (https://, ssh://,
// file://, git@host:path) rather than a local path.
func isRemote(repo string) bool {
	return strings.Contains(repo, "://") || regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`).MatchString(repo)
}

// gitAuth is the authentication for a remote: FUELSYNC_GIT_TOKEN over HTTP(S);
// --ssh-key, else the SSH agent, over SSH; none for file://.
func gitAuth(url, sshKey string) (transport.AuthMethod, error) {
	switch {
	case strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://"):
		if token := os.Getenv("FUELSYNC_GIT_TOKEN"); token != "" {
			return &githttp.BasicAuth{Username: "fuelsync", Password: token}, nil
		}
		return nil, nil
	case strings.HasPrefix(url, "file://"):
		return nil, nil
	case sshKey != "":
		return gitssh.NewPublicKeysFromFile("git", sshKey, os.Getenv("FUELSYNC_SSH_KEY_PASSPHRASE"))
	}
	auth, err := gitssh.NewSSHAgentAuth("git")
	if err != nil {
		return nil, fmt.Errorf("%s: no --ssh-key and no SSH agent: %v", redact.URL(url), err)
	}
	return auth, nil
}

// watchLocal triggers the loop on changes of a local repository: its refs (a
// commit, a push into it), or with --worktree its files. Remote repositories are
// polled and triggered by webhooks.
func watchLocal(ctx context.Context, g *globals, c *cli.Context, loop *controller.Loop) {
	if isRemote(g.repo) {
		return
	}
	workdir, _ := filepath.Abs(g.workdir)
	top, _, err := g.gitRepo("")
	if err != nil {
		top = g.repo
	}
	root, skip := filepath.Join(top, ".git"), func(p string) bool { return filepath.Base(p) == "objects" || filepath.Base(p) == "logs" }
	if _, err := os.Stat(root); err != nil {
		root = top // a bare repository
	}
	if c.Bool("worktree") {
		root = g.repo
		skip = func(p string) bool {
			abs, _ := filepath.Abs(p)
			return filepath.Base(p) == ".git" || abs == workdir || strings.HasPrefix(abs, workdir+string(filepath.Separator))
		}
	}
	go func() {
		if err := gitsource.WatchTree(ctx, root, skip, 200*time.Millisecond, loop.Trigger); err != nil {
			loop.Log.Warn("not watching the repository for changes; polling only", "error", err)
		}
	}()
}

// advertiseURL is a shard's advertised URL: flag when set (checked), else
// http:// and the address listened on, unless --listen (listen) names no
// host or a wildcard one, which the other replicas cannot reach; "" then.
func advertiseURL(flag, listen string, addr net.Addr) (string, error) {
	if flag != "" {
		if err := controller.CheckAdvertiseURL(flag); err != nil {
			return "", fmt.Errorf("--advertise-url: %v", err)
		}
		return strings.TrimSuffix(flag, "/"), nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return "", nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "", nil
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "", nil
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// runServe is serve's action: it checks the flags, builds the server and
// its loop (a replica or a shard on etcd), serves until a signal, and then
// shuts down.
func runServe(c *cli.Context, stdout, stderr io.Writer) error {
	// The daemon's metrics (and the etcd backend of its replicas) are
	// in fuelsync-server: run there.
	if !server.HasMetrics() {
		return dispatch(c, "serve")
	}
	g, err := readGlobals(c, stdout, stderr)
	if err != nil {
		return err
	}
	loop, err := newLoop(g, c)
	if err != nil {
		return err
	}
	secret, err := readWebhookSecret(c, loop)
	if err != nil {
		return err
	}
	limits := server.DefaultLimits
	limits.MaxConnections = c.Int("max-connections")
	token, agentSecret, err := readAPISecrets(c)
	if err != nil {
		return err
	}
	if err := checkServeFlags(c, loop); err != nil {
		return err
	}
	notifier, err := loadNotifier(g, c, loop, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := checkPublish(ctx, loop); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	shard, err := newShard(c, loop, token, ln)
	if err != nil {
		ln.Close()
		return err
	}
	srv := server.New(loop, secret)
	srv.APIToken, srv.MaxWait, srv.MaxWaiting = token, c.Duration("max-wait"), c.Int("max-waiting")
	srv.AgentSecret = agentSecret
	loop.Reports.HistoryKeep, loop.Reports.ReconcileKeep = c.Int("report-history"), c.Int("reconcile-history")
	startNotifier(ctx, srv, notifier)
	// With the state on etcd, serve is one of any number of replicas:
	// the elected leader reconciles, the others follow.
	run := replicate(c, loop, srv, shard)
	if err := checkReplicaRoles(ctx, srv.Replica); err != nil {
		ln.Close()
		return err
	}
	if err := enableRuns(c, loop, srv); err != nil {
		ln.Close()
		return err
	}
	hs, limited := server.HTTPServer(srv.Handler(), ln, limits)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limited) }()
	logServing(loop, srv, ln, limits, len(token) > 0, len(agentSecret) > 0)
	logFollowing(g, c, loop)
	watchLocal(ctx, g, c, loop)
	followReportsAndRuns(ctx, loop, srv)
	if err := serveUntilStopped(ctx, stop, hs, errc, run); err != nil {
		return err
	}
	loop.Log.Info("stopped", "reason", "signal")
	return nil
}

// readWebhookSecret reads --webhook-secret-file (nil without: every
// delivery refused, which is logged).
func readWebhookSecret(c *cli.Context, loop *controller.Loop) ([]byte, error) {
	f := c.String("webhook-secret-file")
	if f == "" {
		loop.Log.Warn("no --webhook-secret-file: every webhook delivery is refused (401)")
		return nil, nil
	}
	return readSecret(f)
}

// readAPISecrets reads --api-token-file and --agent-secret-file (nil for
// each not given).
func readAPISecrets(c *cli.Context) (token, agentSecret []byte, err error) {
	if f := c.String("api-token-file"); f != "" {
		if token, err = readToken(f); err != nil {
			return nil, nil, err
		}
	}
	if f := c.String("agent-secret-file"); f != "" {
		if agentSecret, err = readAgentSecret(f); err != nil {
			return nil, nil, err
		}
	}
	return token, agentSecret, nil
}

// checkServeFlags refuses serve's flags that do not go together or are out
// of their range, before anything starts.
func checkServeFlags(c *cli.Context, loop *controller.Loop) error {
	if c.Int("max-connections") < 1 {
		return &exitError{code: 1, msg: "--max-connections must be at least 1"}
	}
	for _, f := range []string{"report-history", "reconcile-history"} {
		if n := c.Int(f); n < 1 || n > reports.MaxKeep {
			return &exitError{code: 1, msg: fmt.Sprintf("--%s must be between 1 and %d", f, reports.MaxKeep)}
		}
	}
	if d := c.Duration("max-wait"); d < server.MinMaxWait {
		return &exitError{code: 1, msg: fmt.Sprintf("--max-wait must be at least %s (the longest wait of an artifact long-poll); got %s", server.MinMaxWait, d)}
	}
	if c.Int("max-waiting") < 0 {
		return &exitError{code: 1, msg: "--max-waiting must not be negative"}
	}
	if _, ok := loop.Workdir.Backend.(state.Coordinator); !ok && c.String("replica-id") != "" {
		return &exitError{code: 1, msg: "--replica-id needs the state on etcd (--state etcd://…): replicas share their state there"}
	}
	if _, ok := loop.Workdir.Backend.(state.Sharder); !ok && c.Bool("shard") {
		return &exitError{code: 1, msg: "--shard needs the state on etcd (--state etcd://…): the shards share their state there"}
	}
	if c.String("advertise-url") != "" && !c.Bool("shard") {
		return &exitError{code: 1, msg: "--advertise-url goes with --shard: it is where the other shards fetch this replica's clusters' files"}
	}
	if c.Bool("shard") && loop.Publish != nil {
		return &exitError{code: 1, msg: "--shard and --publish do not go together yet: each shard commits only its own clusters"}
	}
	return nil
}

// newShard is the shard replica of serve --shard (nil without), before
// the server reads the work directory: it commits as a shard from then on.
func newShard(c *cli.Context, loop *controller.Loop, token []byte, ln net.Listener) (*controller.Replica, error) {
	sh, ok := loop.Workdir.Backend.(state.Sharder)
	if !ok || !c.Bool("shard") {
		return nil, nil
	}
	shard := controller.NewShard(loop, sh, c.String("replica-id"))
	shard.APIToken = token
	var err error
	if shard.AdvertiseURL, err = advertiseURL(c.String("advertise-url"), c.String("listen"), ln.Addr()); err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	if shard.AdvertiseURL == "" {
		loop.Log.Warn("no --advertise-url, and --listen is a wildcard: the other replicas render this replica's clusters instead of fetching their files", "listen", c.String("listen"))
	}
	serveShardFailpoint()
	return shard, nil
}

// serveUntilStopped runs the loop (run) beside the HTTP server hs until a
// signal (ctx), the loop's end or the server's failure, then shuts hs down.
func serveUntilStopped(ctx context.Context, stop func(), hs *http.Server, errc <-chan error, run func(context.Context) error) error {
	done := make(chan struct{})
	var runErr error // a replica's refusal to run (RoleConflictError)
	go func() { runErr = run(ctx); close(done) }()
	select {
	case <-ctx.Done():
	case <-done:
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			stop()
			<-done
			return &exitError{code: 1, msg: err.Error()}
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	<-done
	if runErr != nil && ctx.Err() == nil {
		return &exitError{code: 1, msg: runErr.Error()}
	}
	return nil
}

// logServing says serve is serving, with its bounds, and warns when the
// open file limit is below what they need.
func logServing(loop *controller.Loop, srv *server.Server, ln net.Listener, limits server.Limits, withToken, withAgents bool) {
	loop.Log.Info("serving", "listen", ln.Addr().String(), "max_connections", limits.MaxConnections,
		"max_waiting", srv.MaxWaiting, "max_wait", srv.MaxWait.String(), "api_token", withToken,
		"agent_secret", withAgents, "report_history", loop.Reports.HistoryKeep, "reconcile_history", loop.Reports.ReconcileKeep)
	// Every socket is a descriptor: connections (and as many being
	// refused), waiting requests, and the reconciles' files.
	need := uint64(2*limits.MaxConnections + srv.MaxWaiting + fdReserve)
	if have, ok := openFileLimit(); ok && have < need {
		loop.Log.Warn("the open file limit is below what the connection limits need: raise it (ulimit -n, LimitNOFILE) or lower --max-waiting",
			"open_files", have, "need", need, "max_connections", limits.MaxConnections, "max_waiting", srv.MaxWaiting)
	}
}

// followReportsAndRuns follows the nodes' reports (on etcd, those other
// replicas take) and resumes the deployment runs, until ctx ends.
func followReportsAndRuns(ctx context.Context, loop *controller.Loop, srv *server.Server) {
	go func() {
		// The nodes' last reports, and on etcd those other replicas take.
		if err := loop.Reports.Run(ctx); err != nil && ctx.Err() == nil {
			loop.Log.Warn("not following the nodes' reports; the health shown may lag", "error", redact.Text(err.Error()))
		}
	}()
	if srv.Runs != nil {
		if err := srv.ResumeRuns(ctx); err != nil {
			loop.Log.Error("resuming the deployment runs", "error", redact.Text(err.Error()))
		}
	}
}

// replicate makes srv a replica when the state is on etcd (the elected
// leader reconciles, the others follow), or the shard of serve --shard, and
// returns what runs its loop.
func replicate(c *cli.Context, loop *controller.Loop, srv *server.Server, shard *controller.Replica) func(context.Context) error {
	if shard != nil {
		srv.Replica = shard
		return shard.Run
	}
	if e, ok := loop.Workdir.Backend.(state.Coordinator); ok {
		srv.Replica = &controller.Replica{Loop: loop, Etcd: e, ID: c.String("replica-id")}
		return srv.Replica.Run
	}
	return loop.Run
}
