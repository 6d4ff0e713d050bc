package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/scaffold"
)

func pluginCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:            "plugin",
		Usage:           "create a plugin package, or check one on its own",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{
			pluginCreateCommand(stdout, stderr),
			pluginCheckCommand(stdout, stderr),
		},
	}
}

func pluginCreateCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "create",
		Usage:        "write a new plugin package: a role named after it, its volumes, a task group",
		ArgsUsage:    "NAME",
		OnUsageError: usageError,
		Description: "Writes <dir>/NAME (default <repo>/plugins/NAME): metadata.yaml, environment_config.yaml,\n" +
			"node_roles.yaml, volumes.yaml, deployment_tasks.yaml, components.yaml (with --component) and\n" +
			"node_tags.yaml (6.0.0); with --release, a release-as-a-plugin (5.0.0 or later) whose data is in\n" +
			"release/ and graphs/; with --format hcl, one plugin.hcl. The compatibility records name the\n" +
			"releases of the repository (--repo), or --for-release. An existing directory is never touched.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "package-version", Value: "6.0.0", Usage: "`VERSION`: 4.0.0, 5.0.0 or 6.0.0"},
			&cli.BoolFlag{Name: "release", Usage: "write a release-as-a-plugin package"},
			&cli.StringSliceFlag{Name: "role", Usage: "another role `ROLE` besides the one named after the plugin (repeatable)"},
			&cli.StringSliceFlag{Name: "component", Usage: "a component `NAME` the plugin offers, e.g. network:neutron:ml2:NAME (repeatable)"},
			&cli.StringFlag{Name: "format", Value: "yaml", Usage: "`FORMAT` of the files: yaml or hcl"},
			&cli.StringFlag{Name: "dir", Usage: "write into `DIR` (default: <repo>/plugins)"},
			&cli.StringSliceFlag{Name: "for-release", Usage: "extend the release `VERSION` (repeatable; default: every release of the repository)"},
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() != 1 {
				return &exitError{code: 1, msg: "plugin create takes one argument, the plugin's name"}
			}
			o := scaffold.Options{
				Name: c.Args().First(), PackageVersion: c.String("package-version"), Release: c.Bool("release"),
				Roles: c.StringSlice("role"), Components: c.StringSlice("component"), Format: c.String("format"),
			}
			if !o.Release {
				o.Releases = compatRecords(g, c.StringSlice("for-release"))
			}
			if problems := o.Check(); len(problems) > 0 {
				return &exitError{code: 1, msg: strings.Join(problems, "\n          ") + "\nnothing written"}
			}
			dir := c.String("dir")
			if dir == "" {
				dir = filepath.Join(g.repo, "plugins")
			}
			target := filepath.Join(dir, o.Name)
			files, err := writePlugin(o, target)
			if err != nil {
				return err
			}
			if !g.quiet {
				pluginCreatedView(stdout, o, target, files)
			}
			return nil
		},
	}
}

// writePlugin writes the package o into target, which must not exist, once
// it validates: nothing written otherwise. It returns the files written.
func writePlugin(o scaffold.Options, target string) (map[string][]byte, error) {
	if _, err := os.Lstat(target); err == nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("%s already exists; plugin create never overwrites: choose another name or --dir; nothing written", target)}
	}
	files, err := scaffold.Files(o)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	// Check the package before writing it.
	if diags, _ := scaffold.Check(o.Name, files); diags.HasErrors() {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("the generated plugin does not validate (a bug): %v; nothing written", diags.Errs())}
	}
	err = writeTreeAtomic(target, func(put func(string, []byte) error) error {
		for name, data := range files {
			if err := put(name, data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	return files, nil
}

// pluginCreatedView says what plugin create wrote, and how a cluster uses
// the plugin.
func pluginCreatedView(w io.Writer, o scaffold.Options, target string, files map[string][]byte) {
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasSuffix(name, ".gitkeep") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	fmt.Fprintf(w, "created plugin %s (package_version %s) in %s: %s\n", o.Name, o.PackageVersion, target, strings.Join(names, ", "))
	if o.Release {
		fmt.Fprintf(w, "clusters use its release with `release: %s` and give nodes the role %s\n", o.ReleaseVersion(), o.Name)
	} else {
		fmt.Fprintf(w, "enable it in a cluster with `plugins: [%s]` and give a node the role %s\n", o.Name, o.Name)
	}
}

// compatRecords are the releases a new plugin extends: those named, with the
// operating system of the repository's release of that version (ubuntu when the
// repository has none), or every release of the repository.
func compatRecords(g *globals, versions []string) []scaffold.Compat {
	var releases []*loader.Release
	if src, err := openSource(g); err == nil {
		repo, _ := loader.Load(src.fsys, loadOptions(nil))
		releases = repo.Releases
	}
	var out []scaffold.Compat
	if len(versions) == 0 {
		for _, r := range releases {
			out = append(out, scaffold.Compat{OS: strings.ToLower(r.OperatingSystem), Version: r.Version})
		}
		return out
	}
	for _, v := range versions {
		c := scaffold.Compat{OS: "ubuntu", Version: v}
		for _, r := range releases {
			if r.Version == v && r.OperatingSystem != "" {
				c.OS = strings.ToLower(r.OperatingSystem)
			}
		}
		out = append(out, c)
	}
	return out
}

func pluginCheckCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "check",
		Usage:        "validate one plugin package on its own, reporting every problem",
		ArgsUsage:    "DIR",
		OnUsageError: usageError,
		Description: "Loads the package in DIR as the only plugin of a repository and runs every check of\n" +
			"validate on it, and fuel-plugin-builder's checks that validate leaves out (the builder's\n" +
			"--check, but reporting all problems, each with its file and line; its warnings, such as a\n" +
			"task without roles/groups/role, are warnings and leave the exit status 0).",
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() != 1 {
				return &exitError{code: 1, msg: "plugin check takes one argument, the plugin's directory"}
			}
			dir := filepath.Clean(c.Args().First())
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				return &exitError{code: 1, msg: fmt.Sprintf("%s is a file; plugin check wants the plugin's directory (the one holding metadata.yaml), e.g. %s",
					dir, filepath.Dir(dir))}
			}
			files := map[string][]byte{}
			root := os.DirFS(dir)
			err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := fs.ReadFile(root, p)
				files[p] = data
				return err
			})
			if errors.Is(err, fs.ErrNotExist) {
				return &exitError{code: 1, msg: fmt.Sprintf("%s does not exist", dir)}
			}
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			diags, sources := scaffold.Check(path.Base(filepath.ToSlash(dir)), files)
			nerr, nwarn := loader.Counts(diags)
			if g.format == formatJSON { // validate's document
				if err := writeDiagnosticsJSON(stdout, diags, filepath.ToSlash(dir)+"/", nerr == 0); err != nil {
					return err
				}
				if nerr > 0 {
					return exitCode(1)
				}
				return nil
			}
			g.writeDiagnostics(stderr, diags, sources, filepath.ToSlash(dir)+"/")
			if nerr > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: invalid plugin package: %s, %s", dir, plural(nerr, "error"), plural(nwarn, "warning"))}
			}
			if !g.quiet {
				fmt.Fprintf(stdout, "%s: valid plugin package; %s\n", dir, plural(nwarn, "warning"))
			}
			return nil
		},
	}
}
