package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// The command line's arguments parsed into typed values, in one place each,
// as Terraform's internal/command/arguments: a command's action reads the
// value, never the flag's text again.

// outputFormat is the value of --format: which view of its result a command
// prints. It is parsed once, before the command's action runs (checkFormat,
// with the formats of the command's help table entry), so that an action
// only chooses its view.
type outputFormat string

// The output formats. Each command prints some of them (helpTable's
// formats), text the default.
const (
	formatText     outputFormat = "text"
	formatJSON     outputFormat = "json"
	formatMarkdown outputFormat = "markdown"
	formatGitHub   outputFormat = "github"
)

// parseOutputFormat parses value, the --format of command path, which prints
// formats; any other value is refused, saying which it prints (with the exit
// code of a usage error of the command in ctx).
func parseOutputFormat(ctx *cli.Context, path, value string, formats []string) (outputFormat, error) {
	if slices.Contains(formats, value) {
		return outputFormat(value), nil
	}
	list := strings.Join(formats, ", ")
	if n := len(formats); n > 1 {
		list = strings.Join(formats[:n-1], ", ") + " or " + formats[n-1]
	}
	msg := fmt.Sprintf("%s prints %s, not %q", path, list, value)
	switch path {
	case "watch", "serve":
		msg += "; its log is text or json with --log-format"
	}
	return "", &exitError{code: usageCode(ctx), msg: msg}
}

// checkFormat refuses a --format (given before or after the command) that the
// command path does not print.
func checkFormat(path string, formats []string) cli.BeforeFunc {
	return func(ctx *cli.Context) error {
		if helpAsked(ctx) {
			return nil
		}
		_, err := parseOutputFormat(ctx, path, globalString(ctx, "format"), formats)
		return err
	}
}

// commandFormat is the command's --format when given, else the global one:
// checkFormat refused any other than those the command prints.
func commandFormat(c *cli.Context) outputFormat {
	return outputFormat(globalString(c, "format"))
}

// scopeArgs are --cluster C and --release R of the commands that list or
// edit the tags or roles of a cluster or of a release: one of them exactly.
type scopeArgs struct {
	cluster, release string
}

// parseScope reads --cluster and --release of command (its path after
// fuelsync), refusing both or neither.
func parseScope(c *cli.Context, command string) (scopeArgs, error) {
	s := scopeArgs{cluster: c.String("cluster"), release: c.String("release")}
	if (s.cluster == "") == (s.release == "") {
		return s, &exitError{code: 1, msg: command + " needs --cluster C or --release R (one of them)"}
	}
	return s, nil
}
