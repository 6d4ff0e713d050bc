package controller

// Replicas: several serve processes on one state on etcd. One is elected
// leader (an election on <prefix>/leader) and runs the reconcile loop; the
// others follow: they do not reconcile, they answer the status with the
// leader's identity, and a webhook they receive is handed to the leader
// through the key <prefix>/trigger. When the leader dies or loses etcd, its
// lease expires and another replica wins the election and reconciles.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// Roles of a replica, in its status.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
)

// Replica runs a Loop as one of several replicas of the state on Etcd (a
// Coordinator, the etcd backend): it reconciles only while it leads.
type Replica struct {
	Loop *Loop
	Etcd state.Coordinator
	// ID names this replica (the leader's identity in every replica's
	// status); DefaultReplicaID when empty.
	ID string
	// Shard makes the replicas share the clusters instead of electing one
	// leader (serve --shard; shard.go); Etcd must be a state.Sharder.
	Shard bool
	// A shard's: AdvertiseURL is where the other replicas fetch the files
	// of its clusters (serve --advertise-url; "" to advertise none: they
	// render them); APIToken the bearer token it sends when it fetches from
	// the others (the replicas share serve's --api-token-file).
	AdvertiseURL string
	APIToken     []byte

	mu     sync.Mutex
	role   string
	leader string // as last seen
	terms  int    // leaderships won
	// serving is the serial whose applied set this replica holds, checked;
	// problem why it does not hold the applied state's (nil when it does).
	serving int64
	problem error

	// model is the repository of the applied revision modelRev, loaded for
	// the read API while this replica follows (Model); modelMu makes one
	// load at a time.
	modelMu  sync.Mutex
	model    *loader.Repo
	modelRev string

	// A shard's: local serialises the writes to the work directory (a
	// reconcile, a committed set made); shard is its view of the shards.
	local sync.Mutex
	shard *shardState
}

// DefaultReplicaID is host:pid.
func DefaultReplicaID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// log is the loop's logger.
func (r *Replica) log() *slog.Logger { return r.Loop.logger() }

func (r *Replica) id() string {
	if r.ID == "" {
		r.ID = DefaultReplicaID()
	}
	return r.ID
}

// Role is "leader" or "follower".
func (r *Replica) Role() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role == "" {
		return RoleFollower
	}
	return r.role
}

// setRole makes this replica's role role, and logs a change: "replica:
// leading" or "replica: following", with the role it had ("" at start) and,
// following, the leader last seen.
func (r *Replica) setRole(role string) {
	r.mu.Lock()
	was := r.role
	r.role = role
	if role == RoleLeader {
		r.leader = r.id()
		r.terms++
	}
	leader := r.leader
	r.mu.Unlock()
	if was == role {
		return
	}
	if was == "" {
		was = "starting"
	}
	if role == RoleLeader {
		r.log().Info("replica: leading", "replica", r.id(), "was", was, "state", r.Etcd.String())
		return
	}
	r.log().Info("replica: following", "replica", r.id(), "was", was, "leader", leader, "state", r.Etcd.String())
}

// served records that this replica serves the applied set of st (err nil)
// or why it does not; a serial it takes up is logged ("replica: serving").
func (r *Replica) served(st *state.State, err error) {
	r.mu.Lock()
	r.problem = err
	was := r.serving
	if err == nil && st.Serial > 0 {
		r.serving = st.Serial
	}
	role := r.role
	r.mu.Unlock()
	if err == nil && st.Serial > 0 && st.Serial != was {
		r.log().Info("replica: serving", "replica", r.id(), "role", role, "serial", st.Serial, "revision", st.Revision, "previous_serial", was)
	}
}

// Run campaigns for the leadership until ctx ends; while it leads it runs the
// loop, which stops between two reconciles when the leadership is lost (a
// reconcile under way finishes: its commit needs the writers' lock, whose
// lease expired with the leadership's, so it either commits its serial whole
// or not at all). A follower keeps its status's applied serial and revision
// up to date from the state on etcd. At the end, a leader resigns so that
// another replica takes over at once. It refuses to lead while shards share
// the state (RoleConflictError, which ends it).
func (r *Replica) Run(ctx context.Context) error {
	if r.Shard {
		return r.runShard(ctx)
	}
	id := r.id()
	leader := &leaderStrategy{r: r}
	r.Loop.use(leader)
	// The leader's own applies are served as they commit.
	r.serveOwnCommits()
	for ctx.Err() == nil {
		r.setRole(RoleFollower)
		fctx, stopFollowing := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() { r.follow(fctx); close(followed) }()
		lead, err := r.Etcd.Campaign(ctx, id)
		stopFollowing()
		<-followed
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.log().Warn("replica: campaigning for the leadership failed; retrying", "replica", id, "error", redact.Text(err.Error()))
			sleep(ctx, time.Second)
			continue
		}
		// Shards on this state would apply its clusters too.
		ok, err := r.checkRolesAfter(ctx, lead.Resign)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		r.setRole(RoleLeader)
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-lead.Done():
			case <-lctx.Done():
			}
			cancel()
		}()
		go r.serveRequests(lctx)
		// The plan compares with the applied set: this replica makes it when
		// another leader applied it.
		r.materialise(lctx)
		r.Loop.reconsider()
		// Before each step that writes, the operation asks whether this
		// replica still leads: one paused past its lease (SIGSTOP, a long GC
		// pause) finds out before it writes, not a reconcile later.
		leader.term(lead, cancel)
		r.Loop.Run(lctx)
		leader.term(nil, nil)
		cancel()
		if ctx.Err() != nil {
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = lead.Resign(rctx)
			rcancel()
			break
		}
		r.log().Warn("replica: the leadership was lost (its lease expired: etcd out of reach?); following", "replica", id)
	}
	// Stopped: a follower again, quietly (the log says "stopped").
	r.mu.Lock()
	r.role = RoleFollower
	r.mu.Unlock()
	return nil
}

// leaderStrategy is the strategy of a replica elected leader: it reconciles
// every cluster while it leads.
type leaderStrategy struct {
	r *Replica

	mu     sync.Mutex
	lead   state.Leadership   // of the term under way; nil between terms
	cancel context.CancelFunc // ends the term's loop
}

// term makes lead the leadership of the term under way (nil: none), and
// cancel what ends its loop.
func (s *leaderStrategy) term(lead state.Leadership, cancel context.CancelFunc) {
	s.mu.Lock()
	s.lead, s.cancel = lead, cancel
	s.mu.Unlock()
}

func (s *leaderStrategy) begin() (end func()) { return func() {} }

// prepare makes the applied set the leader lacks (another leader applied it)
// before each plan.
func (s *leaderStrategy) prepare(ctx context.Context, st *state.State) error {
	r := s.r
	err := r.Loop.materialise(ctx, st, false)
	r.served(st, err)
	var gone *RevisionGoneError
	if errors.As(err, &gone) {
		// The applied revision left git (history rewritten and
		// collected): the new revision is reconciled anyway, against
		// the state's digests (operation.Operation plans what it cannot
		// compare as changed), instead of failing every reconcile.
		r.log().Warn("replica: the applied set cannot be made again; reconciling against the state's digests", "replica", r.id(), "error", redact.Text(err.Error()))
		return nil
	}
	return err
}

// leading says whether this replica still leads, before each step that
// writes: one paused past its lease (SIGSTOP, a long GC pause) finds out
// before it writes, not a reconcile later, and goes back to following (and
// campaigning). Between terms nothing runs: nil.
func (s *leaderStrategy) leading() error {
	s.mu.Lock()
	lead, cancel := s.lead, s.cancel
	s.mu.Unlock()
	if lead == nil {
		return nil
	}
	err := s.r.stillLeads(lead, s.r.id())
	if err != nil {
		cancel()
	}
	return err
}

// clusters are the status lines as the leader's last reconcile left them.
func (s *leaderStrategy) clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo {
	return operation.ClusterInfos(st, live, head)
}

// ErrNotLeader says a replica lost its leadership: it writes nothing more.
var ErrNotLeader = errors.New("this replica no longer leads")

// stillLeads says whether the leadership lead, won as id, still holds: its
// lease not known to be lost, and etcd naming id the leader now.
func (r *Replica) stillLeads(lead state.Leadership, id string) error {
	select {
	case <-lead.Done():
		return fmt.Errorf("%w: its lease expired", ErrNotLeader)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	leader, err := r.Etcd.Leader(ctx)
	switch {
	case errors.Is(err, state.ErrNoLeader):
		return fmt.Errorf("%w: no replica leads (its lease expired)", ErrNotLeader)
	case err != nil:
		return fmt.Errorf("%w: the election cannot be read: %s", ErrNotLeader, redact.Text(err.Error()))
	case leader != id:
		return fmt.Errorf("%w: %s leads now", ErrNotLeader, leader)
	}
	return nil
}

// follow materialises every state committed on etcd, until ctx ends.
func (r *Replica) follow(ctx context.Context) {
	for range r.Etcd.WatchSerial(ctx) {
		r.materialise(ctx)
	}
}

// materialise makes the applied set of the state on etcd in this replica's
// work directory (Materialise; a shard from the objects it has and fetches
// where it can, rendering the rest), then reports it: the status's applied
// serial and revision, the artifact API's waiting agents woken. A failure is
// kept for the status and /readyz.
func (r *Replica) materialise(ctx context.Context) {
	st, err := r.Etcd.ReadState(ctx)
	if err == nil {
		if r.Shard {
			r.fetchOthers(ctx, r.currentShard(), st)
		}
		err = r.Loop.materialise(ctx, st, r.Shard)
	}
	r.served(st, err)
	if err != nil {
		if ctx.Err() == nil {
			r.log().Warn("replica: the applied set is not served", "replica", r.id(), "error", redact.Text(err.Error()))
		}
		return
	}
	// A follower fetches nothing: the newest revision it knows is the
	// leader's last applied one.
	r.Loop.showApplied(st, r.Role() == RoleFollower)
}

// Serving returns the serial of the applied set this replica holds, checked
// against the state's manifest, and why it does not hold the newest (nil when
// it does).
func (r *Replica) Serving() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.serving, r.problem
}

// Model is the repository of the applied revision this replica serves, and
// that revision, for the read API of a follower (the component registry):
// the loop, which loads revisions, runs only on the leader. It is loaded from
// the source once per applied revision; nil and "" while nothing is applied.
func (r *Replica) Model(ctx context.Context) (*loader.Repo, string, error) {
	rev := r.Loop.Status().Applied
	if rev == "" {
		return nil, "", nil
	}
	r.modelMu.Lock()
	defer r.modelMu.Unlock()
	if r.model != nil && r.modelRev == rev {
		return r.model, rev, nil
	}
	rsrc, ok := r.Loop.Source.(source.RevisionSource)
	if !ok {
		return nil, "", fmt.Errorf("this source cannot read the applied revision %.12s (a working tree is not shared between replicas)", rev)
	}
	at, err := rsrc.At(ctx, rev)
	if err != nil {
		return nil, "", fmt.Errorf("reading the applied revision %.12s: %w", rev, err)
	}
	repo, _ := loader.Load(at.FS, r.Loop.loadOptions())
	r.model, r.modelRev = repo, rev
	return repo, rev, nil
}

// serveRequests triggers the loop on every reconcile request a follower
// writes (a webhook it received), until ctx ends.
func (r *Replica) serveRequests(ctx context.Context) {
	for range r.Etcd.WatchRequests(ctx) {
		r.Loop.Trigger()
	}
}

// Trigger asks for a reconcile: at once on the leader; through etcd on a
// follower, for the leader to run.
func (r *Replica) Trigger() error {
	if r.Role() == RoleShard {
		// Here for the clusters this replica owns, and through etcd for
		// every other shard's.
		r.Loop.Trigger()
		return r.Etcd.RequestReconcile(context.Background(), r.id())
	}
	if r.Role() == RoleLeader {
		r.Loop.Trigger()
		return nil
	}
	return r.Etcd.RequestReconcile(context.Background(), r.id())
}

// Leader returns the leader's identity as etcd says now ("" when none, or
// etcd is out of reach; the last one seen then, with the error).
func (r *Replica) Leader(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	id, err := r.Etcd.Leader(ctx)
	if errors.Is(err, state.ErrNoLeader) {
		return "", nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return r.leader, err
	}
	r.leader = id
	return id, nil
}

// StatusTimeout bounds each read from etcd of a replica's status and
// readiness (the leader, the members, the committed serial).
const StatusTimeout = 2 * time.Second

// ReplicaStatus is a replica's part of the status.
type ReplicaStatus struct {
	// ID is this replica's identity, Role "leader" or "follower", Leader the
	// leader's identity ("" when none is elected).
	ID     string `json:"id"`
	Role   string `json:"role"`
	Leader string `json:"leader"`
	// Serving is the serial of the applied set this replica holds, checked
	// against the state's manifest; Problem why it does not hold the applied
	// state's (another tool version renders it differently, etcd or the
	// source out of reach).
	Serving int64  `json:"serving_serial"`
	Problem string `json:"problem,omitempty"`
	// Error says why the leader could not be read (etcd out of reach).
	Error string `json:"error,omitempty"`
	// Members are the live replicas and Clusters those this one owns, when
	// the replicas share the clusters (role "shard").
	Members  []string `json:"members,omitempty"`
	Clusters []string `json:"clusters,omitempty"`
}

// Status is this replica's identity and role, and the leader's identity.
func (r *Replica) Status(ctx context.Context) *ReplicaStatus {
	var rs *ReplicaStatus
	if r.Shard {
		rs = &ReplicaStatus{ID: r.id(), Role: RoleShard}
		rs.Members, rs.Clusters = r.Shards()
		if sh, ok := r.Etcd.(state.Sharder); ok {
			mctx, cancel := context.WithTimeout(ctx, StatusTimeout)
			if ms, err := sh.Members(mctx); err != nil {
				rs.Error = redact.Text(err.Error())
			} else {
				rs.Members = ms
			}
			cancel()
		}
	} else {
		leader, err := r.Leader(ctx)
		rs = &ReplicaStatus{ID: r.id(), Role: r.Role(), Leader: leader}
		if err != nil {
			rs.Error = redact.Text(err.Error())
		}
	}
	var problem error
	rs.Serving, problem = r.Serving()
	if problem != nil {
		rs.Problem = redact.Text(problem.Error())
	}
	return rs
}

// sleep waits d, or less when ctx ends first; it says whether ctx is still
// alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// serveOwnCommits makes the loop's own commits (a leader's applies, a
// shard's) served as they land: a state whose set the work directory now
// links is the one this replica serves.
func (r *Replica) serveOwnCommits() {
	onState := r.Loop.OnState
	r.Loop.OnState = func(st *state.State) {
		if r.Loop.Workdir.CurrentSerial() == st.Serial {
			r.mu.Lock()
			r.serving, r.problem = st.Serial, nil
			r.mu.Unlock()
		}
		if onState != nil {
			onState(st)
		}
	}
}
