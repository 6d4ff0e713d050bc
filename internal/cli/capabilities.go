package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/capabilities"
	"github.com/fuelsync/fuelsync/internal/safetext"
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
			var conds []capabilities.Cond
			for _, s := range c.StringSlice("capability") {
				cond, err := capabilities.ParseCond(s)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				conds = append(conds, cond)
			}
			// The files to read: those named, and under directories (with -r) those
			// named like templates. Only an unreadable PATH is an error (exit 2);
			// what cannot be read below it is skipped with a warning.
			var files []string
			roots := map[string]bool{}
			for _, p := range c.Args().Slice() {
				fi, err := os.Stat(p)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				if !fi.IsDir() {
					if isJinjaSource(p) {
						warnf(stderr, g, "%s is a Jinja2 source, not a Heat template: skipped", p)
						continue
					}
					files = append(files, p)
					roots[p] = true
					continue
				}
				if !c.Bool("recursive") {
					return &exitError{code: 2, msg: fmt.Sprintf("%s is a directory (use -r)", p)}
				}
				if _, err := os.ReadDir(p); err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
					switch {
					case err != nil:
						warnf(stderr, g, "%v: skipped", err)
						return nil
					case !d.IsDir() && isTemplateName(f):
						files = append(files, f)
					}
					return nil
				})
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
			}
			var found []*capabilities.Template
			for _, f := range files {
				t, _, err := readTemplate(f, stderr, g)
				switch {
				case err != nil && roots[f]:
					return &exitError{code: 2, msg: err.Error()}
				case err != nil:
					warnf(stderr, g, "%v: skipped", err)
					continue
				}
				if t != nil && t.Matches(conds) && !slices.ContainsFunc(found, func(x *capabilities.Template) bool { return x.Path == t.Path }) {
					found = append(found, t)
				}
			}
			slices.SortFunc(found, func(a, b *capabilities.Template) int { return strings.Compare(a.Path, b.Path) })
			if g.format == formatJSON {
				out := []map[string]any{}
				for _, t := range found {
					out = append(out, map[string]any{"path": t.Path, "capabilities": t.JSON()})
				}
				if err := writeJSON(stdout, out); err != nil {
					return err
				}
			} else {
				for _, t := range found {
					fmt.Fprintln(stdout, safetext.Line(t.Path))
				}
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
			// Each -f and -e file: a Jinja2 source, a file that is not a template, or
			// one that cannot be read as YAML is skipped with a warning; only an
			// unreadable file is an error.
			var templates []*capabilities.Template
			for _, f := range c.StringSlice("file") {
				if isJinjaSource(f) {
					warnf(stderr, g, "%s is a Jinja2 source, not a Heat template: skipped", f)
					continue
				}
				t, notTemplate, err := readTemplate(f, stderr, g)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				if notTemplate {
					warnf(stderr, g, "%s is not a Heat template (no heat_template_version): skipped", f)
				}
				if t != nil {
					templates = append(templates, t)
				}
			}
			sum := capabilities.Summary(templates)
			read := len(templates)
			for _, e := range c.StringSlice("environment") {
				if isJinjaSource(e) {
					warnf(stderr, g, "%s is a Jinja2 source, not an environment: skipped", e)
					continue
				}
				cands, ok, err := registryCandidates(e, stderr, g)
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
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
			if read == 0 {
				return &exitError{code: 1, msg: "nothing to summarise: every file was skipped (above)"}
			}
			keys := make([]string, 0, len(sum))
			for k := range sum {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if format == formatText {
				for _, k := range keys {
					fmt.Fprintf(stdout, "%s: %s\n", safetext.Line(k), safetext.Line(strings.Join(sum[k], ", ")))
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
