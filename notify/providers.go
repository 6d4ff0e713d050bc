package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// MaxResponse bounds what is read of a receiver's answer (the rest is left
// unread and the connection closed).
const MaxResponse = 64 << 10

// Headers of a webhook delivery.
const (
	HeaderEvent     = "X-Fuelsync-Event"
	HeaderDelivery  = "X-Fuelsync-Delivery"
	HeaderTimestamp = "X-Fuelsync-Timestamp"
	HeaderSignature = "X-Fuelsync-Signature"
)

// postWebhook posts e as JSON; signed when the provider has a secret.
func (n *Notifier) postWebhook(ctx context.Context, p *Provider, e *Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return &attemptError{err: err}
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEvent, e.Type)
	h.Set(HeaderDelivery, e.ID)
	if p.Secret != nil {
		// Each attempt is signed at its own time, within the receiver's
		// replay window however long the retries took.
		stamp := strconv.FormatInt(time.Now().Unix(), 10)
		h.Set(HeaderTimestamp, stamp)
		h.Set(HeaderSignature, api.Sign(p.Secret, stamp, body)) // as serve checks a generic delivery
	}
	return n.post(ctx, p, body, h)
}

// slackMessage is a Slack-compatible incoming webhook's message (Slack,
// Mattermost, Rocket.Chat).
type slackMessage struct {
	Channel  string `json:"channel,omitempty"`
	Username string `json:"username,omitempty"`
	Text     string `json:"text"`
}

// postSlack posts e as a Slack message of one line.
func (n *Notifier) postSlack(ctx context.Context, p *Provider, e *Event) error {
	body, err := json.Marshal(slackMessage{Channel: p.Channel, Username: p.Username, Text: SlackText(e)})
	if err != nil {
		return &attemptError{err: err}
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return n.post(ctx, p, body, h)
}

// SlackText is e as a Slack message: a mark for its severity, its type in
// bold, the cluster (and run, node), the message, and a link to its page.
// Slack's control characters (&, <, >) are escaped in what the event
// quotes.
func SlackText(e *Event) string {
	var b strings.Builder
	mark := ":white_check_mark:"
	if e.Severity == Error {
		mark = ":x:"
	} else if e.Type != ClusterSynced && e.Type != RunSucceeded {
		mark = ":information_source:"
	}
	fmt.Fprintf(&b, "%s *%s* cluster `%s`", mark, e.Type, slackEscape(e.Cluster))
	if e.Run != "" {
		fmt.Fprintf(&b, " run %s", slackEscape(e.Run))
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node `%s`", slackEscape(e.Node))
	}
	if e.Message != "" {
		b.WriteString(": " + slackEscape(e.Message))
	}
	if e.URL != "" {
		fmt.Fprintf(&b, " (<%s|open>)", slackEscape(e.URL))
	}
	return b.String()
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// post makes one POST of body to p.URL. Its errors never quote the URL (a
// Slack webhook's URL is its credential): a failed request says the cause
// only, an answer its status. 2xx is a delivery; 429 and 5xx, and a request
// that failed, are tried again (after the Retry-After asked); other answers
// are not.
func (n *Notifier) post(ctx context.Context, p *Provider, body []byte, h http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return &attemptError{err: errors.New("the provider's URL is not valid")}
	}
	req.Header = h
	req.Header.Set("User-Agent", n.UserAgent)
	resp, err := n.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", p.Timeout)
		}
		return &attemptError{err: err, retry: true}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponse))
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests || code >= 500:
		return &attemptError{err: fmt.Errorf("the receiver answered %d %s", code, http.StatusText(code)), retry: true,
			retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code >= 300 && code < 400:
		return &attemptError{err: fmt.Errorf("the receiver answered %d %s: a redirect is not followed", code, http.StatusText(code))}
	}
	return &attemptError{err: fmt.Errorf("the receiver answered %d %s", code, http.StatusText(code))}
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date), 0 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(min(s, int(MaxBackoff/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxBackoff)
	}
	return 0
}

// runCommand runs a command provider's program with e as JSON on its stdin
// and FUELSYNC_EVENT and FUELSYNC_CLUSTER in its environment; the attempt
// fails when it exits non-zero or outlives the provider's timeout (then it
// and its process group are killed). Its output is discarded: it is not
// logged.
func runCommand(ctx context.Context, p *Provider, e *Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return &attemptError{err: err}
	}
	cmd := exec.CommandContext(ctx, p.Argv[0], p.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Env = append(os.Environ(), "FUELSYNC_EVENT="+e.Type, "FUELSYNC_CLUSTER="+e.Cluster)
	cmd.WaitDelay = time.Second
	killGroup(cmd)
	err = cmd.Run()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &attemptError{err: fmt.Errorf("the command did not end within %s: killed", p.Timeout), retry: true}
	case errors.As(err, &xe):
		return &attemptError{err: fmt.Errorf("the command %s", xe.ProcessState), retry: true}
	}
	return &attemptError{err: fmt.Errorf("running the command: %w", err), retry: true}
}
