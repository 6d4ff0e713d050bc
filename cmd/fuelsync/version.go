package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/urfave/cli/v2"
)

func versionCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "version",
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
			if g.format == "json" {
				return writeJSON(stdout, map[string]any{"format_version": formatVersion, "version": version, "commit": commit, "go": runtime.Version()})
			}
			fmt.Fprintf(stdout, "fuelsync %s\ncommit: %s\ngo: %s\n", version, commit, runtime.Version())
			return nil
		},
	}
}
