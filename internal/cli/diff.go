package cli

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/internal/safetext"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// markdownLimit keeps a pull-request comment under GitHub's 65,536 characters.
const markdownLimit = 65000

func diffCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "the pull-request check: what changes between two revisions, node by node",
		ArgsUsage: " ",
		OnUsageError: func(c *cli.Context, err error, sub bool) error {
			return withCode(usageError(c, err, sub), 2)
		},
		Description: "Renders both revisions from git objects (no checkout; a file both share is parsed once)\n" +
			"and prints the change set, with causes, and unified diffs of the artifacts that differ.\n" +
			"--format markdown fits a pull-request comment (at most 65,000 characters: summary first,\n" +
			"details folded, long output cut in the middle).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base", Usage: "the base revision `REV` (branch, tag, sha)"},
			&cli.StringFlag{Name: "head", Value: "HEAD", Usage: "the head revision `REV`"},
			&cli.IntFlag{Name: "context", Value: 3, Usage: "`N` lines of context in unified diffs"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return withCode(err, 2)
			}
			if !c.IsSet("base") {
				return &exitError{code: 2, msg: "diff needs --base REV (and --head REV, default HEAD)"}
			}
			if c.NArg() > 0 {
				return &exitError{code: 2, msg: fmt.Sprintf("diff takes no arguments (got %q); use --base and --head", c.Args().First())}
			}
			switch g.format {
			case "text", "json", "markdown":
			default:
				return &exitError{code: 2, msg: fmt.Sprintf("diff prints text, json or markdown, not %q", g.format)}
			}
			res, err := diffRevisions(g, c.String("base"), c.String("head"), c.Int("context"))
			var invalid *invalidRevision
			if errors.As(err, &invalid) && (g.format == "json" || g.format == "markdown") {
				// A complete document, so that a CI job posts the errors rather than nothing.
				if g.format == "json" {
					err = writeJSON(stdout, invalid.json())
				} else {
					_, err = io.WriteString(stdout, invalid.markdown(markdownLimit))
				}
				if err != nil {
					return &exitError{code: 2, msg: err.Error()}
				}
				return &exitError{code: 2, msg: invalid.Error()}
			}
			if err != nil {
				return withCode(err, 2)
			}
			switch g.format {
			case "json":
				err = writeJSON(stdout, res.json())
			case "markdown":
				_, err = io.WriteString(stdout, res.markdown(markdownLimit))
			default:
				_, err = io.WriteString(stdout, res.text(changeColors(g, stdout)))
			}
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			if !res.changes.Empty() {
				return exitCode(1)
			}
			return nil
		},
	}
}

// withCode gives an error the exit code code.
func withCode(err error, code int) error {
	if ee, ok := err.(*exitError); ok {
		return &exitError{code: code, msg: ee.msg}
	}
	return &exitError{code: code, msg: err.Error()}
}

// diffResult is what diff prints.
type diffResult struct {
	base, head string // labels: rev (sha12)
	baseSHA    string
	headSHA    string
	changes    *diff.ChangeSet
	files      []diff.FileDiff
}

// diffRevisions renders base and head and compares them. The head is resolved
// whole (all its diagnostics count); only the clusters the change can affect are
// compared: every cluster when a file outside the cluster specs differs, else the
// clusters whose spec differs. The others render to the same artifacts on both
// sides, so they are neither rendered on the base nor encoded.
func diffRevisions(g *globals, baseRev, headRev string, context int) (*diffResult, error) {
	cache := loader.NewCache() // a file both revisions share is decoded once
	open := func(rev string) (*source, error) {
		rg := *g
		rg.rev = rev
		return openSource(&rg)
	}
	baseSrc, err := open(baseRev)
	if err != nil {
		return nil, err
	}
	headSrc, err := open(headRev)
	if err != nil {
		return nil, err
	}
	headRepo, headDiags := loader.Load(headSrc.fsys, loadOptions(cache))
	baseRepo, baseDiags := loader.Load(baseSrc.fsys, loadOptions(cache))
	affected := affectedClusters(baseRepo, headRepo)
	headPart, err := renderSide(g, "head", baseSrc, headSrc, headRepo, headDiags, affected, true)
	if err != nil {
		return nil, err
	}
	baseRs, err := renderSide(g, "base", baseSrc, headSrc, baseRepo, baseDiags, affected, false)
	if err != nil {
		return nil, err
	}
	baseSide, err := diff.RenderedSide(baseRs, baseSrc.revision, version, nil)
	if err != nil {
		return nil, err
	}
	headSide, err := diff.RenderedSide(headPart, headSrc.revision, version, baseSide.Digests)
	if err != nil {
		return nil, err
	}
	cs, err := diff.Compute(baseSide, headSide)
	if err != nil {
		return nil, err
	}
	res := &diffResult{base: baseSrc.label, head: headSrc.label, baseSHA: baseSrc.revision, headSHA: headSrc.revision, changes: cs}
	for _, cc := range cs.Clusters {
		for _, name := range cc.Files {
			old, _, err := baseSide.Kept(name)
			if err != nil {
				return nil, err
			}
			new, _, err := headSide.Kept(name)
			if err != nil {
				return nil, err
			}
			res.files = append(res.files, diff.File(name, old, new, context))
		}
	}
	return res, nil
}

// invalidRevision is a diff whose base or head does not validate.
type invalidRevision struct {
	side             string // "base" or "head"
	baseSHA, headSHA string
	prefix           string
	diags            hcl.Diagnostics
	files            map[string]*hcl.File
}

func (e *invalidRevision) Error() string {
	nerr, _ := loader.Counts(e.diags)
	return fmt.Sprintf("the %s revision does not validate: %s", e.side, plural(nerr, "error"))
}

// renderSide renders one side of the diff (only clusters when not nil; none when
// empty), printing its diagnostics on stderr; errors make an *invalidRevision.
// With validateRest, the other clusters are validated (render.Validate: the same
// diagnostics, without building every node's graph), so that every diagnostic of
// the side counts although only the clusters compared are rendered.
func renderSide(g *globals, side string, baseSrc, headSrc *source, repo *loader.Repo, diags hcl.Diagnostics, clusters []string, validateRest bool) ([]*render.Rendered, error) {
	var rendered []*render.Rendered
	if clusters == nil || len(clusters) > 0 {
		var more hcl.Diagnostics
		rendered, more = render.Render(repo, render.Options{Clusters: clusters})
		diags = append(diags, more...)
	}
	if validateRest && clusters != nil {
		var rest []string
		for _, c := range repo.Clusters {
			if !slices.Contains(clusters, c.Name) {
				rest = append(rest, c.Name)
			}
		}
		if len(rest) > 0 {
			diags = append(diags, render.Validate(repo, render.Options{Clusters: rest})...)
		}
	}
	diags = loader.SortDiagnostics(diags)
	src := headSrc
	if side == "base" {
		src = baseSrc
	}
	g.writeDiagnostics(g.stderr, diags, repo.Sources.Files(), src.prefix)
	if diags.HasErrors() {
		return nil, &invalidRevision{side: side, baseSHA: baseSrc.revision, headSHA: headSrc.revision,
			prefix: src.prefix, diags: diags, files: repo.Sources.Files()}
	}
	return rendered, nil
}

// json is the diff document of an invalid revision: no changes, the error and
// every diagnostic with its file and position.
func (e *invalidRevision) json() diffJSON {
	nerr, nwarn := loader.Counts(e.diags)
	return diffJSON{FormatVersion: "1", Base: e.baseSHA, Head: e.headSHA, Files: []diffFileJSON{},
		Error: e.Error(), InvalidRevision: e.side, ErrorCount: nerr, WarningCount: nwarn,
		Diagnostics: toJSONDiagnostics(e.diags, e.prefix)}
}

// markdown is the pull-request comment of an invalid revision: what failed, a
// list of the errors with file:line, and the full diagnostics folded.
func (e *invalidRevision) markdown(limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### fuelsync diff `%.12s` → `%.12s`\n\n", e.baseSHA, e.headSHA)
	nerr, nwarn := loader.Counts(e.diags)
	fmt.Fprintf(&b, "**:x: The %s revision does not validate: %s, %s.** Nothing was compared.\n\n", e.side, plural(nerr, "error"), plural(nwarn, "warning"))
	for _, d := range e.diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		where := ""
		if s := d.Subject; s != nil {
			where = mdCode(fmt.Sprintf("%s%s:%d:%d", e.prefix, s.Filename, s.Start.Line, s.Start.Column)) + ": "
		}
		fmt.Fprintf(&b, "- %s%s\n", where, mdCode(d.Summary))
	}
	b.WriteByte('\n')
	var text strings.Builder
	writeDiagnosticsText(&text, e.diags, e.files, e.prefix, false)
	top := b.String()
	if len(top) > limit/2 {
		top = diff.TruncateMiddle(top, limit/2)
	}
	return top + fitBlocks([]string{details("Diagnostics", mdFence("text", text.String()))}, limit-len(top))
}

// affectedClusters lists the clusters whose artifacts a change from base to head
// can change, or nil for all: a file read by either load that differs and is not
// a cluster spec affects every cluster; a cluster spec, its own cluster (by name,
// in either revision).
func affectedClusters(base, head *loader.Repo) []string {
	specOf := map[string][]string{} // file → clusters
	for _, repo := range []*loader.Repo{base, head} {
		for _, c := range repo.Clusters {
			specOf[c.File] = append(specOf[c.File], c.Name)
		}
	}
	bf, hf := base.Sources.Files(), head.Sources.Files()
	var out []string
	for _, files := range []map[string]*hcl.File{bf, hf} {
		for name := range files {
			b, h := bf[name], hf[name]
			if b != nil && h != nil && bytes.Equal(b.Bytes, h.Bytes) {
				continue
			}
			clusters, ok := specOf[name]
			if !ok {
				return nil
			}
			for _, c := range clusters {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// text is the diff for a terminal: the change set, then each file's unified
// diff, every line of it escaped (safetext.Line: an artifact holds the
// repository's values).
func (r *diffResult) text(c diff.Colors) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fuelsync diff %s → %s\n\n", safetext.Line(r.base), safetext.Line(r.head))
	b.WriteString(r.changes.Text(c))
	for _, f := range r.files {
		b.WriteByte('\n')
		for _, line := range strings.SplitAfter(f.Text, "\n") {
			if body, nl := strings.CutSuffix(line, "\n"); nl {
				line = safetext.Line(body) + "\n"
			} else {
				line = safetext.Line(line)
			}
			switch {
			case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
				b.WriteString(paintLine(c.Bold, c.Reset, line))
			case strings.HasPrefix(line, "+"):
				b.WriteString(paintLine(c.Add, c.Reset, line))
			case strings.HasPrefix(line, "-"):
				b.WriteString(paintLine(c.Delete, c.Reset, line))
			default:
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// paintLine colours a line, its newline left outside the colour.
func paintLine(color, reset, line string) string {
	if color == "" {
		return line
	}
	body, nl := strings.CutSuffix(line, "\n")
	if nl {
		return color + body + reset + "\n"
	}
	return color + body + reset
}

type diffJSON struct {
	FormatVersion  string          `json:"format_version"`
	ChangesPresent bool            `json:"changes_present"`
	Base           string          `json:"base"`
	Head           string          `json:"head"`
	Summary        diff.Summary    `json:"summary"`
	Changes        *diff.ChangeSet `json:"changes"`
	Files          []diffFileJSON  `json:"files"`
	// When a revision does not validate: which one, the error and its diagnostics.
	Error           string           `json:"error,omitempty"`
	InvalidRevision string           `json:"invalid_revision,omitempty"`
	ErrorCount      int              `json:"error_count,omitempty"`
	WarningCount    int              `json:"warning_count,omitempty"`
	Diagnostics     []jsonDiagnostic `json:"diagnostics,omitempty"`
}

type diffFileJSON struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Diff    string `json:"diff"`
}

func (r *diffResult) json() diffJSON {
	out := diffJSON{FormatVersion: "1", ChangesPresent: !r.changes.Empty(), Base: r.baseSHA, Head: r.headSHA,
		Summary: r.changes.Summary, Changes: r.changes, Files: []diffFileJSON{}}
	for _, f := range r.files {
		out.Files = append(out.Files, diffFileJSON{f.Name, f.Added, f.Removed, f.Text})
	}
	return out
}

// markdown is the pull-request comment: the summary and a table of node changes
// first, then the change set and each file's diff folded in <details>; when that
// passes limit characters, whole blocks are left out from the middle (and a long
// block is cut in its middle) with a note saying how much.
func (r *diffResult) markdown(limit int) string {
	var head strings.Builder
	fmt.Fprintf(&head, "### fuelsync diff `%.12s` → `%.12s`\n\n", r.baseSHA, r.headSHA)
	if r.changes.Empty() {
		head.WriteString("No changes: both revisions render to the same artifacts.\n")
		return head.String()
	}
	fmt.Fprintf(&head, "**%s**\n\n", r.changes.Summary.Line())
	head.WriteString("| cluster | nodes | action | causes |\n|---|---|---|---|\n")
	for _, cc := range r.changes.Clusters {
		for _, g := range cc.Groups {
			var causes []string
			for _, cause := range g.Change.Causes {
				causes = append(causes, cause.Text())
			}
			fmt.Fprintf(&head, "| %s | %s | %s %s | %s |\n", mdCell(cc.Name), mdCell(g.Title()),
				g.Change.Action.Symbol(), g.Change.ActionText(), mdCell(strings.Join(causes, "; ")))
		}
	}
	head.WriteByte('\n')

	blocks := []string{details("Change set", mdFence("diff", r.changes.Text(diff.Colors{})))}
	for _, f := range r.files {
		blocks = append(blocks, details(fmt.Sprintf("<code>%s</code> (+%d −%d)", html.EscapeString(safetext.Line(f.Name)), f.Added, f.Removed), mdFence("diff", f.Text)))
	}
	top := head.String()
	if len(top) > limit/2 { // a table of thousands of node groups
		top = diff.TruncateMiddle(top, limit/2)
	}
	return top + fitBlocks(blocks, limit-len(top))
}

func details(summary, body string) string {
	return "<details><summary>" + summary + "</summary>\n\n" + body + "\n</details>\n\n"
}

// mdCell is repository text in a cell of a Markdown table: a code span
// (mdCode) in which a "|" cannot end the cell.
func mdCell(s string) string {
	return strings.ReplaceAll(mdCode(s), "|", `\|`)
}

// mdCode is repository text (a name, a message quoting names) in a Markdown
// code span: nothing in it renders as a link, an image, HTML or emphasis. The
// span is fenced with more backticks than any run in the text, and its control
// characters and newlines are escaped (safetext.Line).
func mdCode(s string) string {
	s = safetext.Line(s)
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	// A space on each side keeps a backtick at either end out of the fence;
	// CommonMark strips one space from each side when both are there.
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdFence is text in a fenced code block (diff.Fence), each line escaped.
func mdFence(lang, body string) string {
	return diff.Fence(lang, safetext.Lines(body))
}

// fitBlocks joins blocks within budget characters: a block over a third of the
// budget is cut in its middle first; then, while too long, blocks are left out
// from the middle, and a note says how many and how many characters.
func fitBlocks(blocks []string, budget int) string {
	total := func(bs []string) int {
		n := 0
		for _, b := range bs {
			n += len(b)
		}
		return n
	}
	if total(blocks) <= budget {
		return strings.Join(blocks, "")
	}
	const noteRoom = 300
	for i, b := range blocks {
		if len(b) > budget/3 {
			blocks[i] = diff.TruncateMiddle(b, budget/3)
		}
	}
	cut, cutChars := 0, 0
	for total(blocks)+noteRoom > budget && len(blocks) > 1 {
		mid := len(blocks) / 2
		cut++
		cutChars += len(blocks[mid])
		blocks = append(blocks[:mid:mid], blocks[mid+1:]...)
	}
	if cut == 0 {
		return strings.Join(blocks, "")
	}
	mid := len(blocks) / 2
	note := fmt.Sprintf("> **%d more %s (%d characters) cut here** to fit a pull-request comment; run `fuelsync diff` for the whole output.\n\n",
		cut, map[bool]string{true: "section", false: "sections"}[cut == 1], cutChars)
	out := append(blocks[:mid:mid], note)
	return strings.Join(append(out, blocks[mid:]...), "")
}
