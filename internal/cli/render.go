package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

func renderCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "render",
		Usage:        "write the per-node task graphs and the cluster summaries",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Validates the repository, resolves every task onto the nodes that run it and writes the\n" +
			"artifacts to DIR: manifest.json, <cluster>/cluster.yaml, <cluster>/tasks/<graph>.yaml (each\n" +
			"task definition once), <cluster>/nodes/<node>/<graph>.yaml (a node's tasks by id, with their\n" +
			"requirements) and <cluster>/graphs/<graph>.dot. With --expanded, each node file holds its\n" +
			"tasks' definitions inline instead, and there is no tasks/ directory. The directory is\n" +
			"replaced as a whole (written aside, then renamed), and only when there is no error.\n" +
			"DIR must be new, empty or a previous render (it has fuelsync's manifest.json and is not\n" +
			"an applied set), and not the repository or a directory inside it other than its rendered/,\n" +
			"nor a work directory, a directory inside one, or one that holds one.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "rendered", Usage: "write the artifacts to `DIR`"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "render only cluster `C` (repeatable)"},
			&cli.BoolFlag{Name: "expanded", Usage: "write every node file with its tasks' definitions inline (artifact format 1)"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("render takes no arguments (got %q); use --out DIR", c.Args().First())}
			}
			args := renderArgs{out: c.String("out"), clusters: c.StringSlice("cluster"), expanded: c.Bool("expanded")}
			res, err := renderRepo(g, args)
			if err != nil {
				return err
			}
			return renderView(g, args, res)
		},
	}
}

// renderArgs are render's flags: the directory written, the clusters
// rendered (all when none), and the artifact format.
type renderArgs struct {
	out      string
	clusters []string
	expanded bool
}

// renderWritten is what a render wrote: the clusters' models, the files and
// bytes, and the manifest's digest.
type renderWritten struct {
	src      *source
	models   []*render.Model
	files    int64
	bytes    int64
	manifest [sha256.Size]byte
}

// renderRepo validates the repository and writes its artifacts to args.out
// as a whole (writeTreeAtomic), or nothing when there is an error (every
// diagnostic printed).
func renderRepo(g *globals, args renderArgs) (*renderWritten, error) {
	src, err := openSource(g)
	if err != nil {
		return nil, err
	}
	src.pin(g) // the manifest's revision: the commit when the tree is clean
	if err := checkRenderOut(args.out, g.repo); err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	repo, diags := loader.Load(src.fsys, loadOptions(nil))
	for _, name := range args.clusters {
		if repo.Cluster(name) == nil && !diags.HasErrors() {
			return nil, &exitError{code: 1, msg: noCluster(name, repo)}
		}
	}
	if diags.HasErrors() {
		// Every diagnostic, and nothing written.
		more := render.Validate(repo, render.Options{Clusters: args.clusters})
		return nil, renderFailed(g, g.stderr, src, repo, loader.SortDiagnostics(append(diags, more...)))
	}
	res := &renderWritten{src: src}
	var nfiles, nbytes atomic.Int64
	err = writeTreeAtomic(args.out, func(put func(name string, data []byte) error) error {
		var more hcl.Diagnostics
		var err error
		res.models, more, err = render.RenderStream(repo, render.Options{Clusters: args.clusters},
			src.revision, version, args.expanded, func(name string, data []byte) error {
				nfiles.Add(1)
				nbytes.Add(int64(len(data)))
				if name == "manifest.json" {
					res.manifest = sha256.Sum256(data)
				}
				return put(name, data)
			})
		diags = loader.SortDiagnostics(append(diags, more...))
		if err == nil && diags.HasErrors() {
			err = errDiagnostics
		}
		return err
	})
	if errors.Is(err, errDiagnostics) {
		return nil, renderFailed(g, g.stderr, src, repo, diags)
	}
	g.writeDiagnostics(g.stderr, diags, repo.Sources.Files(), src.prefix)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	res.files, res.bytes = nfiles.Load(), nbytes.Load()
	return res, nil
}

// renderView says what render wrote: the summary document, or one line.
func renderView(g *globals, args renderArgs, res *renderWritten) error {
	nodes := 0
	for _, m := range res.models {
		nodes += len(m.Cluster.Nodes)
	}
	if g.format == formatJSON {
		clusters := []string{}
		for _, m := range res.models {
			clusters = append(clusters, m.Cluster.Name)
		}
		return writeJSON(g.stdout, renderSummary{formatVersion, res.src.revision, args.out, clusters, nodes,
			int(res.files), res.bytes, hex.EncodeToString(res.manifest[:])})
	}
	if !g.quiet {
		fmt.Fprintf(g.stdout, "%s: rendered %s with %s into %s (%s)\n", res.src.label,
			plural(len(res.models), "cluster"), plural(nodes, "node"), args.out, plural(int(res.files), "file"))
	}
	return nil
}

// errDiagnostics stops writing the artifacts: the diagnostics have errors.
var errDiagnostics = errors.New("the repository has errors")

// renderFailed reports diags, which have errors: render wrote nothing.
func renderFailed(g *globals, stderr io.Writer, src *source, repo *loader.Repo, diags hcl.Diagnostics) error {
	g.writeDiagnostics(stderr, diags, repo.Sources.Files(), src.prefix)
	nerr, _ := loader.Counts(diags)
	return &exitError{code: 1, msg: fmt.Sprintf("%s: %s; nothing written", src.label, plural(nerr, "error"))}
}

// renderSummary is render --format json: what was written.
type renderSummary struct {
	FormatVersion  string   `json:"format_version"`
	Revision       string   `json:"revision"`
	Out            string   `json:"out"`
	Clusters       []string `json:"clusters"`
	Nodes          int      `json:"nodes"`
	Files          int      `json:"files"`
	Bytes          int64    `json:"bytes"`
	ManifestSHA256 string   `json:"manifest_sha256"`
}

// checkRenderOut refuses an output directory render must not replace: one inside
// the repository's source tree (other than its rendered/ directory), one that holds
// the repository, a work directory or one inside it (an applied set), one that
// holds a work directory, and an existing directory that is neither empty nor a
// previous render (it has no fuelsync manifest.json, or it is an applied set).
// It changes nothing.
func checkRenderOut(out, repoDir string) error {
	outReal, err := realPath(out)
	if err != nil {
		return fmt.Errorf("--out %s: %v", out, err)
	}
	repoReal, err := realPath(repoDir)
	if err != nil {
		return fmt.Errorf("repository %s: %v", repoDir, err)
	}
	if outReal == repoReal {
		return fmt.Errorf("refusing to render into %s: it is the repository itself, and rendering replaces the whole directory; the default --out is its rendered/ directory", out)
	}
	if within(outReal, repoReal) {
		return fmt.Errorf("refusing to render into %s: the repository %s is inside it, and rendering replaces the whole directory; choose another --out", out, repoDir)
	}
	if within(repoReal, outReal) && outReal != filepath.Join(repoReal, "rendered") {
		return fmt.Errorf("refusing to render into %s: it is inside the repository's source tree (%s); the only output allowed there is its rendered/ directory; choose --out outside the repository", out, repoDir)
	}
	// A work directory's applied sets are apply's: a render over one of them
	// would leave a state that no longer describes its set.
	for d := outReal; ; d = filepath.Dir(d) {
		if state.LooksLikeWorkdir(d) {
			what := "inside the work directory " + d
			if d == outReal {
				what = "a work directory"
			}
			return fmt.Errorf("refusing to render into %s: it is %s, whose applied sets belong to apply; choose --out outside every work directory (to copy an applied set, cp -rL %s)", out, what, filepath.Join(d, "artifacts", "current"))
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	fi, err := os.Lstat(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out %s: %v", out, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("refusing to render into %s: it exists and is not a directory", out)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("--out %s: %v", out, err)
	}
	for _, e := range entries {
		if e.IsDir() && state.LooksLikeWorkdir(filepath.Join(out, e.Name())) {
			return fmt.Errorf("refusing to render into %s: it holds the work directory %s, and rendering replaces the whole directory; choose another --out", out, filepath.Join(out, e.Name()))
		}
	}
	if len(entries) == 0 || isPreviousRender(out) {
		return nil
	}
	return fmt.Errorf("refusing to render into %s: it is not empty and is not a previous render (it has no fuelsync manifest.json), and rendering replaces the whole directory; choose a new or empty directory", out)
}

// isPreviousRender reports whether dir holds the manifest.json a render writes,
// and is not an applied set (which has the same manifest, and its state in
// .state.json).
func isPreviousRender(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, ".state.json")); err == nil {
		return false
	}
	f, err := os.Open(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return false
	}
	defer f.Close()
	var m struct {
		FormatVersion *string         `json:"format_version"`
		ToolVersion   *string         `json:"tool_version"`
		Files         json.RawMessage `json:"files"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&m); err != nil {
		return false
	}
	return m.FormatVersion != nil && m.ToolVersion != nil && len(m.Files) > 0
}

// realPath is p made absolute with its symlinks resolved; a part that does not
// exist yet is kept as written.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if filepath.Dir(dir) == dir {
			return abs, nil
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// within reports whether path is dir or inside it (both clean and absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// writeTreeAtomic replaces dir with exactly the files fill puts (put may be called
// from several goroutines at once): they are written into a new directory beside
// dir, which is then renamed into place (the old tree is renamed aside first and
// removed last). A failure before the swap leaves dir as it was.
func writeTreeAtomic(dir string, fill func(put func(name string, data []byte) error) error) error {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	var made sync.Map // directories created so far
	err = fill(func(name string, data []byte) error {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("refusing to write %q: not a path inside %s", name, dir)
		}
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if d := filepath.Dir(p); d != tmp {
			if _, done := made.Load(d); !done {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				made.Store(d, true)
			}
		}
		return os.WriteFile(p, data, 0o644)
	})
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	var old string
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		old = filepath.Join(parent, "."+base+".old-"+filepath.Base(tmp)[len(base)+6:])
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return err
	}
	ok = true
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
