package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reconcile"
	"github.com/fuelsync/fuelsync/render"
)

// loadRender loads src and renders it (only clusters when given) with the applied
// state st, printing the diagnostics to stderr. An error in the configuration is an
// *exitError with code.
func loadRender(g *globals, src *source, clusters []string, st render.AppliedState, code int) ([]*render.Rendered, error) {
	repo, diags := loader.Load(src.fsys, loadOptions(src.cache))
	for _, name := range clusters {
		if repo.Cluster(name) == nil && !diags.HasErrors() {
			return nil, &exitError{code: code, msg: fmt.Sprintf("no cluster %q; clusters: %s", name, clusterNames(repo))}
		}
	}
	return renderChecked(g, src, repo, diags, clusters, st, code)
}

// renderChecked renders a loaded repository with the applied state st (only
// clusters when not nil; none when empty but not nil), printing the diagnostics of
// the load and the render.
func renderChecked(g *globals, src *source, repo *loader.Repo, diags hcl.Diagnostics, clusters []string, st render.AppliedState, code int) ([]*render.Rendered, error) {
	var rendered []*render.Rendered
	if clusters == nil || len(clusters) > 0 {
		renders.Add(1)
		var more hcl.Diagnostics
		rendered, more = render.Render(repo, render.Options{Clusters: clusters, State: st})
		diags = append(diags, more...)
		renderedClusters.Add(int64(len(rendered)))
	}
	diags = loader.SortDiagnostics(diags)
	g.writeDiagnostics(g.stderr, diags, repo.Sources.Files(), src.prefix)
	if diags.HasErrors() {
		nerr, _ := loader.Counts(diags)
		return nil, &exitError{code: code, msg: fmt.Sprintf("%s: %s", src.label, plural(nerr, "error"))}
	}
	return rendered, nil
}

// renders counts the renders of configurations (tests check that a plan with
// nothing changed renders nothing); renderedClusters the clusters they
// rendered, appliedClusters those of applied revisions rendered again.
var renders, renderedClusters, appliedClusters atomic.Int64

// loadRenderKeeping loads src and renders it with the applied state st, as
// loadRender does, except the clusters whose inputs are those the state
// applied (reconcile.Reuse): those are kept, not rendered. files is the input
// fingerprint of src taken before the load ("" when unknown: nothing is
// kept); cfiles are the clusters' fingerprints, for the plan to record.
func loadRenderKeeping(g *globals, src *source, w *reconcile.Workdir, st *reconcile.State, files string, code int) (rs []*render.Rendered, kept []string, cfiles map[string]string, err error) {
	repo, diags := loader.Load(src.fsys, loadOptions(src.cache))
	if files != "" && !diags.HasErrors() {
		kept, cfiles = reconcile.Reuse(w, st, src.fsys, repo, loadOptions(nil), version, inputSkip(g, src)...)
		if stillInputs(g, src, files) == "" {
			kept, cfiles = nil, nil
		}
	}
	rs, err = renderChecked(g, src, repo, diags, reconcile.RenderList(repo, kept), st, code)
	return rs, kept, cfiles, err
}

var shaRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// appliedRender renders the applied revision again (only the clusters asked
// for), when it is a commit of the repository, so that the change set can say
// which tag or plugin took tasks away; nil when it is not a commit, and the
// render nil when the commit cannot be read (a working tree was applied, or the
// commit is gone).
func appliedRender(g *globals, st *reconcile.State) func(clusters []string) []*render.Rendered {
	if !shaRE().MatchString(st.Revision) {
		return nil
	}
	return func(clusters []string) []*render.Rendered {
		fsys, _, err := loader.OpenRevision(g.repo, st.Revision)
		if err != nil {
			return nil
		}
		repo, diags := loader.Load(fsys, loadOptions(nil))
		if diags.HasErrors() {
			return nil
		}
		rs, diags := render.Render(repo, render.Options{Clusters: clusters, State: st})
		if diags.HasErrors() {
			return nil
		}
		appliedClusters.Add(int64(len(rs)))
		return rs
	}
}

func changeColors(g *globals, w io.Writer) diff.Colors {
	if g.useColor(w) {
		return diff.ANSI
	}
	return diff.Colors{}
}

// planJSON is the JSON form of a plan (plan --format json).
type planJSON struct {
	FormatVersion  string          `json:"format_version"`
	ChangesPresent bool            `json:"changes_present"`
	Lineage        string          `json:"lineage"`
	Serial         int64           `json:"serial"`
	Revision       string          `json:"revision"`
	Summary        diff.Summary    `json:"summary"`
	Changes        *diff.ChangeSet `json:"changes"`
}

func writePlan(g *globals, p *reconcile.Plan) error {
	switch g.format {
	case "json":
		return writeJSON(g.stdout, planJSON{"1", p.ChangesPresent, p.Lineage, p.Serial, p.Revision, p.Changes.Summary, p.Changes})
	case "text":
		if !g.quiet || p.ChangesPresent {
			fmt.Fprint(g.stdout, p.Changes.Text(changeColors(g, g.stdout)))
		}
		return nil
	}
	return &exitError{code: 1, msg: fmt.Sprintf("plan prints text or json, not %q", g.format)}
}

func planCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "plan",
		Usage:        "show what applying the configuration would change, node by node",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Renders the configuration and compares it with the applied state of the work directory\n" +
			"(--workdir): per node + provision + deploy (new), ~ deploy (tasks changed) or - delete (its\n" +
			"deletion graph), with the cause of each change. Exit status: 0 on success, 1 on error; with\n" +
			"--detailed-exitcode, 0 when nothing changes, 2 when something does, 1 on error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "save the plan to `PLANFILE` for apply"},
			&cli.BoolFlag{Name: "detailed-exitcode", Usage: "exit 2 when there are changes, 0 when there are none"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "plan only cluster `C` (repeatable; such a plan cannot be saved)"},
			reinitFlag(),
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("plan takes no arguments (got %q)", c.Args().First())}
			}
			clusters := c.StringSlice("cluster")
			if len(clusters) > 0 && c.String("out") != "" {
				return &exitError{code: 1, msg: "a plan limited with --cluster cannot be saved: apply works on every cluster"}
			}
			useWorkdirSetting(c, g)
			src, err := openSource(g)
			if err != nil {
				return err
			}
			w, err := openWorkdir(c, g)
			if err != nil {
				return err
			}
			defer w.Close()
			w.Reinit = c.Bool("reinit")
			st, err := w.ReadState()
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			files := inputFiles(g, src)
			if len(clusters) == 0 && c.String("out") == "" && st.Unchanged(files, version) && hasSet(w, st) {
				// The applied set is the render of these very inputs: no changes,
				// without loading or rendering.
				return writePlan(g, reconcile.UnchangedPlan(st, src.revision, version, files))
			}
			var rs []*render.Rendered
			var kept []string
			var cfiles map[string]string
			if len(clusters) > 0 {
				rs, err = loadRender(g, src, clusters, st, 1)
			} else {
				rs, kept, cfiles, err = loadRenderKeeping(g, src, w, st, files, 1)
			}
			if err != nil {
				return err
			}
			files = stillInputs(g, src, files)
			if len(clusters) > 0 {
				st = st.Only(clusters)
			}
			p, err := reconcile.PlanWith(w, st, reconcile.PlanInput{Rendered: rs, Kept: kept, Applied: appliedRender(g, st), Revision: src.revision, ToolVersion: version})
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			if len(clusters) == 0 {
				p.InputFiles, p.ClusterFiles = files, cfiles
			}
			if out := c.String("out"); out != "" {
				if err := p.Save(out); err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				if g.format == "text" && !g.quiet {
					defer fmt.Fprintf(stdout, "\nSaved the plan to %s; apply it with: %s\n", out, commandLine(g, "apply", out))
				}
			}
			if err := writePlan(g, p); err != nil {
				return err
			}
			if c.Bool("detailed-exitcode") && p.ChangesPresent {
				return exitCode(2)
			}
			return nil
		},
	}
}

func applyCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "apply",
		Usage:        "publish the rendered artifacts and record the applied state",
		ArgsUsage:    "[PLANFILE]",
		OnUsageError: usageError,
		Description: "With PLANFILE, applies exactly the plan saved by plan --out, and refuses it when the state\n" +
			"has moved since (another apply) or the configuration no longer renders to the planned\n" +
			"artifacts. Without, it plans, shows the plan and asks for confirmation on a terminal\n" +
			"(--auto-approve skips the question: for scripts; it is required when stdin is not a\n" +
			"terminal or the output is JSON). The artifacts are written to\n" +
			"<workdir>/artifacts/<serial>/ and <workdir>/artifacts/current switches to them together\n" +
			"with the state, atomically; the last 5 sets are kept. A second apply waits for the lock\n" +
			"up to --lock-timeout, or fails naming the holder.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "lock-timeout", Usage: "wait up to `DURATION` for the work directory's lock (default: fail at once)"},
			&cli.BoolFlag{Name: "auto-approve", Usage: "apply without asking for confirmation (for scripts; a saved plan is never asked about)"},
			reinitFlag(),
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 1 {
				return &exitError{code: 1, msg: "apply takes at most one argument, a plan file"}
			}
			crashHookFromEnv(stderr)
			useWorkdirSetting(c, g)
			ask := c.NArg() == 0 && !c.Bool("auto-approve")
			if ask && (g.format != "text" || !stdinIsTerminal()) {
				why := "stdin is not a terminal"
				if g.format != "text" {
					why = "the output is " + g.format
				}
				return &exitError{code: 1, msg: "apply without a plan file asks for confirmation, and " + why +
					": pass --auto-approve, or save a plan with plan --out and apply it; nothing was changed"}
			}
			w, err := openWorkdir(c, g)
			if err != nil {
				return err
			}
			defer w.Close()
			w.Reinit = c.Bool("reinit")
			lock, err := w.Lock(c.Context, "apply", c.Duration("lock-timeout"))
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			defer lock.Unlock()
			if err := w.Tidy(lock); err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			st, err := w.ReadState()
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			var p *reconcile.Plan
			var rs []*render.Rendered
			if planFile := c.Args().First(); planFile != "" {
				if p, err = reconcile.ReadPlan(planFile); err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				if err := p.CheckFresh(st, planFile); err != nil {
					return &exitError{code: 1, msg: err.Error() + "; nothing was changed"}
				}
				src, err := planSource(g, p)
				if err != nil {
					return err
				}
				if rs, _, _, err = loadRenderKeeping(g, src, w, st, inputFiles(g, src), 1); err != nil {
					return err
				}
			} else {
				src, err := openSource(g)
				if err != nil {
					return err
				}
				files := inputFiles(g, src)
				if st.Unchanged(files, version) && hasSet(w, st) {
					// The applied set is the render of these very inputs.
					p = reconcile.UnchangedPlan(st, src.revision, version, files)
				} else {
					var kept []string
					var cfiles map[string]string
					if rs, kept, cfiles, err = loadRenderKeeping(g, src, w, st, files, 1); err != nil {
						return err
					}
					if p, err = reconcile.PlanWith(w, st, reconcile.PlanInput{Rendered: rs, Kept: kept, Applied: appliedRender(g, st), Revision: src.revision, ToolVersion: version}); err != nil {
						return &exitError{code: 1, msg: err.Error()}
					}
					if p.InputFiles = stillInputs(g, src, files); p.InputFiles != "" {
						p.ClusterFiles = cfiles
					}
				}
				if !g.quiet || ask && p.ChangesPresent {
					if err := writePlan(g, p); err != nil {
						return err
					}
				}
			}
			if !p.ChangesPresent && st.Serial > 0 {
				if g.format == "text" && !g.quiet {
					fmt.Fprintln(stdout, "Nothing to apply.")
				}
				return nil
			}
			target := g.workdir
			if g.state != "" {
				target += " and " + w.StateName()
			}
			if ask && !confirm(stdout, "\nApply these changes to "+target+"? Only 'yes' is accepted: ") {
				return &exitError{code: 1, msg: "apply cancelled; nothing was changed"}
			}
			next, err := reconcile.Apply(w, lock, st, p, rs)
			var stale *reconcile.StaleError
			var applied *reconcile.AppliedError
			var damaged *reconcile.DamagedError
			switch {
			case errors.As(err, &stale):
				return &exitError{code: 1, msg: err.Error() + "; nothing was changed"}
			case errors.As(err, &applied):
				return &exitError{code: 1, msg: err.Error() + "; the next apply finishes it"}
			case errors.As(err, &damaged):
				return &exitError{code: 1, msg: err.Error()}
			}
			if err != nil {
				return &exitError{code: 1, msg: err.Error() + "; the applied state is unchanged"}
			}
			if g.format == "text" && !g.quiet {
				fmt.Fprintf(stdout, "Apply complete: serial %d, revision %.12s; artifacts in %s.\n", next.Serial, next.Revision, w.CurrentDir())
			}
			return nil
		},
	}
}

// stdin and stdinIsTerminal are where apply reads its confirmation.
var (
	stdin           io.Reader = os.Stdin
	stdinIsTerminal           = func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
)

// confirm asks question on w and reads one line of stdin: true for "yes".
func confirm(w io.Writer, question string) bool {
	fmt.Fprint(w, question)
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	return strings.TrimSpace(answer) == "yes"
}

// crashHookFromEnv makes apply kill itself with SIGKILL just before the Nth
// step that changes the work directory (every mkdir, file creation, fsync,
// rename, symlink and removal of tidying and publishing) when
// FUELSYNC_TEST_CRASH_AT=N, or fail that step with ENOSPC when
// FUELSYNC_TEST_FAIL_AT=N: the crash-safety tests do so at each step in turn.
func crashHookFromEnv(stderr io.Writer) {
	crash, _ := strconv.ParseInt(os.Getenv("FUELSYNC_TEST_CRASH_AT"), 10, 64)
	fail, _ := strconv.ParseInt(os.Getenv("FUELSYNC_TEST_FAIL_AT"), 10, 64)
	if crash <= 0 && fail <= 0 {
		return
	}
	var count atomic.Int64
	reconcile.TestHookStep = func(step string) error {
		switch count.Add(1) {
		case crash:
			fmt.Fprintf(stderr, "fuelsync: FUELSYNC_TEST_CRASH_AT=%d: killed before %s\n", crash, step)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case fail:
			fmt.Fprintf(stderr, "fuelsync: FUELSYNC_TEST_FAIL_AT=%d: failing %s\n", fail, step)
			return fmt.Errorf("%s: %w", step, syscall.ENOSPC)
		}
		return nil
	}
}

// reinitFlag is --reinit of plan and apply.
func reinitFlag() cli.Flag {
	return &cli.BoolFlag{Name: "reinit", Usage: "start over with a new lineage when the work directory's state is damaged (its current link lost, or a state that disagrees with its set); the recorded nodes and primary tags are forgotten, the old sets kept"}
}

// inputFiles is the input fingerprint of src (loader.InputFingerprint), ""
// when it cannot be computed. A work directory inside the working tree (the
// default .fuelsync, run from the repository) is not an input: it is left out,
// or every apply would change the inputs of the next plan.
func inputFiles(g *globals, src *source) string {
	files, err := loader.InputFingerprint(src.fsys, loadOptions(nil), inputSkip(g, src)...)
	if err != nil {
		return ""
	}
	return files
}

// inputSkip is the work directory when it lies inside the working tree src.
func inputSkip(g *globals, src *source) []string {
	var skip []string
	if src.revision == reconcile.WorkingTree {
		repo, err1 := filepath.Abs(g.repo)
		wd, err2 := filepath.Abs(g.workdir)
		if rel, err := filepath.Rel(repo, wd); err1 == nil && err2 == nil && err == nil && rel != "." && filepath.IsLocal(rel) {
			skip = append(skip, filepath.ToSlash(rel))
		}
	}
	return skip
}

// stillInputs returns files, the fingerprint of src taken before it was
// loaded, when it still is: a working tree edited while it was loaded gets ""
// (a commit cannot change).
func stillInputs(g *globals, src *source, files string) string {
	if files != "" && src.revision == reconcile.WorkingTree && inputFiles(g, src) != files {
		return ""
	}
	return files
}

// hasSet says whether the applied set of st is in the work directory.
func hasSet(w *reconcile.Workdir, st *reconcile.State) bool {
	_, err := os.Stat(w.SetDir(st.Serial))
	return err == nil
}

// planSource opens what a saved plan rendered: its commit, or the working tree.
func planSource(g *globals, p *reconcile.Plan) (*source, error) {
	pg := *g
	pg.rev = ""
	if p.Revision != "working-tree" {
		pg.rev = p.Revision
	}
	return openSource(&pg)
}
