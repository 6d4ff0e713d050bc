package cli

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
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
			"details folded, a small Mermaid diagram of each changed node's changed tasks, long output cut\n" +
			"in the middle).",
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
			res, err := diffRevisions(g, c.String("base"), c.String("head"), c.Int("context"))
			if err != nil {
				return withCode(err, 2)
			}
			// A head that does not validate still gets a complete document:
			// every other cluster's changes, and the errors with their
			// file:line, for the CI job to post; then exit 2.
			switch g.format {
			case formatJSON:
				err = writeJSON(stdout, res.json())
			case formatMarkdown:
				_, err = io.WriteString(stdout, res.markdown(markdownLimit))
			default:
				_, err = io.WriteString(stdout, res.text(changeColors(g, stdout)))
			}
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			if res.invalid != nil {
				return &exitError{code: 2, msg: res.invalid.Error()}
			}
			if !res.changes.Empty() || len(res.held) > 0 {
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
	// held are the clusters not compared: they do not validate at the head
	// (or at the base), each with its problems.
	held []heldCluster
	// invalid is the head's errors when it does not validate (exit 2), nil
	// when it does.
	invalid *invalidRevision
	// diagrams are the changed nodes' Mermaid diagrams (markdown), and how
	// many were left out (diff_mermaid.go).
	diagrams        []nodeDiagram
	diagramsOmitted int
}

// heldCluster is a cluster diff does not compare.
type heldCluster struct {
	name, side string // side: "head" or "base"
	problems   []string
}

// diffRevisions renders base and head and compares them, cluster by cluster:
// a cluster that does not validate at the head (or at the base) is not
// compared and is listed with its problems, and the others are. Every
// diagnostic of the head counts (the check fails when the head has an error);
// only the clusters the change can affect are rendered: every cluster when a
// file outside the cluster specs differs, else the clusters whose spec
// differs. The others render to the same artifacts on both sides, so they are
// validated on the head, not rendered, and not read on the base.
func diffRevisions(g *globals, baseRev, headRev string, context int) (*diffResult, error) {
	r, err := loadDiffSides(g, baseRev, headRev, context)
	if err != nil {
		return nil, err
	}
	// The clusters compared, one at a time: rendered on both sides,
	// compared, their unified diffs made, and their renders dropped. The
	// others are validated on the head.
	failed := r.compareHead()
	if err := r.compareRemoved(); err != nil && failed == nil {
		failed = err
	}
	if failed != nil {
		return nil, failed
	}
	r.finishDiagnostics()
	return r.result(), nil
}

// diffRun is one diff of two revisions: both sides loaded, the clusters held
// on each (by their errors), those compared, and what the comparison found.
// The head's clusters are walked concurrently: mu guards what they add.
type diffRun struct {
	g                  *globals
	context            int
	baseSrc, headSrc   *source
	baseRepo, headRepo *loader.Repo
	// baseDiags and headDiags are each side's diagnostics: the load's, then
	// the renders' (baseMore, headMore; baseData, the base's data errors,
	// which each render finds again).
	baseDiags, headDiags         hcl.Diagnostics
	baseMore, headMore, baseData hcl.Diagnostics
	// baseHeld and headHeld are the problems of the clusters held on each side.
	baseHeld, headHeld map[string]hcl.Diagnostics
	// baseList and headList are the clusters compared, of each side.
	baseList, headList []string

	// encoding is shared by both sides' encodings: a task definition both
	// have (a file both share is loaded once) is encoded once.
	encoding *render.EncodeCache

	mu      sync.Mutex
	changes []*diff.ClusterChange
	files   map[string][]diff.FileDiff
	// diagrams are each cluster's Mermaid diagrams (at most
	// mermaidMaxDiagrams) and how many more it had.
	diagrams map[string]clusterDiagrams
}

// loadDiffSides opens and loads both revisions (a file both share is decoded
// once), holds the clusters that do not validate on either side, and lists
// those to compare: the clusters the change can affect, held on neither.
func loadDiffSides(g *globals, baseRev, headRev string, context int) (*diffRun, error) {
	cache := loader.NewCache()
	open := func(rev string) (*source, error) {
		rg := *g
		rg.rev = rev
		return openSource(&rg)
	}
	r := &diffRun{g: g, context: context, files: map[string][]diff.FileDiff{}, diagrams: map[string]clusterDiagrams{}, encoding: render.NewEncodeCache()}
	var err error
	if r.baseSrc, err = open(baseRev); err != nil {
		return nil, err
	}
	if r.headSrc, err = open(headRev); err != nil {
		return nil, err
	}
	r.headRepo, r.headDiags = loader.Load(r.headSrc.fsys, loadOptions(cache))
	r.baseRepo, r.baseDiags = loader.Load(r.baseSrc.fsys, loadOptions(cache))
	affected := affectedClusters(r.baseRepo, r.headRepo)
	r.headHeld, _ = operation.Hold(r.headRepo, nil, r.headDiags)
	r.baseHeld, _ = operation.Hold(r.baseRepo, nil, r.baseDiags)
	compare := func(repo *loader.Repo) []string {
		var out []string
		for _, c := range repo.Clusters {
			if (affected == nil || slices.Contains(affected, c.Name)) && !r.held(c.Name) && !slices.Contains(out, c.Name) {
				out = append(out, c.Name)
			}
		}
		return out
	}
	r.headList, r.baseList = compare(r.headRepo), compare(r.baseRepo)
	return r, nil
}

// held reports whether cluster c is held on either side.
func (r *diffRun) held(c string) bool { return len(r.headHeld[c]) > 0 || len(r.baseHeld[c]) > 0 }

// heldNow is held while the head's clusters are walked.
func (r *diffRun) heldNow(c string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held(c)
}

// compareOne compares cluster c of two renders (nil: not on that side): its
// change, its files' unified diffs and its Mermaid diagrams.
func (r *diffRun) compareOne(c string, base, head *render.Rendered) error {
	baseSide, headSide := emptySide(), emptySide()
	var err error
	// Compared with nothing, the base's side keeps every file but the node
	// files (encoded again from its render for a unified diff): keeping all
	// of them held every node file of the cluster. Beside the head's render,
	// neither side encodes the node files and DOT files both have byte for
	// byte (diff.RenderedClusterSides).
	switch {
	case base != nil && head != nil:
		baseSide, headSide, err = diff.RenderedClusterSides(base, head)
	case base != nil:
		baseSide, err = diff.RenderedClusterSide(base, map[string]string{}, nil)
	default:
		headSide, err = diff.RenderedClusterSide(head, map[string]string{}, nil)
	}
	if err != nil {
		return err
	}
	cs, err := diff.Compute(baseSide, headSide)
	if err != nil || len(cs.Clusters) == 0 {
		return err
	}
	cc := cs.Clusters[0]
	var fds []diff.FileDiff
	for _, name := range cc.Files {
		old, _, err := baseSide.Kept(name)
		if err != nil {
			return err
		}
		new, _, err := headSide.Kept(name)
		if err != nil {
			return err
		}
		fds = append(fds, diff.File(name, old, new, r.context))
	}
	d, omitted := mermaidDiagrams(cs, baseSide, headSide)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, cc)
	r.files[c] = fds
	r.diagrams[c] = clusterDiagrams{d, omitted}
	return nil
}

// renderBase renders cluster c of the base alone, noting its diagnostics
// and holding it on its errors: nil when it does not render.
func (r *diffRun) renderBase(c string) *render.Rendered {
	rendered, d, data := renderCluster(r.baseRepo, c, r.encoding)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.baseMore, r.baseData = append(r.baseMore, d...), append(r.baseData, data...)
	if d.HasErrors() {
		r.baseHeld[c] = append(r.baseHeld[c], errorsOf(d)...)
	}
	return rendered
}

// compareHead walks the head's clusters to compare, each compared with the
// base's render of it as it comes; the head's data errors hold the clusters
// they concern. The walk hands over one cluster at a time (its graphs are
// still resolved on every core): each brings the base's render of it too, and
// two clusters of both sides in hand needed 1.7 times a cold apply's memory.
func (r *diffRun) compareHead() error {
	var data hcl.Diagnostics
	var err error
	if len(r.headList) > 0 { // none: Walk's empty list is every cluster
		data, err = render.Walk(r.headRepo, render.Options{Clusters: r.headList, OneAtATime: true, Encoding: r.encoding}, false, r.compareWalked)
	}
	r.headMore = append(r.headMore, data...)
	holdData(r.headRepo, data, r.headHeld)
	return err
}

// compareWalked compares a cluster of the head as the walk renders it.
func (r *diffRun) compareWalked(wk *render.Walked) error {
	c := wk.Cluster.Name
	r.mu.Lock()
	r.headMore = append(r.headMore, wk.Diagnostics...)
	if wk.Diagnostics.HasErrors() {
		r.headHeld[c] = append(r.headHeld[c], errorsOf(wk.Diagnostics)...)
	}
	r.mu.Unlock()
	var base *render.Rendered
	if slices.Contains(r.baseList, c) {
		base = r.renderBase(c)
	}
	if wk.Rendered == nil || r.heldNow(c) {
		return nil
	}
	return r.compareOne(c, base, wk.Rendered)
}

// compareRemoved compares the clusters of the base alone (removed at the
// head): the first error, after every one was tried.
func (r *diffRun) compareRemoved() error {
	var failed error
	for _, c := range r.baseList {
		if slices.Contains(r.headList, c) {
			continue
		}
		rendered := r.renderBase(c)
		if rendered != nil && !r.held(c) {
			if err := r.compareOne(c, rendered, nil); err != nil && failed == nil {
				failed = err
			}
		}
	}
	return failed
}

// finishDiagnostics completes both sides' diagnostics (the head's clusters
// not compared are validated there) and prints them.
func (r *diffRun) finishDiagnostics() {
	r.baseData = loader.SortDiagnostics(r.baseData) // the same data errors, found by each render
	r.baseMore = append(r.baseMore, r.baseData...)
	holdData(r.baseRepo, r.baseData, r.baseHeld)
	r.headDiags = append(r.headDiags, r.headMore...)
	var rest []string
	for _, c := range r.headRepo.Clusters {
		if !slices.Contains(r.headList, c.Name) && !slices.Contains(rest, c.Name) && len(r.headHeld[c.Name]) == 0 {
			rest = append(rest, c.Name)
		}
	}
	_, more := renderEach(r.headRepo, rest, r.headHeld, true)
	r.headDiags = loader.SortDiagnostics(append(r.headDiags, more...))
	r.baseDiags = loader.SortDiagnostics(append(r.baseDiags, r.baseMore...))
	writeDiffDiagnostics(r.g, diffSide{r.baseDiags, r.baseRepo.Sources.Files(), r.baseSrc}, diffSide{r.headDiags, r.headRepo.Sources.Files(), r.headSrc})
}

// result is what diff prints: the changes of the clusters held on neither
// side (by the data's errors too, known once every cluster is rendered),
// the clusters held, the head's errors, the files' diffs and the diagrams.
func (r *diffRun) result() *diffResult {
	changes := slices.DeleteFunc(r.changes, func(cc *diff.ClusterChange) bool { return r.held(cc.Name) })
	slices.SortFunc(changes, func(a, b *diff.ClusterChange) int { return strings.Compare(a.Name, b.Name) })
	cs := &diff.ChangeSet{Clusters: changes, Summary: diff.Summarize(changes)}
	res := &diffResult{base: r.baseSrc.label, head: r.headSrc.label, baseSHA: r.baseSrc.revision, headSHA: r.headSrc.revision, changes: cs}
	for _, side := range []struct {
		name string
		held map[string]hcl.Diagnostics
	}{{"head", r.headHeld}, {"base", r.baseHeld}} {
		for _, c := range slices.Sorted(maps.Keys(side.held)) {
			if side.name == "base" && len(r.headHeld[c]) > 0 {
				continue // said of the head
			}
			res.held = append(res.held, heldCluster{name: c, side: side.name, problems: diagProblems(side.held[c], 20)})
		}
	}
	if r.headDiags.HasErrors() {
		res.invalid = &invalidRevision{side: "head", baseSHA: r.baseSrc.revision, headSHA: r.headSrc.revision,
			prefix: r.headSrc.prefix, diags: r.headDiags, files: r.headRepo.Sources.Files()}
	}
	for _, cc := range cs.Clusters {
		res.files = append(res.files, r.files[cc.Name]...)
	}
	r.addDiagrams(res)
	return res
}

// addDiagrams adds the diagrams to res in the clusters' order,
// mermaidMaxDiagrams in all.
func (r *diffRun) addDiagrams(res *diffResult) {
	for _, cc := range res.changes.Clusters {
		d := r.diagrams[cc.Name]
		for _, nd := range d.diagrams {
			if len(res.diagrams) < mermaidMaxDiagrams {
				res.diagrams = append(res.diagrams, nd)
			} else {
				res.diagramsOmitted++
			}
		}
		res.diagramsOmitted += d.omitted
	}
}

// clusterDiagrams are one cluster's Mermaid diagrams, and how many more it had
// beyond the bound.
type clusterDiagrams struct {
	diagrams []nodeDiagram
	omitted  int
}

// emptySide is the side of a cluster a revision does not have.
func emptySide() *diff.Side {
	return &diff.Side{Digests: map[string]string{}, Read: func(name string) ([]byte, error) { return nil, fmt.Errorf("%s: not in the render", name) }}
}

// renderCluster renders cluster c of repo alone: nil when it has errors (in
// diags, its own), or the data's errors (data) concern it.
func renderCluster(repo *loader.Repo, c string, encoding *render.EncodeCache) (r *render.Rendered, diags, data hcl.Diagnostics) {
	data, _ = render.Walk(repo, render.Options{Clusters: []string{c}, Encoding: encoding}, false, func(wk *render.Walked) error {
		r, diags = wk.Rendered, wk.Diagnostics
		return nil
	})
	if more, _ := operation.Hold(repo, nil, data); len(more[c]) > 0 {
		r = nil
	}
	return r, diags, data
}

// holdData adds to held the clusters the errors of data (release and plugin
// data, found by a render) concern.
func holdData(repo *loader.Repo, data hcl.Diagnostics, held map[string]hcl.Diagnostics) {
	more, _ := operation.Hold(repo, nil, data)
	for c, d := range more {
		held[c] = append(held[c], d...)
	}
}

// errorsOf are the errors among diags.
func errorsOf(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}

// renderEach renders (or, with validate, validates) clusters of repo, adding
// to held the clusters whose render, or whose release or plugin data, has
// errors; it returns the clusters rendered without errors and every
// diagnostic of the render.
func renderEach(repo *loader.Repo, clusters []string, held map[string]hcl.Diagnostics, validate bool) ([]*render.Rendered, hcl.Diagnostics) {
	if len(clusters) == 0 {
		return nil, nil
	}
	var each *render.Each
	if validate {
		each = render.ValidateEach(repo, render.Options{Clusters: clusters})
	} else {
		each = render.RenderEach(repo, render.Options{Clusters: clusters})
	}
	diags := slices.Clone(each.Data)
	more, _ := operation.Hold(repo, nil, each.Data)
	for c, d := range more {
		held[c] = append(held[c], d...)
	}
	for _, c := range clusters {
		diags = append(diags, each.Clusters[c]...)
		for _, d := range each.Clusters[c] {
			if d.Severity == hcl.DiagError {
				held[c] = append(held[c], d)
			}
		}
	}
	var out []*render.Rendered
	for _, r := range each.Rendered {
		if len(held[r.Model.Cluster.Name]) == 0 {
			out = append(out, r)
		}
	}
	return out, diags
}

// diagProblems are the errors of diags as file:line:col: error: message, at
// most max and a line that counts the rest.
func diagProblems(diags hcl.Diagnostics, max int) []string {
	var out []string
	for _, d := range loader.SortDiagnostics(diags) {
		if d.Severity != hcl.DiagError {
			continue
		}
		where := ""
		if s := d.Subject; s != nil {
			where = fmt.Sprintf("%s:%d:%d: ", s.Filename, s.Start.Line, s.Start.Column)
		}
		out = append(out, where+"error: "+d.Summary)
	}
	if len(out) > max {
		out = append(out[:max:max], fmt.Sprintf("and %d more errors", len(out)-max))
	}
	return out
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

// markdown is the section of the pull-request comment of a head that does not
// validate: what failed, a list of the errors with file:line, and the full
// diagnostics folded, in at most limit characters.
func (e *invalidRevision) markdown(limit int) string {
	var b strings.Builder
	nerr, nwarn := loader.Counts(e.diags)
	fmt.Fprintf(&b, "**:x: The %s revision does not validate: %s, %s.** The clusters it holds are not compared; the others are, below.\n\n", e.side, plural(nerr, "error"), plural(nwarn, "warning"))
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
	if r.changes.Empty() && len(r.held) > 0 {
		b.WriteString("No changes in the clusters compared.\n")
	} else {
		b.WriteString(r.changes.Text(c))
	}
	for _, h := range r.held {
		fmt.Fprintf(&b, "\nNot compared: cluster %s does not validate at the %s (%s):\n", safetext.Line(h.name), h.side, plural(len(h.problems), "problem"))
		for _, p := range h.problems {
			fmt.Fprintf(&b, "  %s\n", safetext.Line(p))
		}
	}
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
	// NotCompared are the clusters that do not validate at the head (or at
	// the base), with their problems: the others are compared.
	NotCompared []diffHeldJSON `json:"not_compared,omitempty"`
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
	for _, h := range r.held {
		out.NotCompared = append(out.NotCompared, diffHeldJSON{Cluster: h.name, Revision: h.side, Problems: h.problems})
	}
	if e := r.invalid; e != nil {
		nerr, nwarn := loader.Counts(e.diags)
		out.Error, out.InvalidRevision, out.ErrorCount, out.WarningCount = e.Error(), e.side, nerr, nwarn
		out.Diagnostics = toJSONDiagnostics(e.diags, e.prefix)
	}
	return out
}

// diffHeldJSON is a cluster diff did not compare, in its JSON form.
type diffHeldJSON struct {
	Cluster string `json:"cluster"`
	// Revision is the side it does not validate at: head or base.
	Revision string   `json:"revision"`
	Problems []string `json:"problems"`
}

// markdown is the pull-request comment: the summary and a table of node changes
// first, then the change set and each file's diff folded in <details>; when that
// passes limit characters, whole blocks are left out from the middle (and a long
// block is cut in its middle) with a note saying how much.
func (r *diffResult) markdown(limit int) string {
	var head strings.Builder
	fmt.Fprintf(&head, "### fuelsync diff `%.12s` → `%.12s`\n\n", r.baseSHA, r.headSHA)
	var invalid string
	if r.invalid != nil {
		invalid = r.invalid.markdown(limit / 2)
		head.WriteString(invalid)
	}
	for _, h := range r.held {
		if h.side == "base" {
			fmt.Fprintf(&head, "Not compared: cluster %s does not validate at the base (%s).\n\n", mdCode(h.name), plural(len(h.problems), "problem"))
		}
	}
	if r.changes.Empty() {
		if r.invalid != nil {
			head.WriteString("No changes in the other clusters.\n")
		} else {
			head.WriteString("No changes: both revisions render to the same artifacts.\n")
		}
		return head.String()
	}
	fmt.Fprintf(&head, "**%s**\n\n", r.changes.Summary.Line())
	head.WriteString("| cluster | nodes | action | causes |\n|---|---|---|---|\n")
	row := func(cluster, nodes string, nc *diff.NodeChange) {
		var causes []string
		for _, cause := range nc.Causes {
			causes = append(causes, cause.Text())
		}
		fmt.Fprintf(&head, "| %s | %s | %s %s | %s |\n", mdCell(cluster), mdCell(nodes),
			nc.Action.Symbol(), nc.ActionText(), mdCell(strings.Join(causes, "; ")))
	}
	if r.changes.Mass() {
		massRows(r.changes, row)
	} else {
		for _, cc := range r.changes.Clusters {
			for _, g := range cc.Groups {
				row(cc.Name, g.Title(), g.Change)
			}
		}
	}
	head.WriteByte('\n')

	blocks := []string{details("Change set", mdFence("diff", r.changes.Text(diff.Colors{})))}
	if d := markdownDiagrams(r.diagrams, r.diagramsOmitted); d != "" {
		blocks = append(blocks, d)
	}
	for _, f := range r.files {
		blocks = append(blocks, details(fmt.Sprintf("<code>%s</code> (+%d −%d)", html.EscapeString(safetext.Line(f.Name)), f.Added, f.Removed), mdFence("diff", f.Text)))
	}
	top := head.String()
	if len(top) > limit/2 { // a table of thousands of node groups
		top = diff.TruncateMiddle(top, limit/2)
	}
	return top + fitBlocks(blocks, limit-len(top))
}

// massRows hands row the rows of a mass change's table: a class of nodes a
// row, at most diff.MassClassLines a change, then one row for the rest.
func massRows(cs *diff.ChangeSet, row func(cluster, nodes string, nc *diff.NodeChange)) {
	for _, mc := range cs.ByChange() {
		for i, k := range mc.Classes {
			if i == diff.MassClassLines {
				rest := 0
				for _, k := range mc.Classes[i:] {
					rest += k.Nodes
				}
				row("", fmt.Sprintf("%d more nodes of %d more classes", rest, len(mc.Classes)-i), mc.Change)
				break
			}
			row(k.Where(), k.Who(), k.Change)
		}
	}
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
