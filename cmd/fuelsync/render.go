package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

func renderCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "render",
		Usage:        "write the per-node task graphs and the cluster summaries",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Validates the repository, resolves every task onto the nodes that run it and writes the\n" +
			"artifacts to DIR: manifest.json, <cluster>/cluster.yaml,\n" +
			"<cluster>/nodes/<node>/<graph>.yaml and <cluster>/graphs/<graph>.dot. The directory is\n" +
			"replaced as a whole (written aside, then renamed), and only when there is no error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "rendered", Usage: "write the artifacts to `DIR`"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "render only cluster `C` (repeatable)"},
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
			if g.format != "text" && g.format != "json" {
				return &exitError{code: 1, msg: fmt.Sprintf("render prints text or json, not %q", g.format)}
			}
			src, err := openSource(g)
			if err != nil {
				return err
			}
			repo, diags := loader.Load(src.fsys, loader.Options{})
			for _, name := range c.StringSlice("cluster") {
				if repo.Cluster(name) == nil && !diags.HasErrors() {
					return &exitError{code: 1, msg: fmt.Sprintf("no cluster %q; clusters: %s", name, clusterNames(repo))}
				}
			}
			rendered, more := render.Render(repo, render.Options{Clusters: c.StringSlice("cluster")})
			diags = loader.SortDiagnostics(append(diags, more...))
			g.writeDiagnostics(stderr, diags, repo.Sources.Files(), src.prefix)
			if diags.HasErrors() {
				nerr, _ := loader.Counts(diags)
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %s; nothing written", src.label, plural(nerr, "error"))}
			}
			out := c.String("out")
			var nfiles, nbytes atomic.Int64
			var manifest [sha256.Size]byte
			err = writeTreeAtomic(out, func(put func(name string, data []byte) error) error {
				return render.Stream(rendered, src.revision, version, func(name string, data []byte) error {
					nfiles.Add(1)
					nbytes.Add(int64(len(data)))
					if name == "manifest.json" {
						manifest = sha256.Sum256(data)
					}
					return put(name, data)
				})
			})
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			nodes := 0
			for _, r := range rendered {
				nodes += len(r.Model.Cluster.Nodes)
			}
			if g.format == "json" {
				clusters := []string{}
				for _, r := range rendered {
					clusters = append(clusters, r.Model.Cluster.Name)
				}
				return writeJSON(stdout, renderSummary{formatVersion, src.revision, out, clusters, nodes,
					int(nfiles.Load()), nbytes.Load(), hex.EncodeToString(manifest[:])})
			}
			if !g.quiet {
				fmt.Fprintf(stdout, "%s: rendered %s with %s into %s (%s)\n", src.label,
					plural(len(rendered), "cluster"), plural(nodes, "node"), out, plural(int(nfiles.Load()), "file"))
			}
			return nil
		},
	}
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
