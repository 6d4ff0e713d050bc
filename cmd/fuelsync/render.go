package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

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
			"artifacts (SPEC §6) to DIR: manifest.json, <cluster>/cluster.yaml,\n" +
			"<cluster>/nodes/<node>/<graph>.yaml and <cluster>/graphs/<graph>.dot. The directory is\n" +
			"replaced as a whole (written aside, then renamed), and only when there is no error.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Value: "rendered", Usage: "write the artifacts to `DIR`"},
			&cli.StringSliceFlag{Name: "cluster", Usage: "render only cluster `C` (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("render takes no arguments (got %q); use --out DIR", c.Args().First())}
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
			writeDiagnosticsText(stderr, diags, repo.Sources.Files(), src.prefix, g.useColor(stderr))
			if diags.HasErrors() {
				nerr, _ := loader.Counts(diags)
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %s; nothing written", src.label, plural(nerr, "error"))}
			}
			files, err := render.Files(rendered, src.revision, version)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			out := c.String("out")
			if err := writeTreeAtomic(out, files); err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			if !g.quiet {
				nodes := 0
				for _, r := range rendered {
					nodes += len(r.Model.Cluster.Nodes)
				}
				fmt.Fprintf(stdout, "%s: rendered %s with %s into %s (%s)\n", src.label,
					plural(len(rendered), "cluster"), plural(nodes, "node"), out, plural(len(files), "file"))
			}
			return nil
		},
	}
}

// writeTreeAtomic replaces dir with exactly files: it writes them into a new
// directory beside dir, then renames it into place (the old tree is renamed aside
// first and removed last). A failure before the swap leaves dir as it was.
func writeTreeAtomic(dir string, files map[string][]byte) error {
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
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(tmp, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
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
