package server

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/notify"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/runs"
)

// Notifications (serve --notify-config, docs/notifications.md): after each
// reconcile the server tells its notifier of each cluster whose status
// changed (held, synced at a new serial, awaiting approval of a new plan);
// the deployment runs tell it when one starts and ends, and when a node
// failed. Only the serve that reconciles a cluster tells of it: a follower
// tells nothing, a shard only of the clusters it owns.

// notifications is a server's notifier and what it told of each cluster.
type notifications struct {
	n  *notify.Notifier
	mu sync.Mutex
	// told is each cluster's event key as last seen (clusterEvent); nil
	// before the first reconcile.
	told map[string]string
}

// EnableNotifications makes the server send its events to n. Call after
// New, before the loop runs; n runs on its own (notify.Notifier.Run).
func (s *Server) EnableNotifications(n *notify.Notifier) {
	s.notes = &notifications{n: n}
	n.Counted = s.metrics.Notified
	reconciled := s.Loop.OnReconcile
	s.Loop.OnReconcile = func(o operation.Outcome, d time.Duration) {
		if reconciled != nil {
			reconciled(o, d)
		}
		s.notifyClusters()
	}
}

// notify sends e, when the server has a notifier.
func (s *Server) notify(e notify.Event) {
	if s.notes != nil {
		s.notes.n.Notify(e)
	}
}

// clusterEvent is the event a cluster's status line calls for ("" for
// none: out_of_sync, suspended) and its key: while the key stays the same,
// nothing is sent again. Synced is told once per serial at which the
// cluster's artifacts changed, held once per set of problems, awaiting
// approval once per plan.
func clusterEvent(c *operation.ClusterInfo) (typ, key, msg string) {
	switch c.Status {
	case "synced":
		return notify.ClusterSynced, fmt.Sprintf("synced %d", c.Serial),
			fmt.Sprintf("revision %s applied (serial %d)", short(c.AppliedRevision), c.Serial)
	case "held":
		msg = "held"
		if len(c.Problems) > 0 {
			msg += ": " + c.Problems[0]
		}
		if len(c.Problems) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(c.Problems)-1)
		}
		return notify.ClusterHeld, "held " + strings.Join(c.Problems, "\n"), msg
	case "awaiting_approval":
		key, msg = "awaiting", "a plan awaits approval"
		if p := c.Pending; p != nil {
			key += " " + p.Digest
			msg = fmt.Sprintf("the plan of revision %s awaits approval: %d nodes to deploy, %d to provision, %d to delete",
				short(p.Revision), p.Summary.Deploy, p.Summary.Provision, p.Summary.Delete)
		}
		return notify.ClusterAwaitingApproval, key, msg
	}
	return "", c.Status, ""
}

// short is a revision's first 12 characters.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// notifyClusters tells of each cluster whose status changed since the last
// reconcile. At the first, a cluster found synced is not told of (a restart
// says nothing new), one held or awaiting approval is.
func (s *Server) notifyClusters() {
	if s.notes == nil {
		return
	}
	owns := func(string) bool { return true }
	if s.Replica != nil {
		switch s.Replica.Role() {
		case controller.RoleLeader:
		case controller.RoleShard:
			_, mine := s.Replica.Shards()
			owns = func(c string) bool { return slices.Contains(mine, c) }
		default:
			return
		}
	}
	st, err := s.applied()
	if err != nil {
		return
	}
	infos := s.Loop.Clusters(st)
	nt := s.notes
	nt.mu.Lock()
	defer nt.mu.Unlock()
	first := nt.told == nil
	told := map[string]string{}
	for i := range infos {
		c := &infos[i]
		if !owns(c.Name) {
			continue
		}
		typ, key, msg := clusterEvent(c)
		told[c.Name] = key
		if prev, ok := nt.told[c.Name]; (ok && prev == key) || typ == "" || (first && typ == notify.ClusterSynced) {
			continue
		}
		rev := c.AppliedRevision
		if typ != notify.ClusterSynced {
			rev = c.HeadRevision
		}
		nt.n.Notify(notify.Event{Type: typ, Cluster: c.Name, Revision: rev, Serial: c.Serial, Message: msg,
			Path: "/clusters/" + url.PathEscape(c.Name)})
	}
	nt.told = told
}

// runEvent is the event of a run of h.
func runEvent(typ string, h *runs.Header, msg string) notify.Event {
	return notify.Event{Type: typ, Cluster: h.Cluster, Run: h.ID, Revision: h.Revision, Serial: h.Serial, Message: msg,
		Path: "/clusters/" + url.PathEscape(h.Cluster) + "/runs/" + url.PathEscape(h.ID)}
}

// runStarted tells that run h started.
func (s *Server) runStarted(h *runs.Header) {
	msg := fmt.Sprintf("run %s started: graph %s of revision %s (serial %d), trigger %s", h.ID, h.Graph, short(h.Revision), h.Serial, h.Trigger)
	s.notify(runEvent(notify.RunStarted, h, msg))
}

// runEnded tells that run h ended, by its verdict: failed (a critical node
// failed), stopped (an operator stopped it), or succeeded (a group's fault
// tolerance may have stopped it: its reason says so); the message counts
// its tasks by status.
func (s *Server) runEnded(h *runs.Header, sum *runs.Summary) {
	what := runs.Verdict(sum)
	typ := map[string]string{api.RunFailed: notify.RunFailed, api.RunStopped: notify.RunStopped}[what]
	if typ == "" {
		typ = notify.RunSucceeded
	}
	msg := fmt.Sprintf("run %s %s", h.ID, what)
	if sum.Reason != "" {
		msg += ": " + sum.Reason
	}
	if len(sum.FailedNodes) > 0 {
		msg += "; failed nodes: " + strings.Join(sum.FailedNodes, ", ")
	}
	var counts []string
	for _, st := range slices.Sorted(maps.Keys(sum.Counts)) {
		counts = append(counts, fmt.Sprintf("%d %s", sum.Counts[st], st))
	}
	if len(counts) > 0 {
		msg += "; tasks: " + strings.Join(counts, ", ")
	}
	s.notify(runEvent(typ, h, msg))
}

// nodeFailed tells that node failed in run h, first saying its first
// failed task.
func (s *Server) nodeFailed(h *runs.Header, node, first string) {
	e := runEvent(notify.NodeFailed, h, fmt.Sprintf("node %s failed in run %s", node, h.ID))
	if first != "" {
		e.Message += ": " + cut(first, 1000)
	}
	e.Node = node
	s.notify(e)
}
