package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/server"
	"github.com/fuelsync/fuelsync/state"
)

// What fuelsync wait waits for.
const (
	waitSynced   = "synced"
	waitHealthy  = "healthy"
	waitDeployed = "deployed"
)

// waitCommand is fuelsync wait: until a cluster is synced, healthy or
// deployed, for scripts and CI, as argocd app wait and kubectl wait.
func waitCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "wait",
		Usage:        "wait until a cluster is synced, healthy or deployed (for scripts and CI)",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Asks the running serve (--server) every second how the cluster is, until it is as asked\n" +
			"(exit 0), fails on the way (exit 1, saying why) or --timeout passes (exit 1, saying what it\n" +
			"still waited for), as argocd app wait and kubectl wait do:\n" +
			"  synced    its applied artifacts are the render of the head revision (fails: held, suspended)\n" +
			"  healthy   synced, and every node converged on its applied graph (fails: degraded)\n" +
			"  deployed  synced, and a deployment run of its applied artifacts succeeded (fails: the run failed)\n" +
			"--revision REV waits for serve to have reconciled that revision (a commit sha or a prefix of\n" +
			"one), and a failure counts only once it has. On a terminal it draws the progress\n" +
			"(the run's nodes and tasks); otherwise one line each time it changes. docs/clusters.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Value: "http://127.0.0.1:8080", Usage: "the running fuelsync serve at `URL`"},
			&cli.StringFlag{Name: "api-token-file", Usage: "the bearer token of serve's API, in `FILE`"},
			&cli.StringFlag{Name: "cluster", Usage: "the cluster `C` (required)"},
			&cli.StringFlag{Name: "for", Value: waitHealthy, Usage: "what to wait for: `synced, healthy or deployed`"},
			&cli.StringFlag{Name: "revision", Usage: "wait for revision `REV` to be applied"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up after `DURATION` (0: never)"},
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "ask every `DURATION`", Hidden: true},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			d, err := newDeployer(c, stdout, stderr)
			if err != nil {
				return err
			}
			switch c.String("for") {
			case waitSynced, waitHealthy, waitDeployed:
			default:
				return &exitError{code: 1, msg: fmt.Sprintf("--for must be synced, healthy or deployed, not %q", c.String("for"))}
			}
			w := &waiter{d: d, cluster: c.String("cluster"), cond: c.String("for"), revision: c.String("revision"),
				timeout: c.Duration("timeout"), interval: max(c.Duration("interval"), 10*time.Millisecond)}
			return w.wait()
		},
	}
}

// waiter is one fuelsync wait.
type waiter struct {
	d                       *deployer
	cluster, cond, revision string
	timeout, interval       time.Duration
	progress                *progress
	line                    *server.ClusterLine // as serve said last
	run                     *api.Run            // the run followed, with its nodes
	reason                  string              // what it waits for, or why it failed
}

// WaitResult is what fuelsync wait --format json prints.
type WaitResult struct {
	Cluster string `json:"cluster"`
	For     string `json:"for"`
	// Reached says the cluster is as asked; otherwise Reason says why not
	// (the failure, or what it still waited for at the timeout).
	Reached  bool                `json:"reached"`
	TimedOut bool                `json:"timed_out,omitempty"`
	Reason   string              `json:"reason,omitempty"`
	Status   *server.ClusterLine `json:"status,omitempty"`
}

func (w *waiter) wait() error {
	d := w.d
	w.progress = newProgress(d.format, d.stdout, d.stderr)
	ctx := d.c.Context
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	if w.cond == waitDeployed {
		// A serve that runs no deployments never will: say so at once.
		if _, err := d.client.Runs(ctx, w.cluster); api.Code(err) == 503 && strings.Contains(err.Error(), "runs no deployments") {
			return w.end(false, false, "serve runs no deployments: "+redact.Text(err.Error()))
		}
	}
	for {
		v := w.poll(ctx)
		switch {
		case v.done:
			return w.end(true, false, v.note)
		case v.failure != "":
			return w.end(false, false, v.failure)
		case ctx.Err() != nil && w.reason != "":
			// The wait's time ran out during this poll: what the last
			// answer said stands, not the request cut short.
		default:
			w.reason = v.waiting
			w.show()
		}
		select {
		case <-time.After(w.interval):
		case <-ctx.Done():
			if d.c.Context.Err() != nil {
				return w.end(false, false, "interrupted while waiting: "+w.reason)
			}
			return w.end(false, true, fmt.Sprintf("timed out after %s waiting for cluster %s to be %s: %s", w.timeout, safetext.Line(w.cluster), w.cond, w.reason))
		}
	}
}

// poll asks serve once and judges its answer.
func (w *waiter) poll(ctx context.Context) waitVerdict {
	var lines []server.ClusterLine
	if err := w.d.client.Clusters(ctx, &lines); err != nil {
		if api.Code(err) == 401 || api.Code(err) == 403 {
			return waitVerdict{failure: "serve refused: " + redact.Text(err.Error())}
		}
		return waitVerdict{waiting: "serve did not answer: " + redact.Text(err.Error())}
	}
	w.line = nil
	for i := range lines {
		if lines[i].Name == w.cluster {
			w.line = &lines[i]
		}
	}
	w.run = nil
	if l := w.line; l != nil && l.LastRun != nil && (l.LastRun.Status == api.RunRunning || l.LastRun.Status == api.RunStopping) {
		if run, err := w.d.client.Run(ctx, w.cluster, l.LastRun.ID); err == nil {
			w.run = run
		}
	}
	return judgeWait(w.cluster, w.line, w.cond, w.revision)
}

// show shows where the wait is: the reason, and the run's progress.
func (w *waiter) show() {
	plain := fmt.Sprintf("cluster %s: %s", safetext.Line(w.cluster), w.reason)
	lines := []string{fmt.Sprintf("waiting for cluster %s to be %s: %s", safetext.Line(w.cluster), w.cond, w.reason)}
	if w.run != nil {
		lines = append(lines, progressLines(w.run, time.Now())...)
	}
	w.progress.show(plain, lines)
}

// end prints the result: exit 0 when reached, 1 otherwise with why.
func (w *waiter) end(reached, timedOut bool, reason string) error {
	d := w.d
	if d.format == formatJSON {
		if err := writeJSON(d.stdout, WaitResult{Cluster: w.cluster, For: w.cond, Reached: reached, TimedOut: timedOut, Reason: reason, Status: w.line}); err != nil {
			return err
		}
		if !reached {
			return &exitError{code: 1}
		}
		return nil
	}
	if !reached {
		return &exitError{code: 1, msg: reason}
	}
	msg := fmt.Sprintf("cluster %s is %s", safetext.Line(w.cluster), w.cond)
	if reason != "" {
		msg += ": " + reason
	}
	fmt.Fprintln(d.stdout, msg)
	return nil
}

// waitVerdict is how a cluster is for a wait: done (with a note), failed
// (why), or still waited for (what).
type waitVerdict struct {
	done                   bool
	note, failure, waiting string
}

// judgeWait judges a cluster's status line (nil: serve does not have it)
// for a wait for cond, at revision (any when ""): the rules of fuelsync
// wait's help.
func judgeWait(cluster string, l *server.ClusterLine, cond, revision string) waitVerdict {
	if l == nil {
		return waitVerdict{waiting: fmt.Sprintf("serve has no cluster %s", safetext.Line(cluster))}
	}
	reconciled := revision == "" || l.HeadRevision != "" && strings.HasPrefix(l.HeadRevision, revision)
	switch l.Status {
	case state.StatusHeld, state.StatusSuspended:
		why := fmt.Sprintf("it is %s", l.Status)
		if len(l.Problems) > 0 {
			why += ": " + firstOf(l.Problems)
		} else if l.Status == state.StatusSuspended {
			why += " (suspend: true): serve applies nothing of it"
		}
		if reconciled {
			return waitVerdict{failure: why}
		}
		return waitVerdict{waiting: why + fmt.Sprintf(" (at revision %s; waiting for %s)", shortRev(l.HeadRevision), shortRev(revision))}
	case state.StatusSynced:
		// Synced: its applied artifacts are the render of the head revision
		// (whether that commit changed it or not).
		if !reconciled {
			return waitVerdict{waiting: fmt.Sprintf("serve has not reconciled revision %s yet (its head is %s)", shortRev(revision), shortRev(l.HeadRevision))}
		}
	case state.StatusAwaitingApproval:
		return waitVerdict{waiting: fmt.Sprintf("awaiting approval (sync: manual): fuelsync approve --cluster %s", safetext.Line(cluster))}
	default:
		return waitVerdict{waiting: fmt.Sprintf("%s (applied %s, head %s)", l.Status, shortRev(l.AppliedRevision), shortRev(l.HeadRevision))}
	}
	health := fmt.Sprintf("%s, %d of %d nodes converged", l.Health, l.NodesConverged, l.Nodes)
	switch cond {
	case waitSynced:
		return waitVerdict{done: true, note: "revision " + shortRev(l.HeadRevision)}
	case waitHealthy:
		switch l.Health {
		case reports.Healthy:
			return waitVerdict{done: true, note: fmt.Sprintf("revision %s, %d of %d nodes converged", shortRev(l.HeadRevision), l.NodesConverged, l.Nodes)}
		case reports.Degraded:
			return waitVerdict{failure: "it is degraded: " + firstOf(l.HealthProblems)}
		}
		return waitVerdict{waiting: health}
	}
	return judgeRun(l, health)
}

// judgeRun judges a synced cluster's newest run for a wait for deployed.
func judgeRun(l *server.ClusterLine, health string) waitVerdict {
	run := l.LastRun
	switch {
	case run == nil || run.Serial < l.Serial:
		return waitVerdict{waiting: fmt.Sprintf("no deployment run of serial %d yet (%s)", l.Serial, health)}
	case run.Status == api.RunFailed, run.Status == api.RunStopped:
		return waitVerdict{failure: runFailure(run)}
	case run.Status == api.RunSucceeded:
		note := fmt.Sprintf("run %s succeeded at serial %d", run.ID, run.Serial)
		if len(run.FailedNodes) > 0 {
			note += fmt.Sprintf(", its fault tolerance taking failed nodes %s", safetext.Line(strings.Join(run.FailedNodes, ", ")))
		}
		return waitVerdict{done: true, note: note}
	}
	return waitVerdict{waiting: fmt.Sprintf("run %s is %s", run.ID, run.Status)}
}

// runFailure says why a run failed.
func runFailure(run *api.Run) string {
	why := fmt.Sprintf("run %s %s", run.ID, run.Status)
	if run.Reason != "" {
		why += ": " + safetext.Line(run.Reason)
	}
	if len(run.FailedNodes) > 0 {
		why += fmt.Sprintf(" (failed nodes: %s)", safetext.Line(strings.Join(run.FailedNodes, ", ")))
	}
	return why
}

// firstOf is a list's first line, and how many more there are.
func firstOf(list []string) string {
	if len(list) == 0 {
		return "no reason given"
	}
	s := safetext.Line(list[0])
	if len(list) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(list)-1)
	}
	return s
}

// clusterProblem is why fuelsync status --exit-code fails for a cluster
// ("" when it does not): held, degraded, or its last run failed.
func clusterProblem(l *server.ClusterLine) string {
	name := safetext.Line(l.Name)
	switch {
	case l.Status == state.StatusHeld:
		return fmt.Sprintf("cluster %s is held: %s", name, firstOf(l.Problems))
	case l.Health == reports.Degraded:
		return fmt.Sprintf("cluster %s is degraded: %s", name, firstOf(l.HealthProblems))
	case l.LastRun != nil && l.LastRun.Status == api.RunFailed:
		return fmt.Sprintf("cluster %s: its last %s", name, runFailure(l.LastRun))
	}
	return ""
}
