package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/server"
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
			body, _ := json.Marshal(map[string]string{"ref": c.String("ref")})
			stamp := strconv.FormatInt(time.Now().Unix(), 10)
			id := make([]byte, 8)
			_, _ = rand.Read(id)
			req, err := http.NewRequestWithContext(c.Context, http.MethodPost, strings.TrimRight(c.String("url"), "/")+"/hooks/generic", bytes.NewReader(body))
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Fuelsync-Timestamp", stamp)
			req.Header.Set("X-Fuelsync-Signature", server.SignGeneric(secret, stamp, body))
			req.Header.Set("X-Fuelsync-Delivery", hex.EncodeToString(id))
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			defer resp.Body.Close()
			text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			accepted := resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK
			if g.format == formatJSON {
				if err := writeJSON(stdout, map[string]any{"format_version": formatVersion, "accepted": accepted,
					"status": resp.StatusCode, "response": strings.TrimSpace(string(text)), "delivery": hex.EncodeToString(id)}); err != nil {
					return err
				}
				if !accepted {
					return exitCode(1)
				}
				return nil
			}
			if !accepted {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(text)))}
			}
			if !g.quiet {
				fmt.Fprintf(stdout, "%s: %s\n", resp.Status, strings.TrimSpace(string(text)))
			}
			return nil
		},
	}
}
