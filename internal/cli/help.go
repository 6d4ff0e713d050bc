package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// The global flags are defined on the application (fuelsync --repo R validate) and
// again on each command that honours them (fuelsync validate --repo R), so that
// they work in any position and each command's --help lists them. readGlobals
// takes the innermost one given.

// globalFlag returns a new definition of the global flag name (a flag value holds
// parse state, so every command gets its own).
func globalFlag(name string) cli.Flag {
	switch name {
	case "repo":
		return &cli.StringFlag{Name: "repo", Value: ".", Usage: "repository `PATH` (a working tree or a bare repository)"}
	case "rev":
		return &cli.StringFlag{Name: "rev", Usage: "read revision `REV` (branch, tag, HEAD~2, sha) from git objects instead of the working tree"}
	case "workdir":
		return &cli.StringFlag{Name: "workdir", Value: ".fuelsync", Usage: "`DIR` for state, applied artifacts, lock and cache"}
	case "format":
		return &cli.StringFlag{Name: "format", Value: "text", Usage: "output `FORMAT`: text, json, markdown or github, where the command supports it"}
	case "color":
		return &cli.StringFlag{Name: "color", Value: "auto", Usage: "colour output `WHEN`: auto, always or never"}
	case "quiet":
		return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only problems"}
	case "state":
		return &cli.StringFlag{Name: "state", Usage: "keep the state and the lock in etcd at `URL` (etcd://host1:2379,host2:2379/prefix) instead of the work directory"}
	case "etcd-cacert":
		return &cli.StringFlag{Name: "etcd-cacert", Usage: "verify etcd's TLS certificate with the CA bundle `FILE`"}
	case "etcd-cert":
		return &cli.StringFlag{Name: "etcd-cert", Usage: "TLS client certificate `FILE` for etcd"}
	case "etcd-key":
		return &cli.StringFlag{Name: "etcd-key", Usage: "TLS client key `FILE` for etcd"}
	case "etcd-auth-file":
		return &cli.StringFlag{Name: "etcd-auth-file", Usage: "authenticate to etcd with USER:PASSWORD read from `FILE`"}
	case "etcd-lock-ttl":
		return &cli.DurationFlag{Name: "etcd-lock-ttl", Value: state.DefaultLockTTL, Usage: "lease `TTL` of the lock in etcd: how long a dead holder's lock outlives it"}
	}
	return nil // not a global flag: globalNames lists them
}

var globalNames = []string{"repo", "rev", "workdir", "format", "color", "quiet",
	"state", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-auth-file", "etcd-lock-ttl"}

// stateGlobals are the global flags of the commands that read or write the state.
var stateGlobals = []string{"state", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-auth-file", "etcd-lock-ttl"}

// commandHelp is what a command's --help shows besides its flags: the global
// flags it honours, examples (each runs as printed from the root of a clone of
// fuelsync, where examples/quickstart is, after the README's quick start made
// /tmp/qs a git repository of two commits; TestHelpExamples runs them) and its
// exit status.
type commandHelp struct {
	globals  []string
	examples []string // "# comment" lines introduce the next command
	exit     string
	// formats are the values of --format the command prints (its first the
	// default, text); "" for a command whose own --format means something else
	// (plugin create, capabilities summary). Every command takes --format,
	// --color and -q in any position (outputGlobals); another format is refused.
	formats string
}

// outputGlobals are the global flags every command takes, before or after its
// name: how it prints. A command that has nothing to print in JSON refuses
// --format json, saying what it prints, rather than printing text.
var outputGlobals = []string{"format", "color", "quiet"}

// helpTable is keyed by the command path after "fuelsync".
var helpTable = map[string]commandHelp{
	"validate": {
		formats: "text json github",
		globals: []string{"repo", "rev", "format", "color", "quiet"},
		examples: []string{
			"fuelsync validate --repo examples/quickstart",
			"# every problem as JSON (warnings are never summarised there)",
			"fuelsync validate --repo examples/quickstart --format json",
		},
		exit: "0 valid (warnings allowed), 1 errors (or warnings with --strict) or a usage error",
	},
	"components": {
		formats: "text json",
		globals: []string{"repo", "rev", "format", "color"},
		examples: []string{
			"fuelsync components --repo examples/quickstart --release quickstart-1.0",
			"# each component's state for the cluster's selection",
			"fuelsync components --repo examples/quickstart --cluster demo",
		},
		exit: "0 listed, 1 when the repository does not load or the cluster's selection is invalid",
	},
	"render": {
		formats: "text json",
		globals: []string{"repo", "rev", "format", "color", "quiet"},
		examples: []string{
			"fuelsync render --repo examples/quickstart --out rendered",
			"fuelsync render --repo examples/quickstart --cluster demo --out rendered-demo --format json",
		},
		exit: "0 written, 1 errors (nothing is written)",
	},
	"explain": {
		formats: "text json",
		globals: []string{"repo", "rev", "format", "color"},
		examples: []string{
			"fuelsync explain --repo examples/quickstart --cluster demo --node node-4",
			"fuelsync explain --repo examples/quickstart --cluster demo --node node-4 --why-not keystone",
		},
		exit: "0 explained, 1 an unknown cluster, node or task, or a cluster that does not render",
	},
	"plan": {
		formats: "text json",
		globals: append([]string{"repo", "rev", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"fuelsync plan --repo examples/quickstart --workdir state",
			"# save the plan, then apply exactly it",
			"fuelsync plan --repo examples/quickstart --workdir state --out demo.plan",
			"fuelsync apply --repo examples/quickstart --workdir state demo.plan",
		},
		exit: "0 planned, 1 error; with --detailed-exitcode 0 no changes, 1 error, 2 changes",
	},
	"approve": {
		formats: "text json",
		globals: append([]string{"repo", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"# a cluster with sync: manual awaits approval after a plan or apply:",
			"fuelsync status --repo examples/quickstart --workdir state",
			"fuelsync approve --repo examples/quickstart --workdir state --cluster prod",
			"# or through a running serve (its --api-token-file):",
			"fuelsync approve --cluster prod --server http://127.0.0.1:8080 --api-token-file token",
		},
		exit: "0 applied (or accepted by serve), 1 error (nothing awaits approval, the plan no longer renders as approved, or the cluster's applied artifacts moved; nothing was changed)",
	},
	"status": {
		formats: "text json",
		globals: append([]string{"repo", "rev", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"fuelsync status --repo examples/quickstart --workdir state",
			"fuelsync status --repo examples/quickstart --workdir state --format json",
			"fuelsync status --server http://127.0.0.1:8080 --api-token-file token",
			"# a check for scripts: exit 2 when a cluster is held, degraded or its last run failed",
			"fuelsync status --repo examples/quickstart --workdir state --exit-code",
		},
		exit: "0 printed (whatever the clusters' statuses; with --exit-code: none held, degraded or with a failed last run), 1 error (the state or serve could not be read), 2 with --exit-code: a cluster is held, degraded or its last run failed",
	},
	"apply": {
		formats: "text json",
		globals: append([]string{"repo", "rev", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"fuelsync apply --repo examples/quickstart --workdir state --auto-approve",
			"# again: nothing to apply",
			"fuelsync apply --repo examples/quickstart --workdir state --auto-approve",
		},
		exit: "0 applied (or nothing to apply), 1 error (the applied state is unchanged)",
	},
	"diff": {
		formats: "text json markdown",
		globals: []string{"repo", "format", "color"},
		examples: []string{
			"# what the last commit changes, as a pull-request comment; --repo is the top of a git",
			"# repository (/tmp/qs: the README's quick start made it, with two commits)",
			"fuelsync diff --repo /tmp/qs --base HEAD~1 --head HEAD --format markdown",
		},
		exit: "as diff(1): 0 no changes, 1 changes, 2 error (a revision that does not validate: a\ncomplete document with its errors is still printed in json and markdown)",
	},
	"plugin": {
		formats: "text",
		globals: []string{"repo", "color", "quiet"},
		examples: []string{
			"fuelsync plugin check examples/quickstart/plugins/monitoring",
		},
		exit: "0 success, 1 error",
	},
	"plugin create": {
		globals: []string{"repo", "color", "quiet"},
		examples: []string{
			"fuelsync plugin create --repo examples/quickstart --role backup-agent backup",
			"fuelsync plugin check examples/quickstart/plugins/backup",
		},
		exit: "0 written, 1 error (an existing directory is never touched)",
	},
	"plugin check": {
		formats: "text json",
		globals: []string{"color", "quiet"},
		examples: []string{
			"fuelsync plugin check examples/quickstart/plugins/monitoring",
		},
		exit: "0 valid (warnings allowed), 1 errors, or DIR is not a plugin directory",
	},
	"tags": {
		formats: "text",
		globals: []string{"repo", "rev", "format", "color", "quiet"},
		examples: []string{
			"fuelsync tags list --repo examples/quickstart --cluster demo",
		},
		exit: "0 success, 1 error",
	},
	"tags list": {
		formats: "text json",
		globals: []string{"repo", "rev", "format", "color"},
		examples: []string{
			"fuelsync tags list --repo examples/quickstart --cluster demo",
			"fuelsync tags list --repo examples/quickstart --cluster demo --node node-2 --format json",
			"fuelsync tags list --repo examples/quickstart --release quickstart-1.0",
		},
		exit: "0 listed, 1 error",
	},
	"tags assign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync tags assign --repo examples/quickstart --cluster demo --node node-3 backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags unassign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync tags unassign --repo examples/quickstart --cluster demo --node node-2 backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags create": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync tags create --repo examples/quickstart --cluster demo --has-primary cache"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags update": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync tags update --repo examples/quickstart --cluster demo --has-primary backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags delete": {
		formats: "text json",
		globals: []string{"repo", "color", "quiet"},
		examples: []string{
			"fuelsync tags create --repo examples/quickstart --cluster demo scratch",
			"fuelsync tags delete --repo examples/quickstart --cluster demo scratch",
		},
		exit: "0 edited, 1 error (the file is left as it was)",
	},
	"roles": {
		formats:  "text",
		globals:  []string{"repo", "rev", "format", "color", "quiet"},
		examples: []string{"fuelsync roles list --repo examples/quickstart --cluster demo"},
		exit:     "0 success, 1 error",
	},
	"roles list": {
		formats: "text json",
		globals: []string{"repo", "rev", "format", "color"},
		examples: []string{
			"fuelsync roles list --repo examples/quickstart --cluster demo",
			"fuelsync roles list --repo examples/quickstart --release quickstart-1.0 --format json",
		},
		exit: "0 listed, 1 error",
	},
	"roles assign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync roles assign --repo examples/quickstart --cluster demo --node node-4 storage"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"roles unassign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"fuelsync roles unassign --repo examples/quickstart --cluster demo --node node-5 storage"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"state": {
		formats:  "text",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"fuelsync apply --repo examples/quickstart --workdir state --auto-approve -q", "fuelsync state show --repo examples/quickstart --workdir state"},
		exit:     "0 success, 1 error",
	},
	"state show": {
		formats:  "text json",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"fuelsync apply --repo examples/quickstart --workdir state --auto-approve -q", "fuelsync state show --repo examples/quickstart --workdir state"},
		exit:     "0 shown, 1 error",
	},
	"state pull": {
		formats:  "text json",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"fuelsync apply --repo examples/quickstart --workdir state --auto-approve -q", "fuelsync state pull --repo examples/quickstart --workdir state"},
		exit:     "0 printed, 1 error",
	},
	"state push": {
		formats: "text json",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"fuelsync apply --repo examples/quickstart --workdir state --auto-approve -q",
			"fuelsync state pull --repo examples/quickstart --workdir state > state.json",
			"# pushing the same state back changes nothing",
			"fuelsync state push --repo examples/quickstart --workdir state state.json",
		},
		exit: "0 pushed (or unchanged), 1 refused (another lineage, an older serial) or an error",
	},
	"watch": {
		formats: "text",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"# runs until interrupted; follows the commits of a git repository whose top is --repo",
			"# (/tmp/qs: the README's quick start made it), or a URL",
			"fuelsync watch --repo /tmp/qs --workdir state --interval 30s --dry-run",
			"# the working tree of a directory, git or not",
			"fuelsync watch --repo examples/quickstart --worktree --workdir state --dry-run",
		},
		exit: "0 stopped by SIGINT or SIGTERM, 1 a start-up error",
	},
	"serve": {
		formats: "text",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"# runs until interrupted; follows the commits of a git repository whose top is --repo",
			"# (/tmp/qs: the README's quick start made it), or a URL",
			"fuelsync serve --repo /tmp/qs --workdir state --listen 127.0.0.1:8080 --webhook-secret-file secret",
		},
		exit: "0 stopped by SIGINT or SIGTERM, 1 a start-up error",
	},
	"agent": {
		formats: "text",
		examples: []string{
			"# on node-1 of demo, with its token (fuelsync agent-token, where serve's agent secret is)",
			"fuelsync agent --server http://fuelsync:8080 --cluster demo --node node-1 --token-file node-1.token --state-dir /var/lib/fuelsync-agent",
			"# take tasks until none comes within 5 s, with another puppet command and shell tasks run by a script",
			"fuelsync agent --server http://127.0.0.1:8080 --cluster demo --node node-1 --token-file node-1.token --state-dir st --once --wait 5s --puppet './puppet-wrapper apply' --exec shell=./run-shell.sh",
		},
		exit: "0 stopped by SIGINT or SIGTERM (--once: every task it ran succeeded), 1 a start-up error (--once: a task failed, or the token was refused)",
	},
	"deploy": {
		formats: "text json",
		examples: []string{
			"# deploy demo's applied default graph on every node, and follow the run until it ends",
			"fuelsync deploy --cluster demo --server http://127.0.0.1:8080 --api-token-file token --watch",
			"# a noop run of two nodes",
			"fuelsync deploy --cluster demo --node node-4 --node node-5 --noop --server http://127.0.0.1:8080 --api-token-file token",
		},
		exit: "0 the run started (--watch: it succeeded), 1 refused (another run is running: 409) or, with --watch, the run failed",
	},
	"deploy retry": {
		formats: "text json",
		examples: []string{
			"# run again what did not succeed in demo's last run, on node-2 only",
			"fuelsync deploy retry --cluster demo --node node-2 --server http://127.0.0.1:8080 --api-token-file token",
		},
		exit: "0 the retry started, 1 refused (no run, or one still running)",
	},
	"deploy stop": {
		formats: "text json",
		examples: []string{
			"# stop demo's run: running tasks finish, nothing new starts, the rest ends skipped",
			"fuelsync deploy stop --cluster demo --server http://127.0.0.1:8080 --api-token-file token --watch",
		},
		exit: "0 the run is stopping (--watch: it ended), 1 no run is running",
	},
	"deploy status": {
		formats: "text json",
		examples: []string{
			"# demo's last run: its verdict, its counts, its failed nodes and tasks",
			"fuelsync deploy status --cluster demo --server http://127.0.0.1:8080 --api-token-file token",
		},
		exit: "0 shown, 1 no such run or serve not reachable",
	},
	"wait": {
		formats: "text json",
		examples: []string{
			"# in CI, after a push: wait up to 10 minutes for serve to apply the commit and its nodes to run it",
			"fuelsync wait --cluster demo --for healthy --revision 0a1b2c3d --timeout 10m --server http://127.0.0.1:8080 --api-token-file token",
			"# until demo's deployment run of its applied artifacts succeeded",
			"fuelsync wait --cluster demo --for deployed --server http://127.0.0.1:8080 --api-token-file token",
		},
		exit: "0 the cluster is as asked, 1 it failed on the way (held, suspended, degraded, the run failed) or --timeout passed, each saying why",
	},
	"agent-token": {
		formats: "text",
		examples: []string{
			"# where serve's agent secret is (serve --agent-secret-file secret)",
			"fuelsync agent-token --cluster demo --node node-1 --agent-secret-file secret > node-1.token",
		},
		exit: "0 the token printed, 1 an empty secret file or a name that is not a name",
	},
	"trigger": {
		formats: "text json",
		examples: []string{
			"# with fuelsync serve running on the same secret",
			"fuelsync trigger --url http://127.0.0.1:8080 --webhook-secret-file secret --ref refs/heads/main",
		},
		exit: "0 serve accepted the delivery, 1 otherwise",
	},
	"capabilities": {
		formats:  "text",
		examples: []string{"fuelsync capabilities find -r -c resource_type=OS::TripleO::Services::RabbitMQ examples/tripleo-capabilities"},
		exit:     "0 success, 1 none found (find), 2 error",
	},
	"capabilities find": {
		formats:  "text json",
		examples: []string{"fuelsync capabilities find -r -c resource_type=OS::TripleO::Services::RabbitMQ examples/tripleo-capabilities"},
		exit:     "0 found, 1 none, 2 a bad argument or an unreadable PATH (a file that is not a valid template is skipped with a warning)",
	},
	"capabilities summary": {
		examples: []string{"fuelsync capabilities summary --format text -f examples/tripleo-capabilities/tht/docker/services/rabbitmq.yaml"},
		exit:     "0 success, 1 every file was skipped, 2 a bad argument or an unreadable file",
	},
	"completion": {
		formats: "text",
		examples: []string{
			"# bash: source <(fuelsync completion bash)",
			"fuelsync completion bash",
			"fuelsync completion zsh",
		},
		exit: "0 printed, 1 an unknown shell",
	},
	"version": {
		formats:  "text json",
		globals:  []string{"format"},
		examples: []string{"fuelsync version", "fuelsync --version", "fuelsync version --format json"},
		exit:     "0",
	},
}

const commandHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleCommands}}

COMMANDS:{{template "visibleCommandTemplate" .}}{{end}}{{with commandFlags . false}}

OPTIONS:{{range .}}
   {{.}}{{end}}{{end}}{{with commandFlags . true}}

GLOBAL OPTIONS (also accepted before the command):{{range .}}
   {{.}}{{end}}{{end}}
{{helpExtra .}}`

func init() {
	// The help pages' own template functions. (Flag categories would do for the
	// global options, but urfave/cli formats every categorised flag of every
	// command at start-up, help or not.)
	cli.HelpPrinter = func(w io.Writer, templ string, data any) {
		cli.HelpPrinterCustom(w, templ, data, map[string]any{
			"commandFlags": commandFlags,
			"helpExtra": func(c *cli.Command) string {
				return helpExtra(helpTable[strings.TrimPrefix(c.HelpName, "fuelsync ")])
			},
		})
	}
}

// commandFlags lists the visible flags of c that are global flags (global) or
// its own (not global), sorted by name. --format is listed as the command's own:
// what it accepts depends on the command.
func commandFlags(c *cli.Command, global bool) []cli.Flag {
	var out []cli.Flag
	for _, f := range c.VisibleFlags() {
		name := f.Names()[0]
		if (name != "format" && slices.Contains(globalNames, name)) == global {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b cli.Flag) int { return strings.Compare(a.Names()[0], b.Names()[0]) })
	return out
}

// decorate walks the commands: it adds the global flags each honours, the help
// page's examples and exit status, suggestions for an unknown subcommand, and a
// one-line error for a missing required flag.
func decorate(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		path := strings.TrimSpace(parent + " " + c.Name)
		h := helpTable[path] // TestHelpTableComplete: every command has an entry
		for _, name := range commandGlobals(path) {
			if flagNamed(c.Flags, name) != nil {
				continue // the command's own --format (plugin create, capabilities)
			}
			c.Flags = append(c.Flags, globalFlag(name))
		}
		c.CustomHelpTemplate = commandHelpTemplate
		if len(c.Subcommands) > 0 && c.ArgsUsage == "" {
			c.ArgsUsage = "COMMAND [arguments...]"
		}
		c.HideHelpCommand = true
		c.Before = chainBefore(requiredFlags(c), c.Before)
		if len(c.Subcommands) == 0 && h.formats != "" {
			c.Before = chainBefore(checkFormat(path, strings.Fields(h.formats)), c.Before)
		}
		if len(c.Subcommands) > 0 {
			decorate(c.Subcommands, path)
		}
	}
}

func flagNamed(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		var primary string
		var aliases []string
		switch f := f.(type) { // Names() splits and trims: slow at start-up
		case *cli.StringFlag:
			primary, aliases = f.Name, f.Aliases
		case *cli.BoolFlag:
			primary, aliases = f.Name, f.Aliases
		case *cli.StringSliceFlag:
			primary, aliases = f.Name, f.Aliases
		case *cli.DurationFlag:
			primary, aliases = f.Name, f.Aliases
		case *cli.IntFlag:
			primary, aliases = f.Name, f.Aliases
		default:
			aliases = f.Names()
		}
		if primary == name || slices.Contains(aliases, name) {
			return f
		}
	}
	return nil
}

// helpExtra is the EXAMPLES and EXIT STATUS sections of a help page (literal text
// of the template: none of it contains "{{").
func helpExtra(h commandHelp) string {
	var b strings.Builder
	if len(h.examples) > 0 {
		b.WriteString("\nEXAMPLES:\n")
		for _, e := range h.examples {
			b.WriteString("   " + e + "\n")
		}
	}
	if h.exit != "" {
		b.WriteString("\nEXIT STATUS:\n")
		for _, line := range strings.Split(h.exit, "\n") {
			b.WriteString("   " + line + "\n")
		}
	}
	return b.String()
}

// requiredFlags takes over urfave/cli's Required: it prints the whole help page
// before its error; this names the missing flags in one line. The flags lose
// their Required mark so that urfave/cli does not check them first.
func requiredFlags(c *cli.Command) cli.BeforeFunc {
	var required []cli.Flag
	for _, f := range c.Flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			if f.Required {
				f.Required = false
				required = append(required, f)
			}
		case *cli.StringSliceFlag:
			if f.Required {
				f.Required = false
				required = append(required, f)
			}
		}
	}
	if required == nil {
		return nil
	}
	return func(ctx *cli.Context) error {
		if helpAsked(ctx) {
			return nil
		}
		var missing []string
		for _, f := range required {
			if !ctx.IsSet(f.Names()[0]) {
				missing = append(missing, "--"+f.Names()[0])
			}
		}
		if len(missing) == 0 {
			return nil
		}
		word := "flag"
		if len(missing) > 1 {
			word = "flags"
		}
		return &exitError{code: usageCode(ctx), msg: fmt.Sprintf("%s: missing required %s %s; run '%s --help' for usage",
			strings.TrimPrefix(ctx.Command.HelpName, "fuelsync "), word, strings.Join(missing, ", "), ctx.Command.HelpName)}
	}
}

// commandGlobals are the global flags command path takes after its name: those
// it honours (its help table's), and the output flags every command takes.
func commandGlobals(path string) []string {
	globals := slices.Clone(helpTable[path].globals)
	for _, name := range outputGlobals {
		if !slices.Contains(globals, name) {
			globals = append(globals, name)
		}
	}
	return globals
}

// checkFormat refuses a --format (given before or after the command) that the
// command path does not print.
func checkFormat(path string, formats []string) cli.BeforeFunc {
	return func(ctx *cli.Context) error {
		f := commandFormat(ctx)
		if helpAsked(ctx) || slices.Contains(formats, f) {
			return nil
		}
		list := strings.Join(formats, ", ")
		if n := len(formats); n > 1 {
			list = strings.Join(formats[:n-1], ", ") + " or " + formats[n-1]
		}
		msg := fmt.Sprintf("%s prints %s, not %q", path, list, f)
		switch path {
		case "watch", "serve":
			msg += "; its log is text or json with --log-format"
		}
		return &exitError{code: usageCode(ctx), msg: msg}
	}
}

// helpAsked reports whether --help was given (urfave/cli then shows the help
// page after Before ran).
func helpAsked(ctx *cli.Context) bool {
	return ctx.Bool("help")
}

// usageCode is the exit code of a usage error: 2 for the commands whose 1 means
// something else (diff: changes; capabilities find: none found).
func usageCode(ctx *cli.Context) int {
	for _, c := range ctx.Lineage() {
		if c.Command != nil && (c.Command.Name == "diff" || c.Command.Name == "capabilities") {
			return 2
		}
	}
	return 1
}

func chainBefore(a, b cli.BeforeFunc) cli.BeforeFunc {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(c *cli.Context) error {
		if err := a(c); err != nil {
			return err
		}
		return b(c)
	}
}

// suggest returns the candidate that word is probably a typo of ("validat" →
// "validate", "asign" → "assign", "comp" → "components"), or "".
func suggest(word string, candidates []string) string {
	if s := loader.Suggest(word, candidates); s != "" {
		return s
	}
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			return c
		}
	}
	return ""
}

// commandNames lists the visible commands' names.
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// unknownCommand is the error for an unknown command or subcommand word under
// parent ("" for the top level): a suggestion when one is close, and the list.
func unknownCommand(parent, word string, cmds []*cli.Command, code int) error {
	names := commandNames(cmds)
	what := "command"
	if parent != "" {
		what = parent + " command"
	}
	msg := fmt.Sprintf("unknown %s %q; ", what, word)
	if s := suggest(word, names); s != "" {
		msg += fmt.Sprintf("did you mean %q? ", s)
	}
	if parent == "" {
		msg += "run 'fuelsync --help' for the list of commands"
	} else {
		msg += fmt.Sprintf("the %s commands are %s", parent, strings.Join(names, ", "))
	}
	return &exitError{code: code, msg: msg}
}
