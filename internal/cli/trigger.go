package cli

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
)

func triggerCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "trigger",
		Usage:        "ask a running fuelsync serve to reconcile now (a signed generic webhook)",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "POSTs a delivery to <url>/hooks/generic signed with the secret of --webhook-secret-file\n" +
			"(X-Fuelsync-Timestamp: <Unix seconds>, X-Fuelsync-Signature: sha256=<hmac of timestamp.body>;\n" +
			"serve refuses a timestamp more than 5 minutes off its clock). examples/hooks/post-receive\n" +
			"runs it after every push.\n" +
			"Exit status 0 when serve accepted it, 1 otherwise.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Value: "http://127.0.0.1:8080", Usage: "serve's base `URL`"},
			&cli.StringFlag{Name: "webhook-secret-file", Required: true, Usage: "the shared secret, in `FILE`"},
			&cli.StringFlag{Name: "ref", Usage: "the pushed `REF` (informational)"},
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			secret, err := readSecret(c.String("webhook-secret-file"))
			if err != nil {
				return err
			}
			u, err := serveURL("--url", c.String("url"))
			if err != nil {
				return err
			}
			d, err := (&api.Client{Base: u}).Trigger(c.Context, secret, c.String("ref"))
			if err != nil {
				return &exitError{code: 1, msg: redact.Text(err.Error())}
			}
			if g.format == formatJSON {
				if err := writeJSON(stdout, map[string]any{"format_version": formatVersion, "accepted": d.Accepted(),
					"status": d.Code, "response": d.Response, "delivery": d.ID}); err != nil {
					return err
				}
				if !d.Accepted() {
					return exitCode(1)
				}
				return nil
			}
			if !d.Accepted() {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %s", d.Status, d.Response)}
			}
			if !g.quiet {
				fmt.Fprintf(stdout, "%s: %s\n", d.Status, d.Response)
			}
			return nil
		},
	}
}
