package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// The build's version and commit: the mains' (set at build time with -ldflags
// "-X main.version=... -X main.commit=..."), passed by Main; without them, the
// module version and the commit go install and go build record
// (runtime/debug.ReadBuildInfo: version.go).
var (
	version = "dev"
	commit  = "unknown"
)

// program is the binary's name in its version: fuelsync, or fuelsync-server
// (ServerMain).
var program = "fuelsync"

// Main runs the command line args (args[0] the program) and returns the exit
// status; version and commit are the build's ("" takes them from the build
// information, else keeps "dev" and "unknown"). Both binaries run it:
// fuelsync, and fuelsync-server (through ServerMain), which links the etcd
// backend and the Prometheus metrics besides (a command that needs them is
// handed from fuelsync to fuelsync-server: dispatch.go).
func Main(args []string, stdout, stderr io.Writer, buildVersion, buildCommit string) int {
	version, commit = buildIdentity(buildVersion, buildCommit, readBuildInfo())
	if err := takeDispatched(); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", program, safetext.Lines(err.msg))
		return err.code
	}
	return run(args, stdout, stderr)
}

// ServerMain is Main for fuelsync-server: the same CLI, which names itself
// fuelsync-server in its version.
func ServerMain(args []string, stdout, stderr io.Writer, buildVersion, buildCommit string) int {
	program = ServerBinary
	return Main(args, stdout, stderr, buildVersion, buildCommit)
}

// exitError carries an exit code out of a command action. The message, if any, has
// not been printed yet.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitCode returns an error that makes run return code without printing anything.
func exitCode(code int) error { return &exitError{code: code} }

// globals are the flags every command shares.
type globals struct {
	// repo is --repo; with --path, the folder it names (usePath), but for
	// a bare repository or a URL, whose folder is path.
	repo    string
	path    string
	rev     string
	workdir string
	// workdirErr says why the repository's workdir setting is refused
	// (useWorkdirSetting); openWorkdir returns it.
	workdirErr error
	// state is --state (or the state setting): etcd://..., or empty for the
	// work directory.
	state string
	// format is --format, checked before the command ran (checkFormat).
	format outputFormat
	color  string
	quiet  bool
	// command is the command's path after fuelsync ("validate", "tags list").
	command string
	stdout  io.Writer
	stderr  io.Writer
	// failure collects the diagnostics printed, for the JSON error document
	// of a failure (errors.go); nil outside run.
	failure *failure
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
	if s, ok := w.(*stdoutWatch); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func readGlobals(c *cli.Context, stdout, stderr io.Writer) (*globals, error) {
	g := &globals{
		repo: globalString(c, "repo"), path: globalString(c, "path"), rev: globalString(c, "rev"), workdir: globalString(c, "workdir"),
		state:  globalString(c, "state"),
		format: commandFormat(c), color: globalString(c, "color"), quiet: globalSet(c, "quiet") != nil,
		stdout: stdout, stderr: stderr,
	}
	g.failure, _ = c.App.Metadata[failureKey].(*failure)
	if c.Command != nil {
		g.command = strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ")
	}
	switch g.color {
	case "auto", "always", "never":
	default:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--color must be auto, always or never, not %q", g.color)}
	}
	if err := g.usePath(); err != nil {
		return nil, err
	}
	g.locateRepo()
	return g, nil
}

// formatFlag is --format given after the command name (fuelsync validate --format
// json); it overrides the global flag.
func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Usage: "output `FORMAT` (overrides the global --format)"}
}

// globalSet returns the innermost context where the global flag name was given
// (fuelsync validate --repo R beats fuelsync --repo R validate), or nil.
func globalSet(c *cli.Context, name string) *cli.Context {
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && flagNamed(ctx.Command.Flags, name) == nil {
			continue // a command that does not define it: IsSet would look further up
		}
		if ctx.IsSet(name) {
			return ctx
		}
	}
	return nil
}

// globalString is the value of the global flag name where it was given, else its
// default.
func globalString(c *cli.Context, name string) string {
	if ctx := globalSet(c, name); ctx != nil {
		return ctx.String(name)
	}
	if f, ok := globalFlag(name).(*cli.StringFlag); ok {
		return f.Value
	}
	return ""
}

// globalDuration is the value of the global duration flag name where it was
// given, else its default.
func globalDuration(c *cli.Context, name string) time.Duration {
	if ctx := globalSet(c, name); ctx != nil {
		return ctx.Duration(name)
	}
	if f, ok := globalFlag(name).(*cli.DurationFlag); ok {
		return f.Value
	}
	return 0
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
		HideVersion:     true, // --version is ours: the version command's output
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    usageError,
		// Runs when no command matched: help, or a one-line error on stderr.
		Action: func(c *cli.Context) error {
			switch args := c.Args(); {
			case c.Bool("version") && !args.Present():
				return writeVersion(c, stdout, stderr)
			case !args.Present(), args.First() == "help" && args.Len() == 1:
				return cli.ShowAppHelp(c)
			case args.First() == "help":
				return helpCommand(c, args.Slice()[1:])
			default:
				return unknownCommand("", args.First(), c.App.Commands, 1)
			}
		},
		Commands: []*cli.Command{
			validateCommand(stdout, stderr),
			componentsCommand(stdout, stderr),
			renderCommand(stdout, stderr),
			explainCommand(stdout, stderr),
			planCommand(stdout, stderr),
			applyCommand(stdout, stderr),
			approveCommand(stdout, stderr),
			statusCommand(stdout, stderr),
			diffCommand(stdout, stderr),
			pluginCommand(stdout, stderr),
			tagsCommand(stdout, stderr),
			rolesCommand(stdout, stderr),
			watchCommand(stdout, stderr),
			serveCommand(stdout, stderr),
			deployCommand(stdout, stderr),
			waitCommand(stdout, stderr),
			agentCommand(stdout, stderr),
			agentTokenCommand(stdout, stderr),
			triggerCommand(stdout, stderr),
			capabilitiesCommand(stdout, stderr),
			stateCommand(stdout, stderr),
			completionCommand(stdout, stderr),
			completeCommand(stdout),
			versionCommand(stdout, stderr),
		},
	}
	for _, name := range globalNames {
		app.Flags = append(app.Flags, globalFlag(name))
	}
	app.Flags = append(app.Flags, &cli.BoolFlag{Name: "version", Usage: "print the version (as the version command)"})
	decorate(app.Commands, "")
	return app
}

// helpCommand is `fuelsync help COMMAND [SUBCOMMAND]`: the command's --help.
func helpCommand(c *cli.Context, path []string) error {
	cmds := c.App.Commands
	var parent []string
	for _, word := range path {
		cmd := findCommand(cmds, word)
		if cmd == nil || cmd.Hidden {
			return unknownCommand(strings.Join(parent, " "), word, cmds, 1)
		}
		parent = append(parent, word)
		cmds = cmd.Subcommands
	}
	args := append([]string{"fuelsync"}, parent...)
	return c.App.Run(append(args, "--help"))
}

// usageError reports a bad flag or flag value on one line of stderr, without the help
// text urfave/cli would print on stdout.
func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		flags := c.App.Flags
		if c.Command != nil && c.Command.Name != "" {
			flags = c.Command.Flags
		}
		for _, f := range flags {
			for _, n := range f.Names() {
				if len(n) > 1 {
					names = append(names, n)
				}
			}
		}
		if s := suggest(strings.TrimPrefix(name, "-"), names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	return &exitError{code: 1, msg: fmt.Sprintf("%s; run '%s --help' for usage", msg, c.Command.HelpName)}
}

// run executes the CLI and returns the process exit code.
// A failure's message is printed on stderr; with --format json, when the
// command printed nothing on stdout, its JSON error document is printed there
// too (failure.report).
func run(args []string, stdout, stderr io.Writer) int {
	out := &stdoutWatch{w: stdout}
	app := newApp(out, stderr)
	fail := &failure{}
	// args as given, for a dispatch to fuelsync-server
	app.Metadata = map[string]any{argsKey: args, failureKey: fail}
	err := app.Run(flagsFirst(app, args))
	if err == nil {
		return 0
	}
	code, msg := 1, strings.TrimSpace(err.Error())
	var ee *exitError
	if errors.As(err, &ee) {
		code, msg = ee.code, ee.msg
	}
	if msg != "" {
		fmt.Fprintf(stderr, "fuelsync: %s\n", safetext.Lines(msg))
		if !out.wrote && outputFormat(formatOf(args)) == formatJSON {
			fail.report(stdout, msg)
		}
	}
	return code
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
			if cmd != nil && len(cmd.Subcommands) > 0 {
				return args // an unknown subcommand: its group says so
			}
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

// commandLine is a fuelsync command line to print as a hint: the global flags
// that differ from their defaults (--repo, --workdir) then words, each quoted for
// a POSIX shell when needed, so that it can be pasted as printed.
func commandLine(g *globals, words ...string) string {
	out := []string{"fuelsync"}
	if g.repo != "." && g.repo != "" {
		out = append(out, "--repo", shellQuote(g.repo))
	}
	if g.workdir != ".fuelsync" && g.workdir != "" {
		out = append(out, "--workdir", shellQuote(g.workdir))
	}
	for _, w := range words {
		out = append(out, shellQuote(w))
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
