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
	case "path":
		return &cli.StringFlag{Name: "path", Usage: "read the repository in folder `DIR` of --repo (a path from its top, as Argo CD's path and Flux's spec.path)"}
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

var globalNames = []string{"repo", "path", "rev", "workdir", "format", "color", "quiet",
	"state", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-auth-file", "etcd-lock-ttl"}

// stateGlobals are the global flags of the commands that read or write the state.
var stateGlobals = []string{"state", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-auth-file", "etcd-lock-ttl"}

// commandHelp is what a command's --help shows besides its flags: the global
// flags it honours, examples and its exit status. Each example runs as printed
// from the root of a clone of fuelsync (examples/quickstart read, nothing of
// the clone written) after the README's quick start, which made /tmp/qs (a git
// repository of two commits) and /tmp/qs-work (its work directory); what a
// page needs besides is made on the page, or named with the page that makes it
// (serve's secrets and token). TestHelpExamples runs every one in a fresh
// clone, the pages in helpOrder.
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
			"fuelsync render --repo examples/quickstart --out rendered/quickstart",
			"fuelsync render --repo examples/quickstart --cluster demo --out rendered/quickstart-demo --format json",
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
			"# /tmp/qs, /tmp/qs-work: the git repository and work directory the README's quick start made",
			"fuelsync plan --repo /tmp/qs --workdir /tmp/qs-work",
			"# save the plan, then apply exactly it",
			"fuelsync plan --repo /tmp/qs --workdir /tmp/qs-work --out /tmp/qs.plan",
			"fuelsync apply --repo /tmp/qs --workdir /tmp/qs-work /tmp/qs.plan",
		},
		exit: "0 planned, 1 error; with --detailed-exitcode 0 no changes, 1 error, 2 changes",
	},
	"approve": {
		formats: "text json",
		globals: append([]string{"repo", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"# sync: manual (a cluster's, or every cluster's in fuelsync.yaml) leaves a changed cluster",
			"# awaiting approval after a plan or apply; here in /tmp/qs, the README's quick start's:",
			"echo 'sync: manual' > /tmp/qs/fuelsync.yaml",
			"fuelsync tags assign --repo /tmp/qs --cluster demo --node node-1 backup",
			"fuelsync apply --repo /tmp/qs --workdir /tmp/qs-work --auto-approve",
			"fuelsync approve --repo /tmp/qs --workdir /tmp/qs-work --cluster demo",
			"# or through a running serve (fuelsync help serve), once the change is committed and its",
			"# status says demo awaits approval (status --server):",
			"git -C /tmp/qs add -A && git -C /tmp/qs -c user.name=you -c user.email=you@example.com commit -qm 'sync: manual'",
			"fuelsync approve --cluster demo --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
		},
		exit: "0 applied (or accepted by serve), 1 error (nothing awaits approval, the plan no longer renders as approved, or the cluster's applied artifacts moved; nothing was changed)",
	},
	"status": {
		formats: "text json",
		globals: append([]string{"repo", "rev", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"# /tmp/qs, /tmp/qs-work: the git repository and work directory the README's quick start made",
			"fuelsync status --repo /tmp/qs --workdir /tmp/qs-work",
			"fuelsync status --repo /tmp/qs --workdir /tmp/qs-work --format json",
			"# a running serve's (fuelsync help serve: its --api-token-file)",
			"fuelsync status --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
			"# a check for scripts: exit 2 when a cluster is held, degraded or its last run failed",
			"fuelsync status --repo /tmp/qs --workdir /tmp/qs-work --exit-code",
		},
		exit: "0 printed (whatever the clusters' statuses; with --exit-code: none held, degraded or with a failed last run), 1 error (the state or serve could not be read), 2 with --exit-code: a cluster is held, degraded or its last run failed",
	},
	"apply": {
		formats: "text json",
		globals: append([]string{"repo", "rev", "workdir", "format", "color", "quiet"}, stateGlobals...),
		examples: []string{
			"# /tmp/qs, /tmp/qs-work: the git repository and work directory the README's quick start made",
			"fuelsync apply --repo /tmp/qs --workdir /tmp/qs-work --auto-approve",
			"# again: nothing to apply",
			"fuelsync apply --repo /tmp/qs --workdir /tmp/qs-work --auto-approve",
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
			"# in /tmp/qs, the copy of examples/quickstart the README's quick start made",
			"fuelsync plugin create --repo /tmp/qs --role backup-agent backup",
			"fuelsync plugin check /tmp/qs/plugins/backup",
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
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync tags assign --repo /tmp/qs --cluster demo --node node-3 backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags unassign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync tags unassign --repo /tmp/qs --cluster demo --node node-2 backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags create": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync tags create --repo /tmp/qs --cluster demo --has-primary cache"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags update": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync tags update --repo /tmp/qs --cluster demo --has-primary backup"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"tags delete": {
		formats: "text json",
		globals: []string{"repo", "color", "quiet"},
		examples: []string{
			"# in /tmp/qs, the copy of examples/quickstart the README's quick start made",
			"fuelsync tags create --repo /tmp/qs --cluster demo scratch",
			"fuelsync tags delete --repo /tmp/qs --cluster demo scratch",
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
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync roles assign --repo /tmp/qs --cluster demo --node node-4 storage"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"roles unassign": {
		formats:  "text json",
		globals:  []string{"repo", "color", "quiet"},
		examples: []string{"# in /tmp/qs, the copy of examples/quickstart the README's quick start made", "fuelsync roles unassign --repo /tmp/qs --cluster demo --node node-5 storage"},
		exit:     "0 edited, 1 error (the file is left as it was)",
	},
	"state": {
		formats:  "text",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"# /tmp/qs-work: the work directory the README's quick start applied /tmp/qs to", "fuelsync state show --repo /tmp/qs --workdir /tmp/qs-work"},
		exit:     "0 success, 1 error",
	},
	"state show": {
		formats:  "text json",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"# /tmp/qs-work: the work directory the README's quick start applied /tmp/qs to", "fuelsync state show --repo /tmp/qs --workdir /tmp/qs-work"},
		exit:     "0 shown, 1 error",
	},
	"state pull": {
		formats:  "text json",
		globals:  append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{"# /tmp/qs-work: the work directory the README's quick start applied /tmp/qs to", "fuelsync state pull --repo /tmp/qs --workdir /tmp/qs-work"},
		exit:     "0 printed, 1 error",
	},
	"state push": {
		formats: "text json",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"# /tmp/qs-work: the work directory the README's quick start applied /tmp/qs to",
			"fuelsync state pull --repo /tmp/qs --workdir /tmp/qs-work > /tmp/qs-state.json",
			"# pushing the same state back changes nothing",
			"fuelsync state push --repo /tmp/qs --workdir /tmp/qs-work /tmp/qs-state.json",
		},
		exit: "0 pushed (or unchanged), 1 refused (another lineage, an older serial) or an error",
	},
	"watch": {
		formats: "text",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"# runs until interrupted; follows the commits of a git repository whose top is --repo",
			"# (/tmp/qs: the README's quick start made it), or a URL",
			"fuelsync watch --repo /tmp/qs --workdir /tmp/qs-work --interval 30s --dry-run",
			"# the working tree of a directory, git or not",
			"fuelsync watch --repo examples/quickstart --worktree --workdir /tmp/quickstart-work --dry-run",
		},
		exit: "0 stopped by SIGINT or SIGTERM, 1 a start-up error",
	},
	"serve": {
		formats: "text",
		globals: append([]string{"repo", "workdir"}, stateGlobals...),
		examples: []string{
			"# runs until interrupted; follows the commits of a git repository whose top is --repo",
			"# (/tmp/qs: the README's quick start made it), or a URL. Its secrets and API token are",
			"# random text, each in a file (the other pages' examples use these):",
			"openssl rand -hex 32 > /tmp/qs-webhook-secret",
			"openssl rand -hex 32 > /tmp/qs-api-token",
			"openssl rand -hex 32 > /tmp/qs-agent-secret",
			"fuelsync serve --repo /tmp/qs --workdir /tmp/qs-serve --listen 127.0.0.1:8080 --webhook-secret-file /tmp/qs-webhook-secret --api-token-file /tmp/qs-api-token --agent-secret-file /tmp/qs-agent-secret",
		},
		exit: "0 stopped by SIGINT or SIGTERM, 1 a start-up error",
	},
	"agent": {
		formats: "text",
		examples: []string{
			"# node-1 of demo against a running serve (fuelsync help serve), with the node's token",
			"# (fuelsync help agent-token): it runs the node's tasks of each deployment run as serve",
			"# gives them; here echo plays puppet, shell tasks print a word, and the tasks' paths are",
			"# taken under /tmp/qs-root (where the monitoring plugin's directory is made)",
			"mkdir -p /tmp/qs-root/etc/fuel/plugins/monitoring-1.0",
			"fuelsync agent --server http://127.0.0.1:8080 --cluster demo --node node-1 --token-file /tmp/qs-node-1.token --state-dir /tmp/qs-agent --puppet echo --exec 'shell=echo ran' --root /tmp/qs-root",
			"# take tasks until none comes within 5 s, then exit (a test, or cron)",
			"fuelsync agent --server http://127.0.0.1:8080 --cluster demo --node node-1 --token-file /tmp/qs-node-1.token --state-dir /tmp/qs-agent --puppet echo --exec 'shell=echo ran' --root /tmp/qs-root --once --wait 5s",
		},
		exit: "0 stopped by SIGINT or SIGTERM (--once: every task it ran succeeded), 1 a start-up error (--once: a task failed, or the token was refused)",
	},
	"deploy": {
		formats: "text json",
		examples: []string{
			"# stop the run serve started after the apply, if it still runs (one run at a time), then a",
			"# noop run of demo's applied default graph on node-1 only, whose agent takes its tasks",
			"# (fuelsync help agent) until none comes",
			"fuelsync deploy stop --cluster demo --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token --watch || true",
			"fuelsync deploy --cluster demo --node node-1 --noop --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
			"fuelsync agent --server http://127.0.0.1:8080 --cluster demo --node node-1 --token-file /tmp/qs-node-1.token --state-dir /tmp/qs-agent --puppet echo --exec 'shell=echo ran' --root /tmp/qs-root --once --wait 5s",
			"# deploy every node, and follow the run until it ends (each node needs its agent)",
			"# fuelsync deploy --cluster demo --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token --watch",
		},
		exit: "0 the run started (--watch: it succeeded), 1 refused (another run is running: 409) or, with --watch, the run failed",
	},
	"deploy retry": {
		formats: "text json",
		examples: []string{
			"# run again what did not succeed in demo's last run (fuelsync help deploy stop), on node-1",
			"# this time, then node-1's agent runs it",
			"fuelsync deploy retry --cluster demo --node node-1 --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
			"fuelsync agent --server http://127.0.0.1:8080 --cluster demo --node node-1 --token-file /tmp/qs-node-1.token --state-dir /tmp/qs-agent --puppet echo --exec 'shell=echo ran' --root /tmp/qs-root --once --wait 5s",
		},
		exit: "0 the retry started, 1 refused (no run, or one still running)",
	},
	"deploy stop": {
		formats: "text json",
		examples: []string{
			"# a run of node-2, whose agent is not running, then stopped: running tasks finish, nothing",
			"# new starts, the rest ends not run; --watch waits until it has ended",
			"fuelsync deploy --cluster demo --node node-2 --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
			"fuelsync deploy stop --cluster demo --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token --watch",
		},
		exit: "0 the run is stopping (--watch: it ended), 1 no run is running",
	},
	"deploy status": {
		formats: "text json",
		examples: []string{
			"# demo's last run: its verdict, its counts, its failed nodes and tasks",
			"fuelsync deploy status --cluster demo --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
		},
		exit: "0 shown, 1 no such run or serve not reachable",
	},
	"wait": {
		formats: "text json",
		examples: []string{
			"# in CI, after a push: wait up to 10 minutes for a running serve (fuelsync help serve) to",
			"# apply the commit to demo (--for healthy: and its nodes to run it; deployed: its run to succeed)",
			"fuelsync wait --cluster demo --for synced --revision $(git -C /tmp/qs rev-parse HEAD) --timeout 10m --server http://127.0.0.1:8080 --api-token-file /tmp/qs-api-token",
		},
		exit: "0 the cluster is as asked, 1 it failed on the way (held, suspended, degraded, the run failed) or --timeout passed, each saying why",
	},
	"agent-token": {
		formats: "text",
		examples: []string{
			"# where serve's agent secret is (fuelsync help serve: --agent-secret-file /tmp/qs-agent-secret)",
			"fuelsync agent-token --cluster demo --node node-1 --agent-secret-file /tmp/qs-agent-secret > /tmp/qs-node-1.token",
		},
		exit: "0 the token printed, 1 an empty secret file or a name that is not a name",
	},
	"trigger": {
		formats: "text json",
		examples: []string{
			"# to a running serve (fuelsync help serve), signed with its webhook secret",
			"fuelsync trigger --url http://127.0.0.1:8080 --webhook-secret-file /tmp/qs-webhook-secret --ref refs/heads/main",
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
			c.Action = groupAction(path, c.Action)
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
	if i := slices.Index(globals, "repo"); i >= 0 {
		globals = slices.Insert(globals, i+1, "path") // where the repository is
	}
	for _, name := range outputGlobals {
		if !slices.Contains(globals, name) {
			globals = append(globals, name)
		}
	}
	return globals
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

// groupAction is the action of a command group (state, tags, …) given no
// subcommand it knows: its help page without a word, else the word named as
// unknown, with a suggestion and the group's commands; a group that is a
// command too (deploy) runs its own action when given no word.
func groupAction(path string, own cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().Present() {
			return unknownCommand(path, c.Args().First(), c.Command.Subcommands, usageCode(c))
		}
		if own != nil { // a group that is a command too (deploy)
			return own(c)
		}
		return cli.ShowSubcommandHelp(c)
	}
}

// suggest returns the candidate that word is probably a typo of ("validat" →
// "validate", "asign" → "assign", "shwo" → "show", "lst" → "list", "comp" →
// "components"), or "".
func suggest(word string, candidates []string) string {
	if s := loader.Suggest(word, candidates); s != "" {
		return s
	}
	if len(word) >= 3 {
		for _, c := range candidates {
			if oneEdit(word, c) {
				return c
			}
		}
		for _, c := range candidates {
			if strings.HasPrefix(c, word) {
				return c
			}
		}
	}
	return ""
}

// oneEdit reports whether a becomes b by one edit: a letter dropped, added or
// changed, or two adjacent letters swapped (loader.Suggest's distance takes a
// swap for two edits, and no word under four letters).
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	switch {
	case len(b)-len(a) == 1:
		return a[i:] == b[i+1:]
	case len(a) != len(b) || i == len(a):
		return false
	case a[i+1:] == b[i+1:]:
		return true
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
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
