// Package api is serve's deployment API as data and one small client: the
// wire types of runs and of the agents' tasks, and Client, which the agent
// and the CLI use to speak to serve. It imports nothing else of fuelsync, so
// that the agent links none of the loader, render, diff or git.
package api

import (
	"encoding/json"
	"time"
)

// Assignment is a task given to a node's agent: the answer to
// GET /api/v1/clusters/<c>/nodes/<n>/tasks/next.
type Assignment struct {
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// Run is the run's id in its cluster; Graph and Serial what it deploys.
	Run    string `json:"run"`
	Graph  string `json:"graph"`
	Serial int64  `json:"serial"`
	// Attempt numbers the task's dispatches in the run: the report names it.
	Attempt int32 `json:"attempt"`
	// Noop: run puppet with --noop, and nothing else.
	Noop bool `json:"noop,omitempty"`
	// HeartbeatSeconds is how often the agent says, while the task runs,
	// that it still does (a report with status running): serve fails a task
	// whose agent was silent for three times as long.
	HeartbeatSeconds int  `json:"heartbeat_seconds"`
	Task             Task `json:"task"`
}

// Task is a task as rendered: its entry of the node's expanded view.
type Task struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Task report statuses: running is a heartbeat.
const (
	TaskRunning   = "running"
	TaskSucceeded = "succeeded"
	TaskFailed    = "failed"
	TaskSkipped   = "skipped"
)

// TaskReport is how a dispatched task went: POST
// /api/v1/clusters/<c>/nodes/<n>/runs/<run>/tasks, with the node's token.
type TaskReport struct {
	Task    string `json:"task"`
	Attempt int32  `json:"attempt"`
	// Status is running (a heartbeat), succeeded, failed or skipped.
	Status     string     `json:"status"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Message says why, in one line (at most MaxMessage bytes).
	Message string `json:"message,omitempty"`
	// Output is the end of the task's output (at most MaxOutput bytes).
	Output string `json:"output,omitempty"`
	// Next asks for the node's next task in the answer, when one may start
	// at once (ReportAnswer.Next): an agent that goes on asks, one that
	// stops does not.
	Next bool `json:"next,omitempty"`
}

// ReportAnswer is serve's answer to a report: with the end of a task, the
// node's next task when one may start at once (the agent runs it without
// asking: one request a task instead of two).
type ReportAnswer struct {
	Cluster string      `json:"cluster"`
	Node    string      `json:"node"`
	Run     string      `json:"run"`
	Task    string      `json:"task"`
	Status  string      `json:"status"`
	Next    *Assignment `json:"next,omitempty"`
}

// Bounds of a TaskReport.
const (
	MaxMessage = 1024
	MaxOutput  = 16 << 10
	// MaxReportBody bounds a report's body.
	MaxReportBody = 64 << 10
)

// StartRun asks for a run: POST /api/v1/clusters/<c>/runs.
type StartRun struct {
	// Graph is the graph type deployed (default when empty).
	Graph string `json:"graph,omitempty"`
	// Nodes limit the run to these nodes (all when empty).
	Nodes []string `json:"nodes,omitempty"`
	Noop  bool     `json:"noop,omitempty"`
	// MaxNodes bounds the nodes busy at once (serve's default when 0).
	MaxNodes int `json:"max_nodes,omitempty"`
}

// RetryRun asks to run again what did not succeed in a cluster's last run:
// POST /api/v1/clusters/<c>/runs/retry.
type RetryRun struct {
	Nodes []string `json:"nodes,omitempty"`
}

// Run statuses.
const (
	RunRunning   = "running"
	RunStopping  = "stopping"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	// RunStopped: stopped by an operator (deploy stop, the API) before it
	// finished, with no critical node failed.
	RunStopped = "stopped"
)

// Run is a deployment run: GET /api/v1/clusters/<c>/runs (newest first,
// without Nodes) and /runs/<id> (with them).
type Run struct {
	Cluster  string   `json:"cluster"`
	ID       string   `json:"id"`
	Graph    string   `json:"graph"`
	Serial   int64    `json:"serial"`
	Revision string   `json:"revision,omitempty"`
	Noop     bool     `json:"noop,omitempty"`
	Only     []string `json:"only_nodes,omitempty"`
	RetryOf  string   `json:"retry_of,omitempty"`
	Trigger  string   `json:"trigger"`
	// Status is running, stopping, succeeded, failed or stopped; Reason why it
	// stopped, when it did.
	Status  string     `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	Created time.Time  `json:"created"`
	Ended   *time.Time `json:"ended,omitempty"`
	// Counts are the run's tasks by status (pending, running, succeeded,
	// failed, dep_failed, skipped).
	Counts      map[string]int `json:"counts"`
	FailedNodes []string       `json:"failed_nodes,omitempty"`
	// Running are the tasks running now, "task@node" (at most
	// MaxRunningListed of them).
	Running []string  `json:"running,omitempty"`
	Nodes   []RunNode `json:"nodes,omitempty"`
}

// MaxRunningListed bounds Run.Running.
const MaxRunningListed = 50

// Which tasks GET …/runs/<id>?tasks= lists under its nodes.
const (
	TasksAll    = "all"    // every task (the default)
	TasksFailed = "failed" // the failed ones (their nodes only)
	TasksNone   = "none"   // no node: the run's summary
)

// RunNode is a node of a run.
type RunNode struct {
	Name string `json:"name"`
	// Status: pending, running, succeeded, failed, or skipped (no task of
	// it in the run).
	Status   string    `json:"status"`
	Critical bool      `json:"critical,omitempty"`
	Tasks    []RunTask `json:"tasks"`
}

// RunTask is a task of a node in a run.
type RunTask struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Outside bool       `json:"outside,omitempty"`
	Attempt int32      `json:"attempt,omitempty"`
	Start   *time.Time `json:"started_at,omitempty"`
	End     *time.Time `json:"finished_at,omitempty"`
	Message string     `json:"message,omitempty"`
	// Requires are the task's requirements, "task@node".
	Requires []string `json:"requires,omitempty"`
	// Output says serve keeps the task's output (GET …/runs/<id>/output?node=&task=).
	Output bool `json:"output,omitempty"`
}

// Approval asks serve to apply the plan of a cluster awaiting approval:
// POST /api/v1/clusters/<c>/approve. Revision pins the plan reviewed (a
// commit, 7 hex digits or more of it, or the plan's artifacts digest); a
// request without it (no body) approves whichever plan awaits.
type Approval struct {
	Revision string `json:"revision"`
}

// Approved is serve's answer to an approval: the plan it approved, which it
// applies at its next reconcile. Its fields are in the order serve writes
// them.
type Approved struct {
	Approved bool   `json:"approved"`
	Cluster  string `json:"cluster"`
	// Digest is the approved plan's artifacts digest, Revision its commit.
	Digest   string `json:"digest"`
	Revision string `json:"revision"`
	// Summary is the plan's summary as serve wrote it: diff's Summary, which
	// this package does not import (the agent links nothing of the render).
	Summary json.RawMessage `json:"summary"`
}
