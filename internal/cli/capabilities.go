package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
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
	}
}

// readTemplate reads one file as a template: nil when it is not one. A file that
// is not a template is skipped in silence; one that cannot be read as YAML, or a
// template whose capabilities are invalid, is skipped with its problems printed
// as warnings (a tree of Heat templates holds other YAML, and find and summary
// report on what they can read). The YAML decoder's warnings about the rest of a
// template (a key written twice in a resource) are not printed: find and summary
// read only heat_template_version and capabilities.
// notTemplate is true for a YAML file without heat_template_version.
func readTemplate(name string, stderr io.Writer, g *globals) (t *capabilities.Template, notTemplate bool, err error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, false, err
	}
	clean := path.Clean(filepath.ToSlash(name))
	t, ok, diags := capabilities.ParseTemplate(clean, src)
	if diags.HasErrors() {
		if !ok && !reTemplateVersion().Match(src) {
			// Not YAML, and no heat_template_version line either: some other
			// file that happens to end in .yaml (a Jinja2 source named so).
			return nil, true, nil
		}
		what := "the template"
		if !ok {
			what = "the file"
		}
		g.writeDiagnostics(stderr, skipped(diags, what), map[string]*hcl.File{clean: {Bytes: src}}, "")
		return nil, false, nil
	}
	if !ok {
		return nil, true, nil
	}
	return t, false, nil
}

// reTemplateVersion finds the heat_template_version line of a template that
// cannot be parsed.
var reTemplateVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^heat_template_version[ \t]*:`) })

// skipped turns the errors that made a file unusable into warnings that say it
// is skipped; other warnings are dropped.
func skipped(diags hcl.Diagnostics, what string) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		w := *d
		w.Severity = hcl.DiagWarning
		w.Detail = strings.TrimSpace(d.Detail + "\n" + "fuelsync skips " + what + ".")
		out = append(out, &w)
	}
	return out
}

// isJinjaSource reports whether name is a Jinja2 source (x.j2.yaml, x.j2):
// TripleO renders those into templates and environments; they are not templates
// themselves, and not YAML until rendered.
func isJinjaSource(name string) bool {
	base := path.Base(filepath.ToSlash(name))
	return strings.HasSuffix(base, ".j2") || strings.Contains(base, ".j2.")
}

func isTemplateName(name string) bool {
	if isJinjaSource(name) {
		return false
	}
	switch path.Ext(name) {
	case ".yaml", ".yml", ".template":
		return true
	}
	return false
}

// warnf prints a warning without a source position.
func warnf(stderr io.Writer, g *globals, format string, args ...any) {
	writeDiagnosticsText(stderr, hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(format, args...)}}, nil, "", g.useColor(stderr))
}

func capFindCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "find",
		Usage:        "the templates whose capabilities match every -c",
		ArgsUsage:    "PATH...",
		OnUsageError: func(c *cli.Context, err error, sub bool) error { return withCode(usageError(c, err, sub), 2) },
		Description: "Scans the Heat templates (YAML with heat_template_version) among PATHs (directories with\n" +
			"-r) and prints those whose capabilities match every -c key=value (equal, or a member of a\n" +
			"list; a bare -c key: declared), one path per line, sorted. Under directories, Jinja2 sources\n" +
			"(*.j2.yaml, *.j2) and YAML without heat_template_version are not templates and are skipped;\n" +
			"a file that is not valid YAML, or a template with invalid capabilities, is skipped with a\n" +
			"warning.",
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
			if c.NArg() == 0 {
				return &exitError{code: 2, msg: "capabilities find needs at least one PATH"}
			}
			conds, err := parseConds(c.StringSlice("capability"))
			if err != nil {
				return err
			}
			files, roots, err := templateFiles(g, c.Args().Slice(), c.Bool("recursive"))
			if err != nil {
				return err
			}
			found, err := findTemplates(g, files, roots, conds)
			if err != nil {
				return err
			}
			if err := capFindView(g, found); err != nil {
				return err
			}
			if len(found) == 0 {
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
			"JSON (the default) or text (key: values, one line per key). A Jinja2 source (*.j2.yaml, *.j2),\n" +
			"a file that is not valid YAML, or a -f file that is not a Heat template is skipped with a\n" +
			"warning.",
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
			// its own --format, json by default
			format, err := parseOutputFormat(c, "capabilities summary", c.String("format"), []string{"json", "text"})
			if err != nil {
				return err
			}
			if len(c.StringSlice("file")) == 0 && len(c.StringSlice("environment")) == 0 {
				return &exitError{code: 2, msg: "capabilities summary needs -f FILE (or -e ENV)"}
			}
			templates, err := summaryTemplates(g, c.StringSlice("file"))
			if err != nil {
				return err
			}
			sum := capabilities.Summary(templates)
			envs, err := addRegistryCandidates(g, sum, c.StringSlice("environment"))
			if err != nil {
				return err
			}
			if len(templates)+envs == 0 {
				return &exitError{code: 1, msg: "nothing to summarise: every file was skipped (above)"}
			}
			return capSummaryView(stdout, format, sum)
		},
	}
}

// summaryTemplates reads the -f files of capabilities summary: a Jinja2
// source, a file that is not a template, or one that cannot be read as YAML
// is skipped with a warning; only an unreadable file is an error.
func summaryTemplates(g *globals, files []string) ([]*capabilities.Template, error) {
	var templates []*capabilities.Template
	for _, f := range files {
		if isJinjaSource(f) {
			warnf(g.stderr, g, "%s is a Jinja2 source, not a Heat template: skipped", f)
			continue
		}
		t, notTemplate, err := readTemplate(f, g.stderr, g)
		if err != nil {
			return nil, &exitError{code: 2, msg: err.Error()}
		}
		if notTemplate {
			warnf(g.stderr, g, "%s is not a Heat template (no heat_template_version): skipped", f)
		}
		if t != nil {
			templates = append(templates, t)
		}
	}
	return templates, nil
}

// addRegistryCandidates adds to sum the candidates of each list in the
// resource_registry of the environments envs, under its type, and returns
// how many environments it read (a Jinja2 source, or a file that is not
// valid YAML, is skipped with a warning).
func addRegistryCandidates(g *globals, sum map[string][]string, envs []string) (int, error) {
	read := 0
	for _, e := range envs {
		if isJinjaSource(e) {
			warnf(g.stderr, g, "%s is a Jinja2 source, not an environment: skipped", e)
			continue
		}
		cands, ok, err := registryCandidates(e, g.stderr, g)
		if err != nil {
			return 0, &exitError{code: 2, msg: err.Error()}
		}
		if !ok {
			continue
		}
		read++
		for _, kc := range cands {
			for _, p := range kc.paths {
				if !slices.Contains(sum[kc.key], p) {
					sum[kc.key] = append(sum[kc.key], p)
				}
			}
		}
	}
	return read, nil
}

// capSummaryView prints the summary, its keys sorted: in text, one line a
// key with its values; in JSON one line, as the design prints it:
// {"key": ["a", "b"], ...}.
func capSummaryView(w io.Writer, format outputFormat, sum map[string][]string) error {
	keys := slices.Sorted(maps.Keys(sum))
	if format == formatText {
		for _, k := range keys {
			fmt.Fprintf(w, "%s: %s\n", safetext.Line(k), safetext.Line(strings.Join(sum[k], ", ")))
		}
		return nil
	}
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
	_, err := io.WriteString(w, b.String())
	return err
}

// parseConds parses each -c of capabilities find.
func parseConds(args []string) ([]capabilities.Cond, error) {
	var conds []capabilities.Cond
	for _, s := range args {
		cond, err := capabilities.ParseCond(s)
		if err != nil {
			return nil, &exitError{code: 2, msg: err.Error()}
		}
		conds = append(conds, cond)
	}
	return conds, nil
}

// templateFiles are the files capabilities find reads: those named (roots),
// and under directories (with recursive) those named like templates. Only an
// unreadable PATH is an error (exit 2); what cannot be read below it is
// skipped with a warning.
func templateFiles(g *globals, paths []string, recursive bool) (files []string, roots map[string]bool, err error) {
	roots = map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, &exitError{code: 2, msg: err.Error()}
		}
		if !fi.IsDir() {
			if isJinjaSource(p) {
				warnf(g.stderr, g, "%s is a Jinja2 source, not a Heat template: skipped", p)
				continue
			}
			files = append(files, p)
			roots[p] = true
			continue
		}
		if !recursive {
			return nil, nil, &exitError{code: 2, msg: fmt.Sprintf("%s is a directory (use -r)", p)}
		}
		if _, err := os.ReadDir(p); err != nil {
			return nil, nil, &exitError{code: 2, msg: err.Error()}
		}
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				warnf(g.stderr, g, "%v: skipped", err)
				return nil
			case !d.IsDir() && isTemplateName(f):
				files = append(files, f)
			}
			return nil
		})
		if err != nil {
			return nil, nil, &exitError{code: 2, msg: err.Error()}
		}
	}
	return files, roots, nil
}

// findTemplates reads files and returns the templates that match every
// condition, once each, sorted by path: a root that cannot be read is an
// error, a file under a directory skipped with a warning.
func findTemplates(g *globals, files []string, roots map[string]bool, conds []capabilities.Cond) ([]*capabilities.Template, error) {
	var found []*capabilities.Template
	for _, f := range files {
		t, _, err := readTemplate(f, g.stderr, g)
		switch {
		case err != nil && roots[f]:
			return nil, &exitError{code: 2, msg: err.Error()}
		case err != nil:
			warnf(g.stderr, g, "%v: skipped", err)
			continue
		}
		if t != nil && t.Matches(conds) && !slices.ContainsFunc(found, func(x *capabilities.Template) bool { return x.Path == t.Path }) {
			found = append(found, t)
		}
	}
	slices.SortFunc(found, func(a, b *capabilities.Template) int { return strings.Compare(a.Path, b.Path) })
	return found, nil
}

// capFindView prints the templates found: their paths, one a line, or in
// JSON each with its capabilities.
func capFindView(g *globals, found []*capabilities.Template) error {
	if g.format == formatJSON {
		out := []map[string]any{}
		for _, t := range found {
			out = append(out, map[string]any{"path": t.Path, "capabilities": t.JSON()})
		}
		return writeJSON(g.stdout, out)
	}
	for _, t := range found {
		fmt.Fprintln(g.stdout, safetext.Line(t.Path))
	}
	return nil
}

type keyCandidates struct {
	key   string
	paths []string
}

// registryCandidates reads the list values of an environment's resource_registry:
// each key with its candidates, relative to the environment's directory made
// relative to the current one. ok is false when the file is not valid YAML (the
// problem is printed as a warning: the file is skipped).
func registryCandidates(env string, stderr io.Writer, g *globals) (out []keyCandidates, ok bool, err error) {
	src, err := os.ReadFile(env)
	if err != nil {
		return nil, false, err
	}
	clean := path.Clean(filepath.ToSlash(env))
	v, diags := loader.DecodeYAML(clean, src)
	if diags.HasErrors() {
		writeDiagnosticsText(stderr, skipped(diags, "the environment"), map[string]*hcl.File{clean: {Bytes: src}}, "", g.useColor(stderr))
		return nil, false, nil
	}
	reg := v.Get("resource_registry")
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
	return out, true, nil
}
