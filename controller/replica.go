package controller

// Replicas: several serve processes on one state on etcd. One is elected
// leader (an election on <prefix>/leader) and runs the reconcile loop; the
// others follow: they do not reconcile, they answer the status with the
// leader's identity, and a webhook they receive is handed to the leader
// through the key <prefix>/trigger. When the leader dies or loses etcd, its
// lease expires and another replica wins the election and reconciles.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/redact"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
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
		r.Loop.Log.Info("replica: leading", "replica", r.id(), "was", was, "state", r.Etcd.String())
		return
	}
	r.Loop.Log.Info("replica: following", "replica", r.id(), "was", was, "leader", leader, "state", r.Etcd.String())
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
		r.Loop.Log.Info("replica: serving", "replica", r.id(), "role", role, "serial", st.Serial, "revision", st.Revision, "previous_serial", was)
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
	r.Loop.init()
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
			r.Loop.Log.Warn("replica: campaigning for the leadership failed; retrying", "replica", id, "error", redact.Text(err.Error()))
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
		r.Loop.resetSeen()
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
		r.Loop.Log.Warn("replica: the leadership was lost (its lease expired: etcd out of reach?); following", "replica", id)
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
		r.Loop.Log.Warn("replica: the applied set cannot be made again; reconciling against the state's digests", "replica", r.id(), "error", redact.Text(err.Error()))
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
// work directory (Materialise), then reports it: the status's applied serial
// and revision, the artifact API's waiting agents woken. A failure is kept
// for the status and /readyz.
func (r *Replica) materialise(ctx context.Context) {
	st, err := r.Etcd.ReadState(ctx)
	if err == nil {
		err = r.Loop.materialise(ctx, st, false)
	}
	r.served(st, err)
	if err != nil {
		if ctx.Err() == nil {
			r.Loop.Log.Warn("replica: the applied set is not served", "replica", r.id(), "error", redact.Text(err.Error()))
		}
		return
	}
	r.Loop.mu.Lock()
	r.Loop.status.Applied, r.Loop.status.Serial = st.Revision, st.Serial
	if r.Role() != RoleLeader {
		// A follower fetches nothing: the newest revision it knows is the
		// leader's last applied one.
		r.Loop.status.Revision = st.Revision
	}
	r.Loop.mu.Unlock()
	r.Loop.OnState(st)
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

// RenderMismatchError says this replica's render of the applied revision
// differs from the applied files (the state's manifest): another tool
// version renders differently. The replica serves nothing of that state.
type RenderMismatchError struct {
	Serial           int64
	Revision         string
	File             string
	Applied, Replica string // tool versions
}

func (e *RenderMismatchError) Error() string {
	return fmt.Sprintf("this replica (fuelsync %s) renders %s of serial %d (revision %.12s) differently from the leader that applied it (fuelsync %s); it serves nothing of that state: run the same version on every replica",
		e.Replica, e.File, e.Serial, e.Revision, e.Applied)
}

// RevisionGoneError says the revision an applied set is the render of cannot be
// read any more (history rewritten and garbage-collected): the set cannot be
// made again from git.
type RevisionGoneError struct {
	Revision string
	Serial   int64
	Err      error
}

func (e *RevisionGoneError) Error() string {
	return fmt.Sprintf("reading the applied revision %.12s of serial %d: %v", e.Revision, e.Serial, e.Err)
}

func (e *RevisionGoneError) Unwrap() error { return e.Err }

// Materialise makes the applied set of st in w, when w lacks it, from src:
// the applied revision rendered with the applied state, every file checked
// against st's manifest (sha256) before it is kept; then current names it.
// Rendering is deterministic, so git and the state are the whole truth: no
// artifact is copied between replicas. A *RenderMismatchError when this
// tool version renders differently; nothing is kept then.
func Materialise(ctx context.Context, w *state.Workdir, src source.Source, st *state.State, toolVersion string) error {
	return materialiseFor(ctx, nil, w, src, st, toolVersion, false, nil)
}

// materialise makes the applied set of st in the loop's work directory, as
// Materialise does, with the loop's loads (a leader's, a follower's or a
// shard's); the loop's onRender is told the clusters it renders. With
// objects (a shard), a cluster whose every file is an object of the work
// directory already (a shard made it, or an earlier set had it) is taken from
// the objects, checked by digest, instead of being rendered.
func (l *Loop) materialise(ctx context.Context, st *state.State, objects bool) error {
	return materialiseFor(ctx, l, l.Workdir, l.Source, st, l.ToolVersion, objects, l.onRender)
}

// materialiseFor is Materialise, with objects as Loop.materialise has it;
// onRender, when set, is told the clusters it renders. With loop (not nil),
// the loads take its load options and its cache, swept afterwards unless a
// reconcile of loop runs (which sweeps at its end). A replica that makes the
// set of each commit renders only the clusters it lacks, but loads the whole
// revision: with the cache it decodes only the files the commit changed.
func materialiseFor(ctx context.Context, loop *Loop, w *state.Workdir, src source.Source, st *state.State, toolVersion string, objects bool, onRender func([]string)) error {
	var load loader.Options
	if loop != nil {
		load = loop.loadOptions()
		defer loop.sweepBetween()
	}
	if st.Serial == 0 {
		return nil
	}
	if linked, err := w.LinkSet(st.Serial); err != nil || linked {
		return err
	}
	rsrc, ok := src.(source.RevisionSource)
	// Each cluster's artifacts are the render of its own applied revision (a
	// held cluster keeps an older one's).
	byRev := map[string][]string{}
	files := map[string][]string{} // of each cluster
	for name := range st.Artifacts {
		if c := state.ClusterOf(name); c != "" {
			files[c] = append(files[c], name)
		}
	}
	var stored []string // the clusters taken from the objects
	for name := range st.Artifacts {
		c := state.ClusterOf(name)
		if c == "" || slices.Contains(stored, c) {
			continue
		}
		if objects && w.HasObjects(st.Artifacts, files[c]) {
			stored = append(stored, c)
			continue
		}
		rev := st.Revision
		if cs := st.Clusters[c]; cs != nil && cs.Revision != "" {
			rev = cs.Revision
		}
		if !slices.Contains(byRev[rev], c) {
			byRev[rev] = append(byRev[rev], c)
		}
	}
	type part struct {
		rev      string
		repo     *loader.Repo
		held     map[string]hcl.Diagnostics
		clusters []string
	}
	var parts []part
	if len(byRev) > 0 && !ok {
		return fmt.Errorf("the applied set of serial %d is not in %s, and this source cannot read revision %.12s to render it (a working tree is not shared between replicas)", st.Serial, w.Dir, st.Revision)
	}
	for _, revName := range slices.Sorted(maps.Keys(byRev)) {
		clusters := byRev[revName]
		rev, err := rsrc.At(ctx, revName)
		if err != nil {
			return &RevisionGoneError{Revision: revName, Serial: st.Serial, Err: err}
		}
		repo, diags := loader.Load(rev.FS, load)
		held, _ := operation.Hold(repo, st, diags)
		if onRender != nil {
			onRender(clusters)
		}
		parts = append(parts, part{revName, repo, held, clusters})
	}
	// Each cluster rendered, its files checked and written, one after the
	// other: the set is made with the memory of a few clusters.
	return w.WriteSetLinked(st, func(put func(string, []byte) error, link func(string, string) error) error {
		var mu sync.Mutex
		got := map[string]bool{}
		check := func(rev, name string, data []byte) error {
			sum := sha256.Sum256(data)
			if want := st.Artifacts[name]; want != hex.EncodeToString(sum[:]) {
				return &RenderMismatchError{Serial: st.Serial, Revision: rev, File: name, Applied: st.ToolVersion, Replica: toolVersion}
			}
			mu.Lock()
			got[name] = true
			mu.Unlock()
			return put(name, data)
		}
		// The files taken from the objects: each object is read and checked
		// against the committed digest (WriteSetLinked) before it is linked.
		for _, c := range stored {
			for _, name := range files[c] {
				if err := link(name, st.Artifacts[name]); err != nil {
					return fmt.Errorf("making the applied set of serial %d: %w", st.Serial, err)
				}
				got[name] = true
			}
		}
		for _, pt := range parts {
			_, err := render.Walk(pt.repo, render.Options{Clusters: pt.clusters, State: st}, false, func(wk *render.Walked) error {
				c := wk.Cluster.Name
				if d := append(slices.Clone(pt.held[c]), wk.Diagnostics...); d.HasErrors() {
					return fmt.Errorf("rendering cluster %s of the applied revision %.12s of serial %d: %s", c, pt.rev, st.Serial, operation.ProblemLines(loader.SortDiagnostics(d), 0)[0])
				}
				if wk.Rendered == nil {
					return nil // its files are missing: said below
				}
				return render.StreamCluster(wk.Rendered, func(name string, data []byte) error { return check(pt.rev, name, data) })
			})
			if err != nil {
				return err
			}
		}
		if _, ok := st.Artifacts["manifest.json"]; ok {
			manifest, err := render.Manifest(st.Artifacts, st.Revision, toolVersion)
			if err != nil {
				return err
			}
			if err := check(st.Revision, "manifest.json", manifest); err != nil {
				return err
			}
		}
		for name := range st.Artifacts {
			if !got[name] {
				return &RenderMismatchError{Serial: st.Serial, Revision: st.Revision, File: name, Applied: st.ToolVersion, Replica: toolVersion}
			}
		}
		return nil
	})
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
