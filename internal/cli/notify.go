package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/notify"
	"github.com/fuelsync/fuelsync/server"
)

// notifyFlag is serve's --notify-config.
var notifyFlag = &cli.StringFlag{Name: "notify-config", Usage: "send events (a cluster held, synced, awaiting approval; a run started, succeeded, failed, stopped; a node failed) to the webhook, Slack and command providers of `FILE` (YAML, or HCL when it ends in .hcl; docs/notifications.md)"}

// loadNotifier reads --notify-config (nil when not given). An invalid one
// is refused, every problem printed at its line and column, before serve
// listens.
func loadNotifier(g *globals, c *cli.Context, loop *controller.Loop, stderr io.Writer) (*notify.Notifier, error) {
	file := c.String(notifyFlag.Name)
	if file == "" {
		return nil, nil
	}
	cfg, files, diags := notify.LoadConfig(file)
	if diags.HasErrors() {
		g.writeDiagnostics(stderr, diags, files, "")
		return nil, &exitError{code: 1, msg: fmt.Sprintf("the notification config %s is not valid: serve does not start", file)}
	}
	n := notify.New(cfg, loop.Log)
	n.UserAgent = "fuelsync/" + loop.ToolVersion
	for _, p := range cfg.Providers { // never their URLs or secrets
		loop.Log.Info("notifying", "provider", p.Name, "type", p.Type, "clusters", p.Clusters, "events", p.Events, "severity", p.Severity, "signed", len(p.Secret) > 0)
	}
	return n, nil
}

// startNotifier makes srv send its events to n (nil: none) until ctx ends.
func startNotifier(ctx context.Context, srv *server.Server, n *notify.Notifier) {
	if n == nil {
		return
	}
	srv.EnableNotifications(n)
	go n.Run(ctx)
}
