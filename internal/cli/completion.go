package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// The shell scripts ask `fuelsync __complete WORDS...` for the candidates of the
// last word: the words typed after `fuelsync`, the last one being completed.
const (
	bashCompletion = `# bash completion for fuelsync: source it, or put it in
# /etc/bash_completion.d/fuelsync (fuelsync completion bash > ...).
_fuelsync() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$(fuelsync __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _fuelsync fuelsync
`
	zshCompletion = `#compdef fuelsync
# zsh completion for fuelsync: put it in a directory of $fpath as _fuelsync
# (fuelsync completion zsh > ~/.zfunc/_fuelsync).
_fuelsync() {
  local -a candidates
  candidates=("${(@f)$(fuelsync __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
compdef _fuelsync fuelsync
`
	fishCompletion = `# fish completion for fuelsync: fuelsync completion fish > ~/.config/fish/completions/fuelsync.fish
complete -c fuelsync -f -a '(fuelsync __complete (commandline -opc)[2..-1] (commandline -ct))'
`
)

func completionCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "completion",
		Usage:        "print the shell completion script for bash, zsh or fish",
		ArgsUsage:    "bash|zsh|fish",
		OnUsageError: usageError,
		Description: "The scripts complete commands and flags, and cluster, node, tag and role names from the\n" +
			"repository (--repo, default .). bash: source <(fuelsync completion bash).",
		Action: func(c *cli.Context) error {
			script, ok := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[c.Args().First()]
			if c.NArg() != 1 || !ok {
				return &exitError{code: 1, msg: "completion takes one argument: bash, zsh or fish"}
			}
			_, err := io.WriteString(stdout, script)
			return err
		},
	}
}

// completeCommand is the hidden `__complete WORDS...`.
func completeCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			for _, s := range complete(c.App, c.Args().Slice()) {
				fmt.Fprintln(stdout, s)
			}
			return nil
		},
	}
}

// complete returns the candidates for the last of words (the words after
// `fuelsync`), filtered by its prefix.
func complete(app *cli.App, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	cmd, cmds, path := completedPath(app, before)
	prev := ""
	if len(before) > 0 {
		prev = before[len(before)-1]
	}
	var out []string
	switch {
	case prev == "--cluster" || prev == "--node" || prev == "--release" || prev == "--repo":
		out = repoNames(flagValue(before, "--repo"), flagValue(before, "--path"), prev, flagValue(before, "--cluster"), "")
	case strings.HasPrefix(cur, "-"):
		flags := app.Flags
		if cmd != nil {
			flags = cmd.Flags
		}
		out = flagNames(flags)
	case len(cmds) > 0 && (cmd == nil || cmd.Action == nil || len(cmd.Subcommands) > 0):
		for _, sc := range cmds {
			if !sc.Hidden {
				out = append(out, sc.Name)
			}
		}
	default:
		out = completeArgument(before, strings.Join(path, " "))
	}
	var matched []string
	for _, s := range out {
		if strings.HasPrefix(s, cur) && !slices.Contains(matched, s) {
			matched = append(matched, s)
		}
	}
	return matched
}

// flagValue is the value of flag name (--name V or --name=V) among words, ""
// when it is not given.
func flagValue(words []string, name string) string {
	for i := 0; i+1 < len(words); i++ {
		if words[i] == name {
			return words[i+1]
		}
		if v, ok := strings.CutPrefix(words[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// completedPath is the command the words before the one completed name
// (nil: none yet), its subcommands (the application's commands when none),
// and the path of words that named commands, flags and their values aside.
func completedPath(app *cli.App, before []string) (cmd *cli.Command, cmds []*cli.Command, path []string) {
	cmds = app.Commands
	for i := 0; i < len(before); i++ {
		w := before[i]
		if strings.HasPrefix(w, "-") {
			flags := app.Flags
			if cmd != nil {
				flags = cmd.Flags
			}
			if !strings.Contains(w, "=") && i+1 < len(before) && flagTakesValue(flags, w) {
				i++
			}
			continue
		}
		if found := findCommand(cmds, w); found != nil {
			cmd, cmds = found, found.Subcommands
			path = append(path, w)
		}
	}
	return cmd, cmds, path
}

// flagNames are the long names of flags, as --name.
func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) > 1 {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// completeArgument completes an argument of the command path: a tag, a role
// or a task of the repository, cluster and node the words before name.
func completeArgument(before []string, path string) []string {
	what := ""
	switch path {
	case "tags assign", "tags unassign", "tags update", "tags delete":
		what = "tags"
	case "roles assign", "roles unassign":
		what = "roles"
	case "explain":
		what = "tasks"
	default:
		return nil
	}
	return repoNames(flagValue(before, "--repo"), flagValue(before, "--path"), what, flagValue(before, "--cluster"), flagValue(before, "--node"))
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// repoNames lists names from the repository at repo (default "."), in its
// folder folder (--path; "" for none): what is
// "--cluster" (clusters), "--node" (the cluster's nodes), "--release" (release
// versions), "tags" (the cluster's tags, the node's own first), "roles" (the
// cluster's roles), "tasks" (the node's tasks in the default graph). Names
// are sorted as status, the pages and the list commands sort them (by name,
// not in the files' order); tasks stay in the graph's order.
func repoNames(repoPath, folder, what, cluster, node string) []string {
	if what == "--repo" {
		return nil // the shell completes paths
	}
	if repoPath == "" {
		repoPath = "."
	}
	g := &globals{repo: repoPath, path: folder}
	if g.usePath() != nil {
		return nil
	}
	src, err := openSource(g)
	if err != nil {
		return nil
	}
	repo, _ := loader.Load(src.fsys, loadOptions(nil))
	var out, own []string // own: the node's own tags
	switch what {
	case "--cluster":
		for _, c := range repo.Clusters {
			out = append(out, c.Name)
		}
		return sortedNames(out)
	case "--release":
		for _, r := range repo.Releases {
			out = append(out, r.Version)
		}
		return sortedNames(out)
	}
	for _, c := range repo.Clusters {
		if cluster != "" && c.Name != cluster {
			continue
		}
		if what == "--node" {
			for _, n := range c.Nodes {
				out = append(out, n.Name)
			}
			continue
		}
		m, _ := render.Build(repo, c)
		if m == nil {
			continue
		}
		switch what {
		case "tags":
			if nt := m.NodeTags[node]; nt != nil {
				own = append(own, nt.Tags...)
			}
			for _, t := range m.TagList() {
				out = append(out, t.Name)
			}
		case "roles":
			for _, r := range m.Roles {
				out = append(out, r.Name)
			}
		case "tasks":
			if g, _ := m.RenderGraphs(); g != nil {
				for _, gr := range g {
					if gr.Type == "default" && gr.Node(node) != nil {
						for _, pt := range gr.Node(node).Tasks {
							out = append(out, pt.ID())
						}
					}
				}
			}
		}
	}
	if what == "tasks" {
		return out
	}
	return append(sortedNames(own), sortedNames(out)...) // complete drops the repeated
}

// sortedNames sorts names as every list of fuelsync does (by name), once each.
func sortedNames(names []string) []string {
	slices.Sort(names)
	return slices.Compact(names)
}
