package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// opEnv is what every command that opens the work directory starts from (the
// operation's plan, apply and approve; status; state show, pull and push): the
// global flags, the work directory the settings name, and its state backend.
// The command's own arguments are checked apart (opArgs), its output is its
// view's (views_plan.go, statusView, stateView). watch and serve read the
// repository's settings strictly instead (loopSettings).
type opEnv struct {
	c              *cli.Context
	g              *globals
	w              *state.Workdir
	stdout, stderr io.Writer
}

// opArgs are the arguments of plan, apply and approve, checked.
type opArgs struct {
	// targets are --cluster.
	targets []string
	// plan: --out and --detailed-exitcode.
	out      string
	detailed bool
	// apply: a saved plan, whether to ask, the lock's timeout.
	planFile    string
	ask         bool
	lockTimeout time.Duration
}

// openOpEnv reads the global flags and the work directory setting of the
// repository, then opens the work directory (with its backend).
func openOpEnv(c *cli.Context, stdout, stderr io.Writer) (*opEnv, error) {
	g, err := readGlobals(c, stdout, stderr)
	if err != nil {
		return nil, err
	}
	useWorkdirSetting(c, g)
	return &opEnv{c: c, g: g, stdout: stdout, stderr: stderr}, nil
}

// workdir opens the work directory, once.
func (e *opEnv) workdir() (*state.Workdir, error) {
	if e.w != nil {
		return e.w, nil
	}
	w, err := openWorkdir(e.c, e.g)
	if err != nil {
		return nil, err
	}
	w.Reinit = e.c.Bool("reinit")
	e.w = w
	return w, nil
}

func (e *opEnv) close() {
	if e.w != nil {
		e.w.Close()
	}
}

// operation is the reconcile operation on the work directory for src.
func (e *opEnv) operation(src *source) *operation.Operation {
	op := &operation.Operation{
		Workdir:     e.w,
		ToolVersion: version,
		Load:        loadOptions(src.cache),
		OpenRevision: func(rev string) (fs.FS, error) {
			top, dir, err := e.g.gitRepo("")
			if err != nil {
				return nil, err
			}
			fsys, _, _, err := loader.OpenRevisionDir(top, rev, dir)
			return fsys, err
		},
	}
	// depends_on with healthy: true: the reports kept beside the state, read
	// once for every cluster asked of.
	loadReports := sync.OnceValues(func() (*reports.Store, error) {
		store := reports.NewWorkdirStore(e.w)
		return store, store.Load(e.c.Context)
	})
	op.Health = func(cluster string, st *state.State) reports.Health {
		store, err := loadReports()
		if err != nil {
			fmt.Fprintf(e.stderr, "fuelsync: %s; cluster %s's health is unknown\n", redact.Text(err.Error()), cluster)
			return reports.ClusterHealth(nil, cluster, nil)
		}
		return store.Health(st, cluster)
	}
	renderFailpoints(op)
	return op
}

// request is the operation's request for src.
func (e *opEnv) request(src *source, args opArgs) operation.Request {
	return operation.Request{
		Revision:    gitsource.Revision{SHA: src.revision, FS: src.fsys},
		Skip:        inputSkip(e.g, src),
		Targets:     args.targets,
		Lock:        "apply",
		LockTimeout: args.lockTimeout,
	}
}

// plan is the plan command: the operation without applying.
func (e *opEnv) plan(args opArgs) error {
	src, err := openSource(e.g)
	if err != nil {
		return err
	}
	src.pin(e.g)
	if _, err := e.workdir(); err != nil {
		return err
	}
	v := newPlanView(e.g)
	res, err := e.operation(src).Plan(e.c.Context, e.request(src, args))
	if err != nil {
		return e.opError(res, src, err)
	}
	v.diagnostics(res, src)
	if args.out != "" {
		if err := operation.SavePlan(res.Plan, args.out); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
	}
	if err := v.plan(res); err != nil {
		return err
	}
	if args.out != "" && e.g.format == formatText && !e.g.quiet {
		fmt.Fprintf(e.stdout, "\nSaved the plan to %s; apply it with: %s\n", args.out, commandLine(e.g, "apply", args.out))
	}
	if err := heldError(res, "planned"); err != nil {
		return err
	}
	if args.detailed && res.Plan.ChangesPresent {
		return exitCode(2)
	}
	return nil
}

// apply is the apply command: the operation, applying (a saved plan, or the
// plan it makes, once confirmed).
func (e *opEnv) apply(args opArgs) error {
	w, err := e.workdir()
	if err != nil {
		return err
	}
	var saved *operation.Plan
	var src *source
	if args.planFile != "" {
		if saved, err = operation.ReadPlan(args.planFile); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		src, err = planSource(e.g, saved)
	} else if src, err = openSource(e.g); err == nil {
		src.pin(e.g)
	}
	if err != nil {
		return err
	}
	v := newPlanView(e.g)
	op := e.operation(src)
	req := e.request(src, args)
	run := op.Apply
	shown := false
	if saved != nil {
		run = func(ctx context.Context, req operation.Request) (*operation.Result, error) {
			return op.ApplySaved(ctx, req, saved, args.planFile)
		}
		op.OpenRevision = nil // its causes were shown when it was made
	} else {
		req.Ask = args.ask // asked before the lock is taken
		req.Confirm = func(res *operation.Result) bool {
			shown = true
			v.diagnostics(res, src)
			if !e.g.quiet || args.ask {
				if err := v.plan(res); err != nil {
					return false
				}
			}
			if !args.ask {
				return true
			}
			target := e.g.workdir
			if e.g.state != "" {
				target += " and " + w.StateName()
			}
			return confirm(e.stdout, "\nApply these changes to "+target+"? Only 'yes' is accepted: ")
		}
	}
	res, err := run(e.c.Context, req)
	if res != nil {
		for _, w := range res.Warnings {
			warnf(e.stderr, e.g, "%s", w)
		}
	}
	if err != nil {
		if errors.Is(err, operation.ErrCancelled) {
			return &exitError{code: 1, msg: "apply cancelled; nothing was changed"}
		}
		return e.opError(res, src, err)
	}
	if !shown {
		if saved == nil {
			v.diagnostics(res, src)
			if !e.g.quiet {
				if err := v.plan(res); err != nil {
					return err
				}
			}
		} else {
			v.diagnostics(res, src)
		}
	}
	if err := v.applied(res, w); err != nil {
		return err
	}
	return heldError(res, "applied")
}

// opError is the exit error of a failed operation, said as the apply's
// outcome requires: nothing changed, or applied but unfinished.
func (e *opEnv) opError(res *operation.Result, src *source, err error) error {
	var stale *operation.StaleError
	var applied *state.AppliedError
	var damaged *state.DamagedError
	var unknown *operation.UnknownClusterError
	var changed *operation.PlanChangedError
	switch {
	case errors.As(err, &unknown):
		msg := err.Error()
		if s := suggest(unknown.Name, unknown.Known); s != "" {
			msg = fmt.Sprintf("no cluster %q (did you mean %q?); clusters: %s", unknown.Name, s, strings.Join(unknown.Known, ", "))
		}
		return &exitError{code: 1, msg: msg}
	case errors.As(err, &stale), errors.As(err, &changed):
		return &exitError{code: 1, msg: err.Error() + "; nothing was changed"}
	case errors.As(err, &applied):
		return &exitError{code: 1, msg: err.Error() + "; the next apply finishes it"}
	case errors.As(err, &damaged):
		return &exitError{code: 1, msg: err.Error()}
	}
	var staging *operation.StageError
	if res != nil && (res.Plan != nil || errors.As(err, &staging)) {
		return &exitError{code: 1, msg: err.Error() + "; the applied state is unchanged"}
	}
	return &exitError{code: 1, msg: err.Error()}
}

// heldError is exit status 1 naming the clusters res held ("planned" or
// "applied" are what happened to the others); nil when none was.
func heldError(res *operation.Result, others string) error {
	held := res.Held()
	if len(held) == 0 {
		return nil
	}
	rest := "; the other clusters were " + others
	if len(held) == len(res.Clusters) {
		rest = ""
	}
	return &exitError{code: 1, msg: fmt.Sprintf("held %s: %s (the errors above)%s", plural(len(held), "cluster"), strings.Join(held, ", "), rest)}
}
