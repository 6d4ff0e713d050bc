package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

func versionCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name: "version",
		Description: "Prints the version fuelsync was built as, its commit and the Go version (--version too).\n" +
			"A build without -ldflags (go install) takes them from what Go recorded: the module\n" +
			"version, and the commit with \"(modified)\" when the tree had uncommitted changes.",
		Usage:        "print the version, commit and Go version",
		OnUsageError: usageError,
		Flags:        []cli.Flag{formatFlag()},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: "version takes no arguments"}
			}
			return printVersion(g)
		},
	}
}

// writeVersion is fuelsync --version: the version command.
func writeVersion(c *cli.Context, stdout, stderr io.Writer) error {
	g, err := readGlobals(c, stdout, stderr)
	if err != nil {
		return err
	}
	return printVersion(g)
}

func printVersion(g *globals) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, map[string]any{"format_version": formatVersion, "program": program, "version": version, "commit": commit, "go": runtime.Version()})
	}
	_, err := fmt.Fprintf(g.stdout, "%s %s\ncommit: %s\ngo: %s\n", program, version, commit, runtime.Version())
	return err
}

// readBuildInfo is debug.ReadBuildInfo's, or nil.
func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// buildIdentity returns the version and commit of the build: those given with
// -ldflags (ldVersion, ldCommit), else what Go recorded in bi: the main
// module's version (v1.2.3 from go install ...@v1.2.3; a pseudo-version, with
// +dirty for a modified tree, from a clone since Go 1.24) and vcs.revision,
// followed by " (modified)" when vcs.modified is true. What is known by
// neither stays "dev" and "unknown".
func buildIdentity(ldVersion, ldCommit string, bi *debug.BuildInfo) (string, string) {
	v, c := "dev", "unknown"
	if bi != nil {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v = mv
		}
		var rev string
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			c = rev
			if modified {
				c += " (modified)"
			}
		}
	}
	if ldVersion != "" {
		v = ldVersion
	}
	if ldCommit != "" {
		c = ldCommit
	}
	return v, c
}
