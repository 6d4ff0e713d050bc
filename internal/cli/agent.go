package cli

import (
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/agent"
)

// agentCommand is fuelsync agent: the node agent of package agent (the same
// as the fuelsync-agent binary), its flags parsed there.
func agentCommand(stdout, stderr io.Writer) *cli.Command {
	usage, rest, _ := strings.Cut(agent.Usage, "\n\n")
	desc := strings.TrimSuffix(rest, "\n\nflags:\n") + "\n\nFLAGS (parsed by the agent itself, one dash or two):\n" + strings.TrimRight(agent.FlagsHelp(), "\n")
	return &cli.Command{
		Name:            "agent",
		Usage:           "a node's agent: take the node's next task of its cluster's deployment run from serve, run it, report it",
		UsageText:       strings.TrimPrefix(usage, "usage: "),
		Description:     desc,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			for _, a := range args {
				if a == "-h" || a == "--help" || a == "-help" {
					return cli.ShowCommandHelp(c.Lineage()[1], "agent")
				}
			}
			if code := agent.Main(args, stdout, stderr); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}
