package state

// Shards: serve replicas on etcd that share the clusters (serve --shard,
// controller/shard.go). Each cluster is owned by one live replica, which
// alone renders, plans, applies and commits it; a commit replaces only its
// owner's clusters in the stored state, merged with what the other owners
// committed meanwhile, so that no update is lost and no owner waits on a
// global lock.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
)

// Membership is a replica's place among the shards: it lasts while its lease
// lives (the process alive and reaching etcd). The owner keys of its
// clusters are held on the same lease.
type Membership interface {
	// ID is the replica's identity (--replica-id).
	ID() string
	// Done is closed when the membership is lost (its lease expired or was
	// revoked).
	Done() <-chan struct{}
	// Leave revokes the lease: the membership and every owner key go at once.
	Leave(ctx context.Context) error
}

// Sharder is a Coordinator whose replicas share the clusters (etcd).
type Sharder interface {
	Coordinator
	// Join makes id a member, on a lease of the lock's TTL kept alive while
	// ctx lives; url, when not empty, is the replica's advertised URL (serve
	// --advertise-url), where the other members fetch its clusters' files.
	Join(ctx context.Context, id, url string) (Membership, error)
	// Members lists the live members' identities, sorted.
	Members(ctx context.Context) ([]string, error)
	// MemberURLs maps each live member that advertised a URL to it.
	MemberURLs(ctx context.Context) (map[string]string, error)
	// WatchMembers sends the members now and after every change, until ctx
	// ends (then the channel is closed).
	WatchMembers(ctx context.Context) <-chan []string
	// Claim takes the owner key of cluster for m, unless another live member
	// holds it; it returns the holder's identity (m's when m holds it).
	Claim(ctx context.Context, m Membership, cluster string) (string, error)
	// Release gives up m's owner keys of clusters (those m does not hold are
	// left alone).
	Release(ctx context.Context, m Membership, clusters []string) error
	// SetBusy says m reconciles (busy) or no longer does: the others wait
	// for the busy members' commits before they make a committed set, so
	// that they make one set for a change that every owner commits, not one
	// for each owner's commit. The mark goes with m's lease.
	SetBusy(ctx context.Context, m Membership, busy bool) error
	// Busy lists the members marked busy.
	Busy(ctx context.Context) ([]string, error)
	// Owners maps each cluster that has an owner key to its holder.
	Owners(ctx context.Context) (map[string]string, error)
	// CommitShard commits next, the state an apply of clusters (each owned
	// by m) wrote over the state of serial prev. When the stored state is
	// still at prev, next is stored as it is; otherwise merge makes the state
	// to store from the stored one (MergeShard), which is committed at the
	// stored serial + 1, again until it lands. The commit happens only while
	// m holds the owner key of every one of clusters: a *ShardLostError
	// otherwise, and nothing is written. It returns the state committed and
	// whether it is a merge.
	CommitShard(ctx context.Context, m Membership, clusters []string, prev int64, next *State, merge func(cur *State) (*State, error)) (*State, bool, error)
}

// ShardLostError says an owner lost a cluster before its commit (its lease
// expired: a pause or a cut from etcd; or another member holds it): nothing
// was written.
type ShardLostError struct {
	Backend, Replica, Cluster, Holder string
}

func (e *ShardLostError) Error() string {
	holder := "nobody (its lease expired)"
	if e.Holder != "" {
		holder = e.Holder
	}
	return fmt.Sprintf("replica %s no longer owns cluster %s in %s (its owner key is held by %s); nothing was committed", e.Replica, e.Cluster, e.Backend, holder)
}

// MergingBackend is a Backend whose commit may merge the state given with
// what others committed meanwhile (a shard's, controller/shard.go): Publish
// then commits through CommitMerged, which returns the state committed and
// whether it differs from next (merged with another owner's commit).
type MergingBackend interface {
	Backend
	CommitMerged(ctx context.Context, prev int64, next *State) (*State, bool, error)
}

// SetDeferrer is a MergingBackend that may say, after a commit of the state
// as it is, that its set need not be made now: other owners are about to
// commit their clusters over it (controller/shard.go), and the set of the
// newest serial is made then, as after a merge.
type SetDeferrer interface {
	DeferSet() bool
}

// MergeShard is the state to commit when an apply of clusters wrote next over
// an older state, and cur is the state stored now: cur with the records,
// artifacts and input fingerprints of clusters replaced by next's (a cluster
// next no longer has is removed), at serial cur.Serial + 1. Every other
// cluster stays as cur has it. The clusters' own serials that next set to
// its serial become the new one. Each cluster keeps the revision its
// artifacts are the render of (Revision is set where cur or next left it to
// the state's); the state's Revision and ToolVersion are next's, and it has
// no whole-set input fingerprint (Inputs). manifest.json, which covers the
// whole set, is left to the caller.
func MergeShard(cur, next *State, clusters []string) *State {
	out := &State{
		FormatVersion: "1",
		Lineage:       cur.Lineage,
		Serial:        cur.Serial + 1,
		Revision:      next.Revision,
		ToolVersion:   next.ToolVersion,
		Clusters:      map[string]*ClusterState{},
		Artifacts:     map[string]string{},
	}
	if out.Lineage == "" {
		out.Lineage = next.Lineage
	}
	mine := func(name string) bool { return slices.Contains(clusters, ClusterOf(name)) }
	pin := func(cs *ClusterState, rev string) *ClusterState {
		c := *cs
		if c.Revision == "" {
			c.Revision = rev // its artifacts are the render of the state's revision
		}
		return &c
	}
	for name, cs := range cur.Clusters {
		if !slices.Contains(clusters, name) {
			out.Clusters[name] = pin(cs, cur.Revision)
		}
	}
	for _, name := range clusters {
		if cs := next.Clusters[name]; cs != nil {
			c := pin(cs, next.Revision)
			if c.Serial == next.Serial {
				c.Serial = out.Serial
			}
			out.Clusters[name] = c
		}
	}
	for name, sum := range cur.Artifacts {
		if ClusterOf(name) != "" && !mine(name) {
			out.Artifacts[name] = sum
		}
	}
	for name, sum := range next.Artifacts {
		if mine(name) {
			out.Artifacts[name] = sum
		}
	}
	for _, st := range []*State{cur, next} {
		for c, key := range st.ClusterInputs {
			if slices.Contains(clusters, c) == (st == next) {
				if out.ClusterInputs == nil {
					out.ClusterInputs = map[string]string{}
				}
				out.ClusterInputs[c] = key
			}
		}
	}
	return out
}

// publishMerged is Publish through a MergingBackend. The files are written
// first as objects only, then committed merged with what other owners
// committed meanwhile. When the commit is next as it is, the set is made
// from those objects, renamed to its serial, and current names it, as
// Publish does. When it is a merge, no set is made here (the other owners'
// clusters are newer in the one committed): st becomes the state committed,
// and current stays until the set of that serial is made
// (controller.Materialise, from the objects and the others' clusters'
// files). A set written before a commit that turns out a merge would be
// made in vain: with N shards, most commits are merges.
func (w *Workdir) publishMerged(mb MergingBackend, cur, st *State, objs *objectWriter, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	if st.Serial <= 0 {
		return fmt.Errorf("publishing serial %d: a shard commits the serial after the one it read", st.Serial)
	}
	if err := checkSerialRoom(cur, st); err != nil {
		return err
	}
	if err := os.MkdirAll(w.artifacts(), 0o755); err != nil {
		return err
	}
	w.clean(cur.Serial)
	if objs == nil {
		objs = &objectWriter{w: w, dirs: map[string]bool{}}
	}
	if err := writeObjectsOnly(objs, write); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
	defer cancel()
	committed, merged, err := mb.CommitMerged(ctx, st.Serial-1, st)
	if err != nil {
		return err
	}
	// The objects are the committed set's now, linked or not: a stage's
	// Discard must not take them (materialise makes the set from them).
	objs.mu.Lock()
	objs.written = nil
	objs.mu.Unlock()
	if merged {
		*st = *committed
		return nil
	}
	if d, ok := mb.(SetDeferrer); ok && d.DeferSet() {
		return nil // as for a merge: the set of the newest serial is made later
	}
	// Each file is the object of its digest: written (and checked) by this
	// publish, or read and checked against the digest here, once. A set of
	// that serial here is not the committed one (this replica's commit is): a
	// leftover, replaced.
	err = w.writeCommittedSet(st, objs, true, func(_ func(string, []byte) error, link func(string, string) error) error {
		for _, name := range slices.Sorted(maps.Keys(st.Artifacts)) {
			if err := objs.checked(name, st.Artifacts[name]); err != nil {
				return err
			}
			if err := link(name, st.Artifacts[name]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return &AppliedError{Serial: st.Serial, Err: err}
	}
	return nil
}

// writeObjectsOnly runs a shard's write before its commit: each file
// becomes an object only (a staged one is written already), its name
// checked, and the objects' directories are synced.
func writeObjectsOnly(objs *objectWriter, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	err := write(func(name string, data []byte) error {
		if err := checkArtifactName(name); err != nil {
			return err
		}
		_, err := objs.object(data)
		return err
	}, func(name, sum string) error {
		if err := checkArtifactName(name); err != nil {
			return err
		}
		if !objs.staged(sum) && !objs.keep(name, sum) {
			return fmt.Errorf("%s: object %.12s: %w", name, sum, ErrNotStaged)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return objs.syncDirs()
}

// ReadObject returns the content whose sha256 is sum (hex) from the work
// directory's objects, checked against sum; an error when it has none or it
// differs. A replica makes an applied set from the objects it already has
// instead of rendering their clusters again.
func (w *Workdir) ReadObject(sum string) ([]byte, error) {
	if !isLowerHex(sum, 2*sha256.Size) {
		return nil, fmt.Errorf("%q is not a sha256", sum)
	}
	data, err := os.ReadFile(w.objectPath(sum))
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, errors.New("the object " + sum + " differs from its digest")
	}
	return data, nil
}

// HasObjects says whether the work directory has an object for every digest
// of names in digests (path → sha256).
func (w *Workdir) HasObjects(digests map[string]string, names []string) bool {
	for _, name := range names {
		sum := digests[name]
		if !isLowerHex(sum, 2*sha256.Size) {
			return false
		}
		if _, err := os.Stat(w.objectPath(sum)); err != nil {
			return false
		}
	}
	return true
}

// PutObjects stores each of datas as an object of the work directory, named
// by its sha256, and syncs the objects' directories: a shard replica keeps
// there the files of another owner's clusters it fetched (checked against
// the committed digests first), and makes the committed set from them.
func (w *Workdir) PutObjects(datas [][]byte) error {
	objs := &objectWriter{w: w, dirs: map[string]bool{}}
	for _, data := range datas {
		if _, err := objs.object(data); err != nil {
			return err
		}
	}
	for _, d := range slices.Sorted(maps.Keys(objs.dirs)) {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
