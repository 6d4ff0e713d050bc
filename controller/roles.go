package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/state"
)

// RoleConflictError says replicas of the other kind use the state: shards
// (serve --shard) where a replica without --shard would lead, or a leader
// where a shard would join. Both kinds apply the clusters (a leader every
// one, under the writers' lock; a shard its own, under their owner keys,
// without that lock): together, one revision is applied twice.
type RoleConflictError struct {
	// Shard says this replica is a shard; Others are the replicas of the
	// other kind (the leader, or the shard members); State is the state.
	Shard  bool
	Others []string
	State  string
}

func (e *RoleConflictError) Error() string {
	if e.Shard {
		return fmt.Sprintf("refusing to run as a shard (serve --shard): replica %s leads the state %s without --shard, and both would apply the same clusters; stop it, or run every replica with --shard",
			strings.Join(e.Others, ", "), e.State)
	}
	return fmt.Sprintf("refusing to run without --shard: the shards %s (serve --shard) share the state %s, and a leader would apply their clusters again; stop them, or run this replica with --shard",
		strings.Join(e.Others, ", "), e.State)
}

// CheckRoles returns a RoleConflictError when replicas of the other kind use
// r's state: a leader, for a shard; shard members, for a replica without
// --shard. nil when none does; another error when it cannot tell.
func (r *Replica) CheckRoles(ctx context.Context) error {
	if r.Shard {
		leader, err := r.Etcd.Leader(ctx)
		switch {
		case errors.Is(err, state.ErrNoLeader):
			return nil
		case err != nil:
			return err
		}
		return &RoleConflictError{Shard: true, Others: []string{leader}, State: r.Etcd.String()}
	}
	sh, ok := r.Etcd.(state.Sharder)
	if !ok {
		return nil
	}
	members, err := sh.Members(ctx)
	if err != nil || len(members) == 0 {
		return err
	}
	return &RoleConflictError{Others: members, State: r.Etcd.String()}
}

// checkRolesAfter is CheckRoles once this replica has made itself known (its
// leadership won, or its membership joined), so that of two replicas of
// either kind that start at once, at least one sees the other. When it
// finds a conflict, or cannot tell, it gives up its place (leave); the
// conflict is returned to end Run, and false says to try again after a
// second (etcd answered nothing).
func (r *Replica) checkRolesAfter(ctx context.Context, leave func(context.Context) error) (bool, error) {
	err := r.CheckRoles(ctx)
	if err == nil {
		return true, nil
	}
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = leave(lctx)
	cancel()
	var conflict *RoleConflictError
	if errors.As(err, &conflict) {
		r.log().Error("replica: refusing to run beside replicas of the other kind", "replica", r.id(), "error", err.Error())
		return false, err
	}
	if ctx.Err() == nil {
		r.log().Warn("replica: the other replicas cannot be read; retrying", "replica", r.id(), "error", redact.Text(err.Error()))
		sleep(ctx, time.Second)
	}
	return false, nil
}
