package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/capabilities"
	"github.com/fuelsync/fuelsync/loader"
)

func capabilitiesCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:            "capabilities",
		Usage:           "introspect the capabilities of Heat templates",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands:     []*cli.Command{capFindCommand(stdout, stderr), capSummaryCommand(stdout, stderr)},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return unknownCommand("capabilities", c.Args().First(), c.Command.Subcommands, 2)
			}
			return cli.ShowSubcommandHelp(c)
		},
	}
}

// readTemplate reads one file as a template: nil when it is not one.
func readTemplate(name string, stderr io.Writer, g *globals) (*capabilities.Template, hcl.Diagnostics, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, err
	}
	clean := path.Clean(filepath.ToSlash(name))
	t, ok, diags := capabilities.ParseTemplate(clean, src)
	if len(diags) > 0 {
		files := map[string]*hcl.File{clean: {Bytes: src}}
		g.writeDiagnostics(stderr, diags, files, "")
	}
	if !ok {
		return nil, diags, nil
	}
	return t, diags, nil
}

func isTemplateName(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".template":
		return true
	}
	return false
}

func capFindCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "find",
		Usage:        "the templates whose capabilities match every -c",
		ArgsUsage:    "PATH...",
		OnUsageError: func(c *cli.Context, err error, sub bool) error { return withCode(usageError(c, err, sub), 2) },
		Description: "Scans the Heat templates (YAML with heat_template_version) among PATHs (directories with\n" +
			"-r) and prints those whose capabilities match every -c key=value (equal, or a member of a\n" +
			"list; a bare -c key: declared), one path per line, sorted.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "scan directories recursively"},
			&cli.StringSliceFlag{Name: "capability", Aliases: []string{"c"}, Usage: "`key=value` or key (repeatable; all must match)"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return withCode(err, 2)
			}
			if g.format != "text" && g.format != "json" {
				return &exitError{code: 2, msg: fmt.Sprintf("capabilities find prints text or json, not %q", g.format)}
			}
			if c.NArg() == 0 {
				return &exitError{code: 2, msg: "capabilities find needs at least one PATH"}
			}
			var conds []capabilities.Cond
			for _, s := range c.StringSlice("capability") {
				cond, err := capabilities.ParseCond(s)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				conds = append(conds, cond)
			}
			var files []string
			for _, p := range c.Args().Slice() {
				fi, err := os.Stat(p)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				if !fi.IsDir() {
					files = append(files, p)
					continue
				}
				if !c.Bool("recursive") {
					return &exitError{code: 2, msg: fmt.Sprintf("%s is a directory (use -r)", p)}
				}
				err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() && isTemplateName(f) {
						files = append(files, f)
					}
					return err
				})
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
			}
			var found []*capabilities.Template
			failed := false
			for _, f := range files {
				t, diags, err := readTemplate(f, stderr, g)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				failed = failed || diags.HasErrors()
				if t != nil && !diags.HasErrors() && t.Matches(conds) && !slices.ContainsFunc(found, func(x *capabilities.Template) bool { return x.Path == t.Path }) {
					found = append(found, t)
				}
			}
			slices.SortFunc(found, func(a, b *capabilities.Template) int { return strings.Compare(a.Path, b.Path) })
			if g.format == "json" {
				out := []map[string]any{}
				for _, t := range found {
					out = append(out, map[string]any{"path": t.Path, "capabilities": t.JSON()})
				}
				if err := writeJSON(stdout, out); err != nil {
					return err
				}
			} else {
				for _, t := range found {
					fmt.Fprintln(stdout, t.Path)
				}
			}
			switch {
			case failed:
				return &exitError{code: 2, msg: "some templates are invalid (above); the list may be incomplete"}
			case len(found) == 0:
				return exitCode(1)
			}
			return nil
		},
	}
}

func capSummaryCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "summary",
		Usage:        "the capabilities of templates: each key's values, each resource type's templates",
		ArgsUsage:    " ",
		OnUsageError: func(c *cli.Context, err error, sub bool) error { return withCode(usageError(c, err, sub), 2) },
		Description: "One flat object: every capability key but resource_type with its distinct values (in the\n" +
			"order of the -f files), and every resource type with the templates implementing it; -e adds\n" +
			"the candidates of each list in the environments' resource_registry under its type.\n" +
			"JSON (the default) or text (key: values, one line per key).",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "file", Aliases: []string{"f"}, Usage: "a template `FILE` (repeatable)"},
			&cli.StringSliceFlag{Name: "environment", Aliases: []string{"e"}, Usage: "an environment `FILE` (repeatable)"},
			&cli.StringFlag{Name: "format", Value: "json", Usage: "`FORMAT`: json or text"},
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return withCode(err, 2)
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return &exitError{code: 2, msg: fmt.Sprintf("capabilities summary prints json or text, not %q", format)}
			}
			if len(c.StringSlice("file")) == 0 && len(c.StringSlice("environment")) == 0 {
				return &exitError{code: 2, msg: "capabilities summary needs -f FILE (or -e ENV)"}
			}
			var templates []*capabilities.Template
			for _, f := range c.StringSlice("file") {
				t, diags, err := readTemplate(f, stderr, g)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				if diags.HasErrors() {
					return &exitError{code: 2, msg: fmt.Sprintf("%s is not a valid template", f)}
				}
				if t == nil {
					return &exitError{code: 2, msg: fmt.Sprintf("%s is not a Heat template (no heat_template_version)", f)}
				}
				templates = append(templates, t)
			}
			sum := capabilities.Summary(templates)
			for _, e := range c.StringSlice("environment") {
				cands, err := registryCandidates(e)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				for _, kc := range cands {
					for _, p := range kc.paths {
						if !slices.Contains(sum[kc.key], p) {
							sum[kc.key] = append(sum[kc.key], p)
						}
					}
				}
			}
			keys := make([]string, 0, len(sum))
			for k := range sum {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if format == "text" {
				for _, k := range keys {
					fmt.Fprintf(stdout, "%s: %s\n", k, strings.Join(sum[k], ", "))
				}
				return nil
			}
			// One line, as the design prints it: {"key": ["a", "b"], ...}
			var b strings.Builder
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteString(", ")
				}
				kj, _ := json.Marshal(k)
				b.Write(kj)
				b.WriteString(": [")
				for j, v := range sum[k] {
					if j > 0 {
						b.WriteString(", ")
					}
					vj, _ := json.Marshal(v)
					b.Write(vj)
				}
				b.WriteByte(']')
			}
			b.WriteString("}\n")
			_, err = io.WriteString(stdout, b.String())
			return err
		},
	}
}

type keyCandidates struct {
	key   string
	paths []string
}

// registryCandidates reads the list values of an environment's resource_registry:
// each key with its candidates, relative to the environment's directory made
// relative to the current one.
func registryCandidates(env string) ([]keyCandidates, error) {
	src, err := os.ReadFile(env)
	if err != nil {
		return nil, err
	}
	v, diags := loader.DecodeYAML(env, src)
	if diags.HasErrors() {
		return nil, errors.New(diags.Error())
	}
	reg := v.Get("resource_registry")
	var out []keyCandidates
	for _, f := range func() []loader.Field {
		if reg.IsMap() {
			return reg.Fields
		}
		return nil
	}() {
		if !f.Value.IsList() {
			continue
		}
		kc := keyCandidates{key: f.Key}
		for _, it := range f.Value.Items {
			if s, ok := it.Str(); ok {
				kc.paths = append(kc.paths, path.Join(path.Dir(filepath.ToSlash(env)), s))
			}
		}
		out = append(out, kc)
	}
	return out, nil
}
