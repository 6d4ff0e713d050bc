package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

func validateCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "validate",
		Usage:        "load the repository and run every check",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Loads plugins, releases and cluster specs and reports every problem with its file, line and\n" +
			"column.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "treat warnings as errors"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("validate takes no arguments (got %q); use --repo PATH", c.Args().First())}
			}
			src, err := openSource(g)
			if err != nil {
				return err
			}
			repo, diags := loadAndCheck(src)
			nerr, nwarn := loader.Counts(diags)
			failed := nerr > 0 || (c.Bool("strict") && nwarn > 0)
			switch g.format {
			case formatJSON:
				if err := writeDiagnosticsJSON(stdout, diags, src.prefix, !failed); err != nil {
					return err
				}
			case formatGitHub:
				writeDiagnosticsGitHub(stdout, diags, src.prefix)
			default:
				shown := *g
				if c.Bool("strict") {
					shown.quiet = false // the warnings are the errors
				}
				shown.writeDiagnostics(stderr, diags, repo.Sources.Files(), src.prefix)
				if !g.quiet || failed {
					fmt.Fprintln(stdout, safetext.Line(validateSummary(src.label, repo, nerr, nwarn, failed)))
				}
			}
			if failed {
				return exitCode(1)
			}
			return nil
		},
	}
}

// loadAndCheck loads the repository, checks every cluster's merged model
// and resolves its task graphs (cycles, group members, overlaps): all
// problems of every stage, sorted. Nothing is written.
func loadAndCheck(src *source) (*loader.Repo, hcl.Diagnostics) {
	repo, diags := loader.Load(src.fsys, loadOptions(nil))
	more := render.Validate(repo, render.Options{})
	return repo, loader.SortDiagnostics(append(diags, more...))
}

// validateSummary is the one-line result of validate.
func validateSummary(label string, repo *loader.Repo, nerr, nwarn int, failed bool) string {
	var rels []string
	for _, r := range repo.Releases {
		rels = append(rels, r.Version)
	}
	nodes := 0
	for _, c := range repo.Clusters {
		nodes += len(c.Nodes)
	}
	verdict := "valid"
	switch {
	case failed && nerr == 0:
		verdict = "invalid (--strict: warnings count as errors)"
	case failed:
		verdict = "invalid"
	}
	relText := "no releases"
	if len(rels) > 0 {
		relText = plural(len(rels), "release") + " (" + strings.Join(rels, ", ") + ")"
	}
	return fmt.Sprintf("%s: %s: %s, %s, %s with %s; %s, %s",
		label, verdict, plural(len(repo.Plugins), "plugin"), relText, plural(len(repo.Clusters), "cluster"),
		plural(nodes, "node"), plural(nerr, "error"), plural(nwarn, "warning"))
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
