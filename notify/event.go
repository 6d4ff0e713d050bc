// Package notify sends serve's events (a cluster held, synced or awaiting
// approval; a deployment run started, succeeded, failed or stopped; a node
// failed) to the providers of a --notify-config file, as Flux's
// notification-controller does: a generic webhook (JSON, signed with
// HMAC-SHA256), a Slack-compatible incoming webhook, and a command. Each
// provider filters by cluster, event type and severity, has a bounded queue
// of its own (a slow provider holds back no other, and never serve), and
// retries with backoff. No URL, secret or command output is logged: a Slack
// webhook's URL is its credential.
package notify

import (
	"time"
)

// Event types.
const (
	ClusterHeld             = "cluster.held"
	ClusterSynced           = "cluster.synced"
	ClusterAwaitingApproval = "cluster.awaiting_approval"
	RunStarted              = "run.started"
	RunSucceeded            = "run.succeeded"
	RunFailed               = "run.failed"
	RunStopped              = "run.stopped"
	NodeFailed              = "node.failed"
)

// Types lists the event types, in the order the documentation gives them.
var Types = []string{ClusterHeld, ClusterSynced, ClusterAwaitingApproval, RunStarted, RunSucceeded, RunFailed, RunStopped, NodeFailed}

// Severities: an event is info or error.
const (
	Info  = "info"
	Error = "error"
)

// SeverityOf is the severity of an event type: error for a cluster held, a
// run that failed or stopped and a node that failed; info for the rest.
func SeverityOf(typ string) string {
	switch typ {
	case ClusterHeld, RunFailed, RunStopped, NodeFailed:
		return Error
	}
	return Info
}

// Event is what is sent: the generic webhook's JSON body, the command's
// stdin.
type Event struct {
	// Source is always "fuelsync"; ID is the delivery's id, the same for
	// each attempt (X-Fuelsync-Delivery).
	Source   string `json:"source"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Severity string `json:"severity"`
	Cluster  string `json:"cluster"`
	// Run and Node name the run and the node, for the events of runs.
	Run  string `json:"run,omitempty"`
	Node string `json:"node,omitempty"`
	// Revision and Serial are the cluster's applied revision and serial, or
	// the run's.
	Revision string `json:"revision,omitempty"`
	Serial   int64  `json:"serial,omitempty"`
	// Message says what happened in one line (repository text escaped).
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	// URL is the page of the cluster or run, when the configuration gives
	// base_url (Path is that page's path on serve).
	URL  string `json:"url,omitempty"`
	Path string `json:"-"`
}
