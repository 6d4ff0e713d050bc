package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/fuelsync/fuelsync/reconcile"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// exitError carries an exit code out of a command action. The message, if any, has
// not been printed yet.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitCode returns an error that makes run return code without printing anything.
func exitCode(code int) error { return &exitError{code: code} }

// globals are the flags every command shares (SPEC §7).
type globals struct {
	repo    string
	rev     string
	workdir string
	// state is --state (or the state setting): etcd://..., or empty for the
	// work directory.
	state  string
	format string
	color  string
	quiet  bool
	stdout io.Writer
	stderr io.Writer
}

func (g *globals) useColor(w io.Writer) bool {
	switch g.color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func readGlobals(c *cli.Context, stdout, stderr io.Writer) (*globals, error) {
	g := &globals{
		repo: c.String("repo"), rev: c.String("rev"), workdir: c.String("workdir"), state: c.String("state"),
		format: commandFormat(c), color: c.String("color"), quiet: c.Bool("quiet"),
		stdout: stdout, stderr: stderr,
	}
	switch g.color {
	case "auto", "always", "never":
	default:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--color must be auto, always or never, not %q", g.color)}
	}
	return g, nil
}

// formatFlag is --format given after the command name (fuelsync validate --format
// json); it overrides the global flag.
func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Usage: "output `FORMAT` (overrides the global --format)"}
}

// commandFormat is the command's --format when given, else the global one.
func commandFormat(c *cli.Context) string {
	if c.IsSet("format") {
		return c.String("format")
	}
	for _, ctx := range c.Lineage()[1:] {
		if f := ctx.String("format"); f != "" {
			return f
		}
	}
	return "text"
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "fuelsync",
		Usage: "GitOps reconciler for OpenStack Fuel deployment configuration",
		Description: "fuelsync loads a revision of a config repository (releases and plugins in Fuel's formats,\n" +
			"cluster specs in YAML or HCL), validates it, and renders one task graph per node.",
		Version:         version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideVersion:     true,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    usageError,
		// Runs when no command matched: help, or a one-line error on stderr.
		Action: func(c *cli.Context) error {
			switch args := c.Args(); {
			case !args.Present(), args.First() == "help" && args.Len() == 1:
				return cli.ShowAppHelp(c)
			case args.First() == "help":
				return cli.ShowCommandHelp(c, args.Get(1))
			default:
				return &exitError{code: 1, msg: fmt.Sprintf("unknown command %q; run 'fuelsync --help' for the list of commands", args.First())}
			}
		},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "repo", Value: ".", Usage: "repository `PATH` (a working tree or a bare repository)"},
			&cli.StringFlag{Name: "rev", Usage: "read revision `REV` (branch, tag, HEAD~2, sha) from git objects instead of the working tree"},
			&cli.StringFlag{Name: "workdir", Value: ".fuelsync", Usage: "`DIR` for state, applied artifacts, lock and cache"},
			&cli.StringFlag{Name: "state", Usage: "keep the state and the lock in etcd at `URL` (etcd://host1:2379,host2:2379/prefix) instead of the work directory"},
			&cli.StringFlag{Name: "etcd-cacert", Usage: "verify etcd's TLS certificate with the CA bundle `FILE`"},
			&cli.StringFlag{Name: "etcd-cert", Usage: "TLS client certificate `FILE` for etcd"},
			&cli.StringFlag{Name: "etcd-key", Usage: "TLS client key `FILE` for etcd"},
			&cli.StringFlag{Name: "etcd-auth-file", Usage: "authenticate to etcd with USER:PASSWORD read from `FILE`"},
			&cli.DurationFlag{Name: "etcd-lock-ttl", Value: reconcile.DefaultLockTTL, Usage: "lease TTL of the lock in etcd: how long a dead holder's lock outlives it"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json, markdown or github, where the command supports it"},
			&cli.StringFlag{Name: "color", Value: "auto", Usage: "colour output: auto, always or never"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only problems"},
		},
		Commands: []*cli.Command{
			validateCommand(stdout, stderr),
			componentsCommand(stdout, stderr),
			renderCommand(stdout, stderr),
			explainCommand(stdout, stderr),
			planCommand(stdout, stderr),
			applyCommand(stdout, stderr),
			diffCommand(stdout, stderr),
			pluginCommand(stdout, stderr),
			tagsCommand(stdout, stderr),
			rolesCommand(stdout, stderr),
			watchCommand(stdout, stderr),
			serveCommand(stdout, stderr),
			triggerCommand(stdout, stderr),
			capabilitiesCommand(stdout, stderr),
			stateCommand(stdout, stderr),
			completionCommand(stdout, stderr),
			completeCommand(stdout),
			versionCommand(stdout, stderr),
		},
	}
	return app
}

// usageError reports a bad flag or flag value on one line of stderr, without the help
// text urfave/cli would print on stdout.
func usageError(c *cli.Context, err error, _ bool) error {
	return &exitError{code: 1, msg: fmt.Sprintf("%v; run '%s --help' for usage", err, c.Command.HelpName)}
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(flagsFirst(app, args))
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "fuelsync: %s\n", ee.msg)
		}
		return ee.code
	}
	msg := err.Error()
	fmt.Fprintf(stderr, "fuelsync: %s\n", strings.TrimSpace(msg))
	return 1
}

// flagsFirst puts a command's flags before its arguments: urfave/cli v2 stops
// reading flags at the first argument, and users write `plugin create NAME
// --release` and `tags assign TAG --commit` (as fuel-plugin-builder and the
// design do). The command is found after the global flags, through its
// subcommands; a flag takes the next word as its value when the command's own
// definition says so (or it is written --flag=value). "--" ends the flags.
func flagsFirst(app *cli.App, args []string) []string {
	i, flags, cmds := 1, app.Flags, app.Commands
	var cmd *cli.Command
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if flagTakesValue(flags, a) && !strings.Contains(a, "=") {
				i++
			}
			i++
			continue
		}
		next := findCommand(cmds, a)
		if next == nil {
			break
		}
		cmd, flags, cmds = next, next.Flags, next.Subcommands
		i++
	}
	if cmd == nil || cmd.SkipFlagParsing || i >= len(args) {
		return args
	}
	rest := args[i:]
	var moved, positional []string
	dashes := false
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			dashes = true
			positional = append(positional, rest[j+1:]...)
			j = len(rest)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			moved = append(moved, a)
			if flagTakesValue(cmd.Flags, a) && !strings.Contains(a, "=") && j+1 < len(rest) {
				j++
				moved = append(moved, rest[j])
			}
		default:
			positional = append(positional, a)
		}
	}
	out := append(slices.Clone(args[:i]), moved...)
	if dashes {
		out = append(out, "--")
	}
	return append(out, positional...)
}

// flagTakesValue reports whether the flag written w (-x, --name, --name=v) is
// one of flags that takes a value.
func flagTakesValue(flags []cli.Flag, w string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			if v, ok := f.(cli.DocGenerationFlag); ok {
				return v.TakesValue()
			}
			return true
		}
	}
	return false
}
