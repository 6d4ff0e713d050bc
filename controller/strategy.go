package controller

import (
	"context"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/state"
)

// A strategy is how a Loop reconciles as one of several replicas of a state
// on etcd: the elected leader's (leaderStrategy, replica.go: every cluster,
// while it leads) or a shard's (shardStrategy, shard.go: the clusters Assign
// gives it). The loop runs one runner, the same whatever the strategy; the
// strategy is asked around it. A Loop without one (watch, serve without etcd)
// reconciles every cluster alone.
type strategy interface {
	// begin is called first in each reconcile, and the end it returns last
	// (a shard holds its work directory's lock between the two).
	begin() (end func())
	// prepare runs under the operation's lock before each plan, with the
	// applied state (operation.Operation.Prepare): a replica makes the
	// applied set it lacks.
	prepare(ctx context.Context, st *state.State) error
	// leading is asked before each step that writes
	// (operation.Operation.Leading): an error stops the operation there.
	leading() error
	// clusters are the status lines of the applied state st, given the
	// loop's last results (live) and the newest commit seen (head).
	clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo
}

// An owner is a strategy that reconciles only some of the clusters: owns is
// each reconcile's operation.Request.Owns (the loop asks every reconcile,
// not an approval, which names its cluster).
type owner interface {
	owns(clusters []string) []string
}

// use gives the loop its strategy; call it before the loop runs (or before a
// server reads its clusters).
func (l *Loop) use(s strategy) {
	l.mu.Lock()
	l.strategy = s
	l.mu.Unlock()
}

// currentStrategy is the loop's strategy (nil: none).
func (l *Loop) currentStrategy() strategy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.strategy
}
