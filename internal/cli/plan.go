package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/operation"
	gitsource "github.com/fuelsync/fuelsync/source"
)

func changeColors(g *globals, w io.Writer) diff.Colors {
	if g.useColor(w) {
		return diff.ANSI
	}
	return diff.Colors{}
}

func planCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "plan",
		Usage:        "show what applying the configuration would change, node by node",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Renders the configuration and compares it with the applied state of the work directory\n" +
			"(--workdir): per node + provision + deploy (new), ~ deploy (tasks changed) or - delete (its\n" +
			"deletion graph), with the cause of each change. Every cluster is planned on its own: a cluster\n" +
			"whose inputs have errors is held (its errors are printed, its applied artifacts stay), the\n" +
			"others are planned. Exit status: 0 on success, 1 on error or when a cluster is held; with\n" +
			"--detailed-exitcode, 0 when nothing changes, 2 when something does, 1 on error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "save the plan to `PLANFILE` for apply"},
			&cli.BoolFlag{Name: "detailed-exitcode", Usage: "exit 2 when there are changes, 0 when there are none"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "plan only cluster `C` (repeatable); the others keep their applied artifacts"},
			reinitFlag(),
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			args := opArgs{detailed: c.Bool("detailed-exitcode"), out: c.String("out"), targets: c.StringSlice("cluster")}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("plan takes no arguments (got %q)", c.Args().First())}
			}
			env, err := openOpEnv(c, stdout, stderr)
			if err != nil {
				return err
			}
			defer env.close()
			return env.plan(args)
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
			"up to --lock-timeout, or fails naming the holder. Every cluster is applied on its own: a\n" +
			"cluster whose inputs have errors is held with its applied artifacts, the others are\n" +
			"applied, and apply exits 1 naming the clusters it held.",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "lock-timeout", Usage: "wait up to `DURATION` for the work directory's lock", DefaultText: "fail at once"},
			&cli.BoolFlag{Name: "auto-approve", Usage: "apply without asking for confirmation (for scripts; a saved plan is never asked about)"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "apply only cluster `C` (repeatable); the others keep their applied artifacts"},
			reinitFlag(),
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			args := opArgs{planFile: c.Args().First(), targets: c.StringSlice("cluster"), lockTimeout: c.Duration("lock-timeout")}
			if c.NArg() > 1 {
				return &exitError{code: 1, msg: "apply takes at most one argument, a plan file"}
			}
			if args.planFile != "" && len(args.targets) > 0 {
				return &exitError{code: 1, msg: "a saved plan covers the clusters it was made for: --cluster goes with plan --out, not with apply PLANFILE"}
			}
			env, err := openOpEnv(c, stdout, stderr)
			if err != nil {
				return err
			}
			defer env.close()
			args.ask = args.planFile == "" && !c.Bool("auto-approve")
			if args.ask && (env.g.format != formatText || !stdinIsTerminal()) {
				why := "stdin is not a terminal"
				if env.g.format != formatText {
					why = "the output is " + string(env.g.format)
				}
				return &exitError{code: 1, msg: "apply without a plan file asks for confirmation, and " + why +
					": pass --auto-approve, or save a plan with plan --out and apply it; nothing was changed"}
			}
			return env.apply(args)
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

// reinitFlag is --reinit of plan and apply.
func reinitFlag() cli.Flag {
	return &cli.BoolFlag{Name: "reinit", Usage: "start over with a new lineage when the work directory's state is damaged (its current link lost, or a state that disagrees with its set); the recorded nodes and primary tags are forgotten, the old sets kept"}
}

// inputSkip is the work directory when it lies inside the working tree src.
func inputSkip(g *globals, src *source) []string {
	var skip []string
	if src.worktree {
		repo, err1 := filepath.Abs(g.repo)
		wd, err2 := filepath.Abs(g.workdir)
		if rel, err := filepath.Rel(repo, wd); err1 == nil && err2 == nil && err == nil && rel != "." && filepath.IsLocal(rel) {
			skip = append(skip, filepath.ToSlash(rel))
		}
	}
	return skip
}

// planSource opens what a saved plan rendered: its commit, or the working
// tree (pinned, as the plan was).
func planSource(g *globals, p *operation.Plan) (*source, error) {
	pg := *g
	pg.rev = ""
	if !gitsource.IsWorkingTree(p.Revision) {
		pg.rev = p.Revision
	}
	src, err := openSource(&pg)
	if err != nil {
		return nil, err
	}
	src.pin(&pg)
	return src, nil
}
