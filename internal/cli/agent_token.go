package cli

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
)

func agentTokenCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "agent-token",
		Usage:        "print a node's token, which its agent reports with (serve --agent-secret-file)",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "A node's agent reports to serve (POST /api/v1/clusters/<cluster>/nodes/<node>/reports) with\n" +
			"its own token: the HMAC-SHA256 of its cluster and node names under the secret of serve's\n" +
			"--agent-secret-file. agent-token prints it, from the same secret file, for the agent's\n" +
			"--token-file. A token lets its node report for itself only (another node's token: 403), and\n" +
			"read its own graphs when serve has --api-token-file. The secret never leaves the server:\n" +
			"run agent-token where it is, and install each token on its node only.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cluster", Required: true, Usage: "the node's cluster `C`"},
			&cli.StringFlag{Name: "node", Required: true, Usage: "the node `N`"},
			&cli.StringFlag{Name: "agent-secret-file", Required: true, Usage: "serve's agent secret, in `FILE` (not empty)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("agent-token takes no arguments (got %q)", c.Args().First())}
			}
			cluster, node := c.String("cluster"), c.String("node")
			for _, n := range [][2]string{{"--cluster", cluster}, {"--node", node}} {
				if !loader.IsName(n[1]) {
					return &exitError{code: 1, msg: fmt.Sprintf("%s %q is not a name: %s", n[0], n[1], nameRuleText)}
				}
			}
			secret, err := readAgentSecret(c.String("agent-secret-file"))
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, reports.Token(secret, cluster, node))
			return nil
		},
	}
}

// nameRuleText is the rule of cluster and node names, for messages.
var nameRuleText = fmt.Sprintf("names start with a lowercase letter or digit and continue with lowercase letters, digits, '.', '_' or '-' (%s), at most %d characters", loader.NamePattern, loader.MaxNameLength)

// readAgentSecret reads serve's agent secret from file, trimmed; an empty one
// is refused, since every token would be derived from nothing.
func readAgentSecret(file string) ([]byte, error) {
	return readCredential(file, "the agent secret file %[1]s is empty: the nodes' tokens would be derived from nothing; write a secret into it (for example: openssl rand -hex 32 > %[1]s)")
}
