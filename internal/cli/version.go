package cli

import (
	"fmt"
	"io"
	"runtime"

	"github.com/urfave/cli/v2"
)

func versionCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "version",
		Description:  "Prints the version fuelsync was built as, its commit and the Go version (--version too).",
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
	if g.format == "json" {
		return writeJSON(g.stdout, map[string]any{"format_version": formatVersion, "version": version, "commit": commit, "go": runtime.Version()})
	}
	_, err := fmt.Fprintf(g.stdout, "fuelsync %s\ncommit: %s\ngo: %s\n", version, commit, runtime.Version())
	return err
}
