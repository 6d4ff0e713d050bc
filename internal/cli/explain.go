package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

func explainCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "explain",
		Usage:        "say why each task is on a node, or why a task is not",
		ArgsUsage:    "[TASK]",
		OnUsageError: usageError,
		Description: "For each task of the node's graph (or TASK only): the definition that won (file:line and\n" +
			"layer) and what it overrode, the selector entry and the node tag that matched (or the group\n" +
			"that lists it), the value of a legacy condition, and where each dependency comes from.\n" +
			"--why-not TASK says why TASK is not on the node.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cluster", Usage: "cluster `C`", Required: true},
			&cli.StringFlag{Name: "node", Usage: "node `N` (or the pseudo nodes master, sync)", Required: true},
			&cli.StringFlag{Name: "graph", Value: "default", Usage: "graph type `G`"},
			&cli.StringFlag{Name: "why-not", Usage: "explain why `TASK` is not on the node"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 1 {
				return &exitError{code: 1, msg: "explain takes at most one TASK"}
			}
			src, err := openSource(g)
			if err != nil {
				return err
			}
			repo, diags := loader.Load(src.fsys, loadOptions(nil))
			name := c.String("cluster")
			if repo.Cluster(name) == nil && !diags.HasErrors() {
				return &exitError{code: 1, msg: noCluster(name, repo)}
			}
			rendered, more := render.Render(repo, render.Options{Clusters: []string{name}})
			diags = loader.SortDiagnostics(append(diags, more...))
			if diags.HasErrors() {
				g.writeDiagnostics(stderr, diags, repo.Sources.Files(), src.prefix)
				return &exitError{code: 1, msg: fmt.Sprintf("cluster %s does not render; run 'fuelsync validate' for every problem", name)}
			}
			r := rendered[0]
			if t := c.String("why-not"); t != "" {
				lines, err := r.WhyNot(c.String("graph"), c.String("node"), t, src.prefix)
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				if g.format == formatJSON {
					return writeJSON(stdout, map[string]any{"format_version": formatVersion, "task": t, "reasons": lines})
				}
				for _, l := range lines {
					fmt.Fprintln(stdout, safetext.Line(l))
				}
				return nil
			}
			ex, err := r.Explain(c.String("graph"), c.String("node"), c.Args().First())
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			if g.format == formatJSON {
				return writeJSON(stdout, struct {
					FormatVersion string `json:"format_version"`
					*render.Explanation
				}{formatVersion, ex})
			}
			writeExplanation(stdout, ex, src.prefix)
			return nil
		},
	}
}

// writeExplanation prints an explanation for a person. Every name, file name
// and value in it comes from the repository and is escaped (safetext.Line).
func writeExplanation(w io.Writer, ex *render.Explanation, prefix string) {
	esc := safetext.Line
	fmt.Fprintf(w, "cluster %s, node %s, graph %s: %s\n", esc(ex.Cluster), esc(ex.Node), esc(ex.Graph), plural(len(ex.Tasks), "task"))
	fmt.Fprintf(w, "roles: %s\ntags: %s\n", esc(dashJoin(ex.Roles)), esc(dashJoin(ex.Tags)))
	for _, t := range ex.Tasks {
		fmt.Fprintf(w, "\n%d. %s (%s)\n", t.Position, esc(t.ID), esc(t.Type))
		fmt.Fprintf(w, "   defined by the %s at %s:%d\n", esc(t.Definition.Layer), esc(prefix+t.Definition.File), t.Definition.Line)
		for _, o := range t.Overrode {
			fmt.Fprintf(w, "   overrides the %s's definition at %s:%d\n", esc(o.Layer), esc(prefix+o.File), o.Line)
		}
		for _, d := range t.Defaults {
			where := ""
			if d.File != "" {
				where = fmt.Sprintf(" (%s:%d)", esc(prefix+d.File), d.Line)
			}
			fmt.Fprintf(w, "   %s = %s: %s%s\n", esc(d.Key), esc(d.Value), esc(d.From), where)
		}
		for _, v := range t.Via {
			switch v.Selector {
			case "group":
				fmt.Fprintf(w, "   placed by group %s\n", esc(v.Item))
			case "stage":
				fmt.Fprintf(w, "   a stage: runs on the sync node\n")
			default:
				if v.Item == "*" && v.Tag == "*" {
					fmt.Fprintf(w, "   selected by %s: \"*\" (every node)\n", esc(v.Selector))
					continue
				}
				fmt.Fprintf(w, "   selected by %s entry %q, matching tag %s\n", esc(v.Selector), v.Item, esc(v.Tag))
			}
		}
		if t.Condition != "" {
			val := "not evaluated"
			if t.ConditionValue != nil {
				val = fmt.Sprint(*t.ConditionValue)
			}
			fmt.Fprintf(w, "   condition %q = %s\n", t.Condition, esc(val))
		}
		for _, e := range t.Requires {
			from := ""
			if e.File != "" {
				from = fmt.Sprintf(" (%s:%d)", esc(prefix+e.File), e.Line)
			}
			fmt.Fprintf(w, "   requires %s@%s: %s%s\n", esc(e.Task), esc(e.Node), esc(e.Origin), from)
		}
	}
}

func dashJoin(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	return strings.Join(list, ", ")
}
