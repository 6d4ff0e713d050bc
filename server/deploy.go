package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/state"
)

// Deployments: serve starts a run after each apply that changes a cluster
// whose policy is deploy: auto (the default when serve takes agents), and
// records each node's part of a run as the node's report, so that health
// and history show deployments as they show agents' reports.

// EnableRuns makes this server coordinate deployments with c: the runs API,
// the agents' tasks, automatic runs and the nodes' reports. Call before
// Handler; Resume the coordinator with ResumeRuns.
func (s *Server) EnableRuns(c *runs.Coordinator) {
	s.Runs = c
	c.OnNodeDone = s.nodeRan
	c.OnStart = s.runStarted
	c.OnEnd = func(h *runs.Header, sum *runs.Summary) {
		s.Loop.Log.Info("deployment run ended", "cluster", h.Cluster, "run", h.ID, "failed", sum.Failed, "reason", sum.Reason)
		s.runEnded(h, sum)
		go s.autoDeploy(context.Background())
	}
	s.autoKick = make(chan struct{}, 1)
}

// ResumeRuns resumes the runs that had not ended, then starts the runs due,
// and keeps starting them after each apply until ctx ends. A replica does so
// while it leads (followLeadership).
func (s *Server) ResumeRuns(ctx context.Context) error {
	if s.Replica == nil {
		if err := s.Runs.Resume(ctx); err != nil {
			return err
		}
	} else {
		go s.followLeadership(ctx)
	}
	go func() {
		for {
			s.autoDeploy(ctx)
			select {
			case <-s.autoKick:
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

// followLeadership coordinates the runs while this replica leads: it
// resumes them from the state backend when it becomes the leader, and lets
// them go when it no longer is.
func (s *Server) followLeadership(ctx context.Context) {
	var cancel context.CancelFunc
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		leads := s.Replica.Role() == controller.RoleLeader
		switch {
		case leads && cancel == nil:
			var cctx context.Context
			cctx, cancel = context.WithCancel(ctx)
			if err := s.Runs.Resume(cctx); err != nil {
				s.Loop.Log.Error("resuming the deployment runs", "error", redact.Text(err.Error()))
			}
			s.kickAutoDeploy()
		case !leads && cancel != nil:
			cancel()
			s.Runs.Pause()
			cancel = nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			if cancel != nil {
				cancel()
			}
			return
		}
	}
}

// kickAutoDeploy asks for the runs due to be started (after an apply).
func (s *Server) kickAutoDeploy() {
	if s.autoKick == nil {
		return
	}
	select {
	case s.autoKick <- struct{}{}:
	default:
	}
}

// autoDeploy starts a run of each cluster with deploy: auto whose applied
// artifacts changed since its last run, on the nodes not converged.
func (s *Server) autoDeploy(ctx context.Context) {
	s.autoMu.Lock()
	defer s.autoMu.Unlock()
	if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
		return
	}
	st, err := s.applied()
	if err != nil || st.Serial == 0 {
		return
	}
	repo, rev := s.Loop.Model()
	if repo == nil {
		return
	}
	defer s.autoDone.Store(autoPass{st.Serial, rev})
	for _, cluster := range slices.Sorted(maps.Keys(st.Clusters)) {
		c := repo.Cluster(cluster)
		if c == nil || repo.DeployPolicy(c, "auto") != "auto" || s.Runs.Busy(cluster) {
			continue
		}
		list, err := s.Runs.Runs(ctx, cluster)
		if err != nil {
			s.Loop.Log.Warn("reading a cluster's runs", "cluster", cluster, "error", redact.Text(err.Error()))
			continue
		}
		last := controller.LastRun{}
		if len(list) > 0 {
			last = controller.LastRun{Serial: list[0].Serial, Exists: true}
		}
		nodes, due := controller.DeployTargets(st, cluster, "default", s.Loop.Reports, last)
		if !due {
			continue
		}
		if _, _, err := s.start(ctx, cluster, api.StartRun{Graph: "default", Nodes: nodes}, "apply"); err != nil {
			s.Loop.Log.Warn("starting a deployment run after an apply", "cluster", cluster, "error", redact.Text(err.Error()))
		}
	}
}

// nodeRan records node's part of run h as the node's report.
func (s *Server) nodeRan(h *runs.Header, node string, failed bool, tasks []api.RunTask) {
	rep := &reports.Report{Cluster: h.Cluster, Node: node, Graph: h.Graph, Status: reports.Success,
		Serial: h.Serial, Revision: h.Revision, ReceivedAt: time.Now().UTC()}
	if failed {
		rep.Status = reports.Failed
	}
	var first string
	for _, t := range tasks {
		rt := reports.Task{ID: t.ID, StartedAt: t.Start, FinishedAt: t.End, Message: cut(t.Message, 1024)}
		switch t.Status {
		case api.TaskSucceeded:
			rt.Status = reports.Success
		case api.TaskSkipped:
			rt.Status = reports.Skipped
		default:
			rt.Status = reports.Failed
			if first == "" {
				first = t.ID + ": " + t.Message
			}
		}
		if t.Start != nil && (rep.StartedAt.IsZero() || t.Start.Before(rep.StartedAt)) {
			rep.StartedAt = *t.Start
		}
		if t.End != nil && (rep.FinishedAt == nil || t.End.After(*rep.FinishedAt)) {
			rep.FinishedAt = t.End
		}
		if len(rep.Tasks) < reports.MaxTasks {
			rep.Tasks = append(rep.Tasks, rt)
		}
	}
	if failed {
		s.nodeFailed(h, node, first)
	}
	if rep.StartedAt.IsZero() {
		rep.StartedAt = h.Created
	}
	if rep.FinishedAt == nil {
		rep.FinishedAt = &rep.StartedAt
	}
	rep.Message = fmt.Sprintf("deployment run %s", h.ID)
	if first != "" {
		rep.Message += ": " + cut(first, 1000)
	}
	if set, err := s.stateAt(h.Serial); err == nil {
		name := render.NodeAddress(h.Cluster, node, h.Graph).String()
		rep.View, _ = viewDigest(set.Artifacts, name)
		rep.GraphDigest = s.Loop.Reports.GraphDigest(set, name)
	}
	if err := s.Loop.Reports.Put(context.Background(), rep); err != nil {
		s.Loop.Log.Warn("recording a node's deployment", "cluster", h.Cluster, "node", node, "run", h.ID, "error", redact.Text(err.Error()))
	}
}

// stateAt is the state of applied set serial: the applied one or a kept one.
func (s *Server) stateAt(serial int64) (*state.State, error) {
	st, err := s.applied()
	if err == nil && st.Serial == serial {
		return st, nil
	}
	return s.keptState(serial)
}
