package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/reconcile"
)

func watchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "branch", Usage: "follow branch `B` (default: HEAD)"},
		&cli.DurationFlag{Name: "interval", Value: time.Minute, Usage: "reconcile every `DURATION` besides triggers"},
		&cli.BoolFlag{Name: "dry-run", Usage: "plan only, never apply"},
		&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log `FORMAT`: text or json"},
	}
}

// newLoop builds the reconcile loop of watch and serve.
func newLoop(g *globals, c *cli.Context) (*reconcile.Loop, error) {
	if strings.Contains(g.repo, "://") || strings.Contains(g.repo, "@") {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("%s: remote repositories are not supported yet; give the path of a local clone", g.repo)}
	}
	if _, err := os.Stat(g.repo); err != nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
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
	return &reconcile.Loop{
		Workdir:     reconcile.Open(g.workdir),
		Source:      &reconcile.LocalSource{Path: g.repo, Branch: c.String("branch")},
		DryRun:      c.Bool("dry-run"),
		Interval:    c.Duration("interval"),
		ToolVersion: version,
		Log:         slog.New(h),
	}, nil
}

func watchCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "watch",
		Usage:        "follow a branch: reconcile every new commit (validate, plan, apply)",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Follows a branch of the local repository --repo: reconciles at start, then every\n" +
			"--interval. A commit that does not validate is not applied; its errors are logged with\n" +
			"file and line. SIGINT and SIGTERM stop it between reconciles, never in one.",
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
			return loop.Run(ctx)
		},
	}
}

func serveCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "serve",
		Usage:        "watch, plus webhooks, health, status, metrics and a status page over HTTP",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "watch plus HTTP on --listen: POST /hooks/github|gitlab|gitea|generic (signed with the\n" +
			"secret of --webhook-secret-file; 202 then a reconcile), GET /healthz, /readyz, /metrics,\n" +
			"/api/v1/status and the status page /.",
		Flags: append(watchFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "listen on `ADDR`"},
			&cli.StringFlag{Name: "webhook-secret-file", Usage: "the webhooks' shared secret, in `FILE`"},
		),
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			loop, err := newLoop(g, c)
			if err != nil {
				return err
			}
			var secret []byte
			if f := c.String("webhook-secret-file"); f != "" {
				if secret, err = os.ReadFile(f); err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				secret = []byte(strings.TrimSpace(string(secret)))
			} else {
				loop.Log.Warn("no --webhook-secret-file: every webhook delivery is refused (401)")
			}
			ln, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			srv := reconcile.NewServer(loop, secret)
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			loop.Log.Info("serving", "listen", ln.Addr().String(), "repo", g.repo, "workdir", g.workdir)
			done := make(chan struct{})
			go func() { loop.Run(ctx); close(done) }()
			select {
			case <-ctx.Done():
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
			return nil
		},
	}
}
