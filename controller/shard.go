package controller

// Shards (serve --shard): the replicas of a state on etcd share its clusters
// instead of electing one leader. Each live replica is a member (a key on its
// lease); each cluster belongs to the member that consistent hashing with
// bounded loads picks (Assign), which claims the cluster's owner key on its
// lease and alone renders, plans, applies and commits it. Every replica serves every
// cluster: it makes each committed set from the objects it has and renders
// of the clusters it lacks, checked by digest, as followers do.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// Assign gives each of clusters its owner among members: consistent hashing
// with bounded loads over rendezvous scores (Argo CD's consistent-hashing
// sharding does the same). Every (cluster, member) pair has a score (score);
// the pairs are taken from the highest score down, and each gives its cluster
// to its member unless the cluster has an owner already or the member holds
// its share: clusters / members rounded down, or up for the first (clusters
// mod members) members to reach that. So the work divides evenly, as
// rendezvous hashing alone does not with a few dozen clusters, and the choice
// depends on the names alone, whatever their order: every replica that sees
// the same members and clusters makes the same one. A member that joins or
// leaves, or a cluster added or removed, moves little more than rendezvous
// hashing would (the clusters a member takes or gives away, and a few more
// where a share changes). Names given twice count once; an empty map when
// there is no member.
func Assign(clusters, members []string) map[string]string {
	cs, ms := unique(clusters), unique(members)
	out := make(map[string]string, len(cs))
	if len(ms) == 0 {
		return out
	}
	type pair struct {
		score     uint64
		cl, owner int32
	}
	pairs := make([]pair, 0, len(cs)*len(ms))
	for i, c := range cs {
		for j, m := range ms {
			pairs = append(pairs, pair{score(c, m), int32(i), int32(j)})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		if a.owner != b.owner {
			return cmp.Compare(a.owner, b.owner)
		}
		return cmp.Compare(a.cl, b.cl)
	})
	// Each member's share is floor or, for the first extra members to
	// reach it, floor+1: the shares add up to the clusters exactly, so
	// every cluster finds a member.
	floor, extra := len(cs)/len(ms), len(cs)%len(ms)
	load := make([]int, len(ms))
	for _, p := range pairs {
		if len(out) == len(cs) {
			break
		}
		if _, done := out[cs[p.cl]]; done {
			continue
		}
		if n := load[p.owner]; n > floor || n == floor && extra == 0 {
			continue
		}
		if load[p.owner] == floor {
			extra--
		}
		out[cs[p.cl]] = ms[p.owner]
		load[p.owner]++
	}
	return out
}

// unique is names sorted, each once.
func unique(names []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// score is the weight of member for cluster: the first 8 bytes of
// sha256(len(cluster) cluster member), so that no two pairs of names collide
// by concatenation.
func score(cluster, member string) uint64 {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(cluster)))
	h.Write(n[:])
	h.Write([]byte(cluster))
	h.Write([]byte(member))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

// RoleShard is the role of a replica that owns a shard of the clusters.
const RoleShard = "shard"

// shardState is a shard replica's view of the shards: the members, the
// clusters it claimed, and those the reconcile under way owns.
type shardState struct {
	r      *Replica
	sh     state.Sharder
	member state.Membership

	mu      sync.Mutex
	members []string
	names   []string          // every cluster of the last reconcile, sorted (Assign's clusters)
	assign  map[string]string // Assign(names, members); nil: not made yet
	claimed map[string]bool   // owner keys held
	run     []string          // the clusters the reconcile under way owns, sorted
	retry   bool              // a cluster of this replica is still another's: try again
	busy    bool              // marked busy (Sharder.SetBusy)
	owners  map[string]string
}

// setMembers records the live members.
func (s *shardState) setMembers(ms []string) {
	s.mu.Lock()
	s.members = slices.Clone(ms)
	s.assign = nil
	s.mu.Unlock()
}

// owner is the member that owns cluster among the live ones (Assign over the
// clusters of the last reconcile, and cluster).
func (s *shardState) owner(cluster string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ownerLocked(cluster)
}

func (s *shardState) ownerLocked(cluster string) string {
	if s.assign == nil {
		s.assign = Assign(s.names, s.members)
	}
	if o, ok := s.assign[cluster]; ok || len(s.members) == 0 {
		return o
	}
	return Assign(append(slices.Clone(s.names), cluster), s.members)[cluster]
}

// beforeRun, at the start of each reconcile: the owner keys of clusters that
// are now another member's are given up (the reconcile that applied them is
// over), and the run's own clusters are forgotten.
func (s *shardState) beforeRun() {
	s.mu.Lock()
	s.run = nil
	s.mu.Unlock()
	s.giveUp()
}

// giveUp gives up the owner keys this replica holds of clusters that are now
// another member's, or no longer among the clusters (removed, and deleted by
// the last reconcile).
func (s *shardState) giveUp() {
	s.mu.Lock()
	var give []string
	for c := range s.claimed {
		if _, known := slices.BinarySearch(s.names, c); s.names != nil && !known || s.ownerLocked(c) != s.member.ID() {
			give = append(give, c)
			delete(s.claimed, c)
		}
	}
	s.mu.Unlock()
	if len(give) > 0 {
		slices.Sort(give)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.sh.Release(ctx, s.member, give); err != nil {
			s.r.log().Warn("shard: giving clusters up failed (their keys go with this replica's lease)", "replica", s.member.ID(), "clusters", give, "error", redact.Text(err.Error()))
		} else {
			s.r.log().Info("shard: clusters given up", "replica", s.member.ID(), "clusters", give)
		}
	}
}

// owns is the reconcile's operation.Request.Owns: of every cluster of the
// run, those Assign gives this replica, each claimed (its owner key on this
// replica's lease) before it is reconciled. The keys of clusters that are now
// another member's (a cluster added or removed changed the shares) are given
// up first. A cluster whose key another live member still holds (it is giving
// it up) is left for a retry.
func (s *shardState) owns(clusters []string) []string {
	names := unique(clusters)
	s.mu.Lock()
	// A retry is due until a run that asks claims every cluster: a run that
	// stops short of asking (its commit seen already) keeps it due.
	s.names, s.assign, s.retry = names, nil, false
	s.mu.Unlock()
	s.giveUp()
	id := s.member.ID()
	var mine []string
	for _, c := range names {
		if s.owner(c) != id {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		holder, err := s.sh.Claim(ctx, s.member, c)
		cancel()
		s.mu.Lock()
		if err != nil || holder != id {
			s.retry = true
			s.mu.Unlock()
			continue
		}
		if !s.claimed[c] {
			s.r.log().Info("shard: cluster claimed", "replica", id, "cluster", c)
		}
		s.claimed[c] = true
		s.run = append(s.run, c)
		slices.Sort(s.run)
		s.mu.Unlock()
		mine = append(mine, c)
	}
	return mine
}

// setBusy marks this replica busy in etcd (a reconcile that plans is under
// way) or not. A mark that fails costs the others only a set made early.
func (s *shardState) setBusy(busy bool) {
	s.mu.Lock()
	was := s.busy
	s.busy = busy
	s.mu.Unlock()
	if was == busy {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.sh.SetBusy(ctx, s.member, busy)
}

// othersBusy says whether another live member is marked busy.
func (s *shardState) othersBusy(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	busy, err := s.sh.Busy(ctx)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range busy {
		if id != s.member.ID() && slices.Contains(s.members, id) {
			return true
		}
	}
	return false
}

// owned lists the clusters whose owner key this replica holds, sorted.
func (s *shardState) owned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.claimed))
}

// clusters are the status lines of st with each cluster's owner (from etcd's
// owner keys; Assign's choice while a cluster has none). This
// replica's last results say only of its own clusters; the others' are as
// their owners recorded them.
func (s *shardState) clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	owners, err := s.sh.Owners(ctx)
	cancel()
	s.mu.Lock()
	if err != nil {
		owners = s.owners // as last read
	} else {
		s.owners = owners
	}
	mine := s.claimed
	var own []*operation.ClusterResult
	for _, c := range live {
		if mine[c.Name] {
			own = append(own, c)
		}
	}
	s.mu.Unlock()
	infos := operation.ClusterInfos(st, own, head)
	for i := range infos {
		infos[i].Owner = owners[infos[i].Name]
		if infos[i].Owner == "" {
			infos[i].Owner = s.owner(infos[i].Name)
		}
	}
	return infos
}

// NewShard makes a replica of loop that shares the clusters with the other
// replicas of sh (serve --shard) instead of electing a leader. From now on
// the loop's work directory commits as a shard (shardBackend), and the loop
// reconciles only the clusters this replica owns; call it before the loop
// or a server uses them.
func NewShard(loop *Loop, sh state.Sharder, id string) *Replica {
	r := &Replica{Loop: loop, Etcd: sh, ID: id, Shard: true}
	loop.Workdir.Backend = &shardBackend{r: r, sh: sh, toolVersion: loop.ToolVersion}
	loop.use(shardStrategy{r})
	return r
}

// shardStrategy is the strategy of a shard replica: each reconcile owns the
// clusters Assign gives it among the members of the moment (its shardState;
// none while it is no member).
type shardStrategy struct{ r *Replica }

// begin holds the work directory's lock through the reconcile (the replica
// makes committed sets under it too); the owner keys of clusters that are
// now another member's are given up first. At the end this replica is no
// longer busy.
func (g shardStrategy) begin() (end func()) {
	g.r.local.Lock()
	if s := g.r.currentShard(); s != nil {
		s.beforeRun()
	}
	return func() {
		if s := g.r.currentShard(); s != nil {
			s.setBusy(false)
		}
		g.r.local.Unlock()
	}
}

// prepare makes the committed set (every replica makes every one), from
// the objects it has and fetches where it can, rendering the rest; this
// replica is busy until the reconcile ends.
func (g shardStrategy) prepare(ctx context.Context, st *state.State) error {
	r := g.r
	s := r.currentShard()
	if s != nil {
		s.setBusy(true)
	}
	r.fetchOthers(ctx, s, st)
	err := r.Loop.materialise(ctx, st, true)
	r.served(st, err)
	return err
}

// leading: a shard has no leader; its membership is checked by its commit
// (shardBackend).
func (shardStrategy) leading() error { return nil }

func (g shardStrategy) owns(clusters []string) []string {
	if s := g.r.currentShard(); s != nil {
		return s.owns(clusters)
	}
	return nil
}

func (g shardStrategy) clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo {
	if s := g.r.currentShard(); s != nil {
		return s.clusters(st, live, head)
	}
	return operation.ClusterInfos(st, nil, head)
}

// currentShard is the replica's membership and view of the shards (nil while
// it is no member).
func (r *Replica) currentShard() *shardState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shard
}

// shardBackend is the work directory's Backend of a shard replica: no
// global lock, and a commit that merges the run's clusters into the stored
// state (state.MergingBackend, Sharder.CommitShard).
type shardBackend struct {
	r           *Replica
	sh          state.Sharder
	toolVersion string
}

func (b *shardBackend) String() string { return b.sh.String() }

func (b *shardBackend) ReadState(ctx context.Context) (*state.State, error) {
	return b.sh.ReadState(ctx)
}

// member is the replica's current shard view; an error while it is no
// member, or its membership is lost.
func (b *shardBackend) member() (*shardState, error) {
	s := b.r.currentShard()
	if s == nil {
		return nil, fmt.Errorf("replica %s is not a member of the shards of %s yet", b.r.id(), b.String())
	}
	select {
	case <-s.member.Done():
		return nil, fmt.Errorf("replica %s is no longer a member of the shards of %s (its lease expired)", s.member.ID(), b.String())
	default:
	}
	return s, nil
}

// Lock takes no global lock: each cluster's owner key is its lock, checked
// by the commit. It fails once the membership is lost.
func (b *shardBackend) Lock(ctx context.Context, op string, timeout time.Duration) (func() error, error) {
	if _, err := b.member(); err != nil {
		return nil, err
	}
	return func() error { return nil }, nil
}

func (b *shardBackend) Commit(ctx context.Context, prev int64, next *state.State) error {
	_, _, err := b.CommitMerged(ctx, prev, next)
	return err
}

// CommitMerged commits the clusters of the reconcile under way, merged into
// what the other owners committed meanwhile; manifest.json, which covers the
// whole set, is made again for a merge.
func (b *shardBackend) CommitMerged(ctx context.Context, prev int64, next *state.State) (*state.State, bool, error) {
	s, err := b.member()
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	clusters := slices.Clone(s.run)
	s.mu.Unlock()
	if len(clusters) == 0 {
		return nil, false, errors.New("a shard commits only the clusters it owns, and this reconcile owns none")
	}
	merge := func(cur *state.State) (*state.State, error) {
		m := state.MergeShard(cur, next, clusters)
		if _, ok := next.Artifacts["manifest.json"]; ok {
			data, err := render.Manifest(m.Artifacts, m.Revision, b.toolVersion)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(data)
			m.Artifacts["manifest.json"] = hex.EncodeToString(sum[:])
		}
		return m, nil
	}
	beforeShardCommit(clusters)
	return b.sh.CommitShard(ctx, s.member, clusters, prev, next, merge)
}

// DeferSet is state.SetDeferrer: while another member is busy (its commit
// of the same change is coming), the set is left to the follow loop, which
// makes the newest once the others are done.
func (b *shardBackend) DeferSet() bool {
	s, err := b.member()
	return err == nil && s.othersBusy(context.Background())
}

func (b *shardBackend) Close() error { return nil }

var (
	_ state.MergingBackend = (*shardBackend)(nil)
	_ state.SetDeferrer    = (*shardBackend)(nil)
)

// runShard runs the replica as a shard until ctx ends: it joins the
// members, and reconciles the clusters Assign gives it, while it makes
// and serves every committed set. A membership lost (its lease expired: a
// pause, or etcd out of reach) stops the reconciles; the replica joins again
// on a new lease. At the end it leaves, and its clusters move at once. It
// refuses to join while a replica without --shard leads (RoleConflictError).
func (r *Replica) runShard(ctx context.Context) error {
	id := r.id()
	sh, ok := r.Etcd.(state.Sharder)
	if !ok {
		return fmt.Errorf("the state %s cannot be shared by shards", r.Etcd)
	}
	r.setRole(RoleShard)
	r.serveOwnCommits()
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	go r.followShards(fctx)
	go r.serveRequests(fctx)
	for ctx.Err() == nil {
		m, err := sh.Join(ctx, id, r.AdvertiseURL)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.log().Warn("shard: joining the members failed; retrying", "replica", id, "error", redact.Text(err.Error()))
			sleep(ctx, time.Second)
			continue
		}
		// A leader on this state (a replica without --shard) would apply
		// the clusters too.
		ok, err := r.checkRolesAfter(ctx, m.Leave)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if !r.runMember(ctx, sh, m) {
			continue
		}
		if ctx.Err() != nil {
			lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = m.Leave(lctx)
			lcancel()
			break
		}
		r.log().Warn("shard: the membership was lost (its lease expired: etcd out of reach, or a pause?); joining again", "replica", id)
	}
	return nil
}

// followShards makes every set committed on etcd, until ctx ends: once the
// owners of a change are done (settle, waitForBusy), under the work
// directory's lock; then a reconcile whose clusters waited for another,
// which another shard may just have applied, is made again.
func (r *Replica) followShards(ctx context.Context) {
	serials := r.Etcd.WatchSerial(ctx)
	for range serials {
		if !settle(ctx, serials, shardSettle, shardSettleMax) || !r.waitForBusy(ctx, serials) {
			return
		}
		r.local.Lock()
		r.materialise(ctx)
		r.local.Unlock()
		if r.Loop.waitsForOthers() {
			r.Loop.reconsider()
		}
	}
}

// runMember runs the loop while m, this replica's membership of sh, holds
// (or until ctx ends): each reconcile owns the clusters Assign gives it
// among the members of the moment, and every change of the members
// reconciles again. False when the members could not be read (none ran).
func (r *Replica) runMember(ctx context.Context, sh state.Sharder, m state.Membership) bool {
	id := r.id()
	s := &shardState{r: r, sh: sh, member: m, claimed: map[string]bool{}}
	r.mu.Lock()
	r.shard = s
	r.mu.Unlock()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.Done():
		case <-lctx.Done():
		}
		cancel()
	}()
	// The members now and at every change: the clusters move, and every
	// replica reconciles what it owns now.
	members := sh.WatchMembers(lctx)
	first, ok := <-members
	if !ok {
		return false
	}
	s.setMembers(first)
	r.log().Info("shard: member", "replica", id, "members", first)
	go func() {
		for ms := range members {
			s.setMembers(ms)
			r.log().Info("shard: members changed", "replica", id, "members", ms)
			r.Loop.reconsider()
		}
	}()
	// A cluster still held by a member that is giving it up: try again.
	go func() {
		for sleep(lctx, time.Second) {
			s.mu.Lock()
			retry := s.retry
			s.mu.Unlock()
			if retry {
				r.Loop.reconsider()
			}
		}
	}()
	r.Loop.reconsider()
	r.Loop.Run(lctx)
	cancel()
	r.mu.Lock()
	r.shard = nil
	r.mu.Unlock()
	return true
}

// The owners of a change commit it one after the other, each at a serial of
// its own: a replica that made the set of every one of them would make N sets
// for one change, all but the last in vain. It waits until no new serial has
// come for shardSettle (at most shardSettleMax), then makes the newest.
const (
	shardSettle    = 500 * time.Millisecond
	shardSettleMax = 2 * time.Second
)

// settle takes the serials that come from serials until none has come for
// quiet, or max has passed; false when ctx ends or serials is closed.
func settle(ctx context.Context, serials <-chan int64, quiet, max time.Duration) bool {
	deadline := time.Now().Add(max)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case _, ok := <-serials:
			if !ok {
				return false
			}
			left := time.Until(deadline)
			if left <= 0 {
				return true
			}
			t.Reset(min(quiet, left))
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// shardBusyMax bounds how long a replica waits for the other members' marks
// of busy before it makes the newest committed set all the same.
const shardBusyMax = 5 * time.Second

// waitForBusy waits, taking the serials that come, while another member is
// busy (it reconciles: its commit of the same change is coming), at most
// shardBusyMax; false when ctx ends or serials is closed.
func (r *Replica) waitForBusy(ctx context.Context, serials <-chan int64) bool {
	deadline := time.Now().Add(shardBusyMax)
	for time.Now().Before(deadline) {
		s := r.currentShard()
		if s == nil || !s.othersBusy(ctx) {
			return true
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case _, ok := <-serials:
			t.Stop()
			if !ok {
				return false
			}
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
	return true
}

// Shards returns the members and this replica's clusters (nil unless it
// runs as a shard).
func (r *Replica) Shards() (members, owned []string) {
	r.mu.Lock()
	s := r.shard
	r.mu.Unlock()
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	members = slices.Clone(s.members)
	s.mu.Unlock()
	return members, s.owned()
}
