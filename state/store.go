package state

// The work directory:
//
//	<workdir>/lock                     flock(2)ed by a writer; its holder as JSON
//	<workdir>/state.json               symlink → artifacts/current/.state.json
//	<workdir>/artifacts/<serial>/      an applied set (the render layout) + .state.json
//	                                   + .seal (store_seal.go)
//	<workdir>/artifacts/current        symlink → <serial>
//	<workdir>/objects/<sha[:2]>/<sha>  each distinct file of the sets, once
//	<workdir>/trees/<id>/              each distinct node directory of the sets, once
//	<workdir>/nodesets/<id>/           each distinct nodes/ directory of a cluster, once
//
// The state and the artifacts it describes must switch together: with two files
// renamed one after the other, a crash between the renames would leave a state
// that does not describe the current set. So the state lives inside its set and
// is read through current (state.json is a link for people, made after the
// switch): a new set (files and state) is written and fsynced under a temporary
// name, renamed to its serial, and the rename of a new symlink over current is
// the single atomic commit point. A crash before it leaves the previous set and
// state; after it, the new ones. The last 5 sets are kept; leftovers of crashed
// runs are removed by the next publish. The set current names is never removed,
// and a state that disagrees with its set stops every writer (DamagedError).
//
// A set costs what it changes: its files are hard links to objects named by the
// sha256 of their content, so the sets share unchanged files and a publish
// writes only the new contents. An object is written like a file of a set
// (written, fsynced, renamed into place, its directory fsynced) before any set
// links it, is checked against the content (size and bytes) before it is
// linked again and rewritten when it differs or is missing — but a file the
// applied set keeps unchanged by its stat is linked by its digest unread
// (store_seal.go: the set's seal) — and is removed once
// no set links it (st_nlink 1), after the commit. Where hard links fail (EXDEV,
// EPERM, ENOTSUP) the sets are full copies, as before, and Warn says so once.
// A set's node directories are symlinks to shared trees (store_trees.go), and
// a cluster's nodes/ directory a symlink to a shared nodeset of those links
// (store_nodesets.go); sets are read through SetFS, which follows those links
// and no other.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fuelsync/fuelsync/diff"
)

// Keep is how many applied sets the work directory keeps.
const Keep = 5

// State is <workdir>/state.json.
type State struct {
	FormatVersion string `json:"format_version"`
	// Lineage is made at the first apply and kept: a plan made against another
	// work directory's state is refused.
	Lineage string `json:"lineage"`
	// Serial counts applies; 0 is nothing applied yet.
	Serial int64 `json:"serial"`
	// Revision is the applied source revision: a commit sha, or a working
	// tree's ("<sha>+dirty.<digest>", or "working-tree").
	Revision    string                   `json:"revision"`
	ToolVersion string                   `json:"tool_version"`
	Clusters    map[string]*ClusterState `json:"clusters"`
	// Artifacts are the applied files (path → sha256), manifest.json included.
	Artifacts map[string]string `json:"artifacts"`
	// Inputs is the input fingerprint of the applied set (InputsKey): a
	// revision whose inputs have this fingerprint renders to these artifacts.
	// Empty in a state written before fingerprints, or when the applied
	// revision could not be fingerprinted.
	Inputs string `json:"inputs,omitempty"`
	// ClusterInputs is the input fingerprint of each cluster's applied
	// artifacts (ClusterInputsKey): a revision in which a cluster has this
	// fingerprint renders it to these artifacts, so a plan keeps them without
	// rendering the cluster. Empty as Inputs is.
	ClusterInputs map[string]string `json:"cluster_inputs,omitempty"`
}

// ClusterState is what the state records of a cluster.
type ClusterState struct {
	// Nodes are the deployed nodes with their roles (Fuel's deployed_roles).
	Nodes map[string]NodeState `json:"nodes"`
	// Primary maps each tag with a primary to the node holding it.
	Primary map[string]string `json:"primary"`

	// Revision is the source revision the cluster's applied artifacts are
	// the render of, as of the last state written ("" in a state written
	// before clusters were units: the state's Revision). A held cluster keeps
	// the revision it was last applied at.
	Revision string `json:"revision,omitempty"`
	// Serial is the serial at which the cluster's artifacts last changed.
	Serial int64 `json:"serial,omitempty"`
	// Status is the cluster's status when the state was written: synced,
	// held, suspended, awaiting_approval or out_of_sync ("" in an older
	// state: synced).
	Status string `json:"status,omitempty"`
	// Problems say why the cluster is not synced (file:line:col: error:
	// message, at most MaxClusterProblems of them).
	Problems []string `json:"problems,omitempty"`
	// File is the cluster's spec file, so that an error in it holds the
	// cluster even when the file no longer says which cluster it is.
	File string `json:"file,omitempty"`
	// Pending is the plan that waits for approval (sync: manual).
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is a cluster's plan awaiting approval: fuelsync approve applies the
// render of Revision whose artifacts have the digest Digest, and nothing else.
type Pending struct {
	Revision string `json:"revision"`
	// Digest is operation.ArtifactsDigest of the cluster's planned artifacts.
	Digest string `json:"digest"`
	// Summary counts the plan's changes.
	Summary diff.Summary `json:"summary"`
	// Base is operation.ArtifactsDigest of the cluster's applied artifacts the plan
	// was made against: approve refuses it once they have changed.
	Base string `json:"base"`
}

// renderInputs is what a render reads of a cluster's applied state: the
// deployed nodes and primary tags (ClusterInputsKey, InputsKey).
type renderInputs struct {
	Nodes   map[string]NodeState `json:"nodes"`
	Primary map[string]string    `json:"primary"`
}

// StatusOf is the cluster's recorded status ("synced" in a state written
// before statuses were).
func (cs *ClusterState) StatusOf() string {
	if cs == nil {
		return ""
	}
	if cs.Status == "" {
		return StatusSynced
	}
	return cs.Status
}

// NodeState is a deployed node.
type NodeState struct {
	ID    int      `json:"id"`
	Roles []string `json:"roles"`
}

// Primary implements render.AppliedState: the node primary for tag.
func (st *State) Primary(cluster, tag string) (string, bool) {
	if st == nil || st.Clusters[cluster] == nil {
		return "", false
	}
	n, ok := st.Clusters[cluster].Primary[tag]
	return n, ok
}

// Deployed implements render.AppliedState.
func (st *State) Deployed(cluster, node string) bool {
	if st == nil || st.Clusters[cluster] == nil {
		return false
	}
	_, ok := st.Clusters[cluster].Nodes[node]
	return ok
}

// Empty is the state of a work directory where nothing is applied, and what a
// Backend returns when it stores none (serial 0, no lineage).
func Empty() *State {
	return &State{FormatVersion: "1", Clusters: map[string]*ClusterState{}, Artifacts: map[string]string{}}
}

// NewLineage makes a lineage for a state's first apply: 16 random bytes, in
// hex.
func NewLineage() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Workdir is a work directory.
type Workdir struct {
	Dir string
	// Reinit makes a damaged work directory (see DamagedError) read as a fresh
	// one: the next publish starts a new lineage, at a serial above every set on
	// disk, so no existing set is overwritten. Deployed nodes and primary tags of
	// the lost state are forgotten: it is the explicit "start over".
	Reinit bool
	// Backend, when set, keeps the state and the lock (etcd); the work
	// directory keeps the applied sets, which the state's manifest describes.
	Backend Backend
	// Warn, when set, is told things worth a user's attention that are not
	// errors (hard links unsupported: the sets are full copies), once each.
	Warn func(msg string)

	noLinks    atomic.Bool
	noSymlinks atomic.Bool
	// claimed is set once the directory is known to be fuelsync's (its
	// marker found or written, store_owner.go): nothing is written into or
	// removed from it before.
	claimed atomic.Bool
	warnMu  sync.Mutex
	warned  map[string]bool
}

// warn tells Warn msg, once per Workdir.
func (w *Workdir) warn(msg string) {
	w.warnMu.Lock()
	defer w.warnMu.Unlock()
	if w.Warn == nil || w.warned[msg] {
		return
	}
	if w.warned == nil {
		w.warned = map[string]bool{}
	}
	w.warned[msg] = true
	w.Warn(msg)
}

// Open returns the work directory dir (created by the first lock).
func Open(dir string) *Workdir { return &Workdir{Dir: dir} }

func (w *Workdir) artifacts() string { return filepath.Join(w.Dir, "artifacts") }

// objects holds the content of the sets' files, each once, by sha256.
func (w *Workdir) objects() string { return filepath.Join(w.Dir, "objects") }

// objectPath is the object of content whose sha256 is sum (hex; the caller
// knows it is one).
func (w *Workdir) objectPath(sum string) string { return filepath.Join(w.objects(), sum[:2], sum) }

// CurrentDir is the current applied set.
func (w *Workdir) CurrentDir() string { return filepath.Join(w.artifacts(), "current") }

// SetDir is the applied set of serial n.
func (w *Workdir) SetDir(n int64) string {
	return filepath.Join(w.artifacts(), strconv.FormatInt(n, 10))
}

// stateLink is what <workdir>/state.json points to.
var stateLink = filepath.Join("artifacts", "current", ".state.json")

// DamagedError says the work directory's state cannot be trusted: the current
// link is missing beside applied sets, points nowhere, or names a set whose state
// disagrees with it. Nothing is changed while it stands: no set is removed and no
// new one published, unless the work directory is opened with Reinit.
type DamagedError struct {
	Dir     string
	Problem string
	// Remedy says how to repair it by hand.
	Remedy string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the work directory %s is damaged: %s. Nothing was changed. %s Or start over with a new lineage with --reinit (the deployed nodes and primary tags it recorded are forgotten).",
		e.Dir, e.Problem, e.Remedy)
}

// ReadState returns the applied state: the state inside the set that
// artifacts/current names (state.json is a link to it, for people); an empty
// state when nothing was applied. A *DamagedError when the two disagree or the
// current link is lost beside applied sets (a fresh state with Reinit). A
// *NotWorkdirError when the directory is not fuelsync's (see claim).
func (w *Workdir) ReadState() (*State, error) {
	if w.Backend != nil {
		ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
		defer cancel()
		return w.Backend.ReadState(ctx)
	}
	// A directory that is not fuelsync's is no state, not an empty one.
	if !w.claimed.Load() {
		if err := w.checkOwnable(); err != nil {
			return nil, err
		}
	}
	st, _, err := w.readStateOrFresh()
	return st, err
}

// ReadStateUnder is ReadState for the holder of lock l (nil: none): the
// state Tidy read under l, when it did and nothing was published under l
// since, is not read again. Nothing but fuelsync's writers, who take the
// lock, changes the applied state; a fleet's is megabytes of JSON, which an
// apply parsed three times (Tidy, its plan, its publish). The state is
// shared: its holders do not change it. With a Backend, the state is read.
func (w *Workdir) ReadStateUnder(l *Lock) (*State, error) {
	if st := l.applied(w); st != nil {
		return st, nil
	}
	return w.ReadState()
}

// stateParses counts the applied states readState parsed (tests).
var stateParses atomic.Int64

// readStateOrFresh is readState, or with Reinit a fresh state in place of a
// damaged one (intact false).
func (w *Workdir) readStateOrFresh() (st *State, intact bool, err error) {
	st, err = w.readState()
	var damaged *DamagedError
	if errors.As(err, &damaged) && w.Reinit {
		fresh := Empty()
		if sets := w.sets(); len(sets) > 0 {
			fresh.Serial = sets[len(sets)-1]
		}
		return fresh, false, nil
	}
	return st, err == nil, err
}

func (w *Workdir) readState() (*State, error) {
	statePath := filepath.Join(w.Dir, "state.json")
	target, err := os.Readlink(w.CurrentDir())
	if errors.Is(err, fs.ErrNotExist) {
		return w.noCurrent(statePath)
	}
	if err != nil {
		return nil, &DamagedError{Dir: w.Dir, Problem: fmt.Sprintf("%s is not a symlink to an applied set (%v)", w.CurrentDir(), err),
			Remedy: w.relinkRemedy()}
	}
	n, perr := strconv.ParseInt(target, 10, 64)
	if perr != nil || n <= 0 || strconv.FormatInt(n, 10) != target {
		return nil, &DamagedError{Dir: w.Dir, Problem: fmt.Sprintf("%s points to %q, which is not an applied set", w.CurrentDir(), target),
			Remedy: w.relinkRemedy()}
	}
	setState := filepath.Join(w.SetDir(n), ".state.json")
	data, err := os.ReadFile(setState)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &DamagedError{Dir: w.Dir, Problem: fmt.Sprintf("%s points to applied set %d, but %s is missing", w.CurrentDir(), n, setState),
			Remedy: w.relinkRemedy()}
	}
	if err != nil {
		return nil, err
	}
	stateParses.Add(1)
	st, err := Parse(setState, data)
	if err != nil {
		return nil, err
	}
	if st.Serial != n {
		return nil, &DamagedError{Dir: w.Dir,
			Problem: fmt.Sprintf("the state %s says serial %d, but it is the state of applied set %d (%s, the set %s names)",
				statePath, st.Serial, n, w.SetDir(n), w.CurrentDir()),
			Remedy: fmt.Sprintf("Restore its serial to %d.", n)}
	}
	// state.json is a link to the set's state; missing after a crash just
	// after the commit point (the next apply links it again). Anything else
	// there was put by hand: it must agree.
	if link, err := os.Readlink(statePath); err == nil && link == stateLink {
		return st, nil
	}
	other, err := os.ReadFile(statePath)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && string(other) == string(data)) {
		return st, nil
	}
	if err != nil {
		return nil, &DamagedError{Dir: w.Dir, Problem: fmt.Sprintf("%s is not the link to %s: %v", statePath, stateLink, err),
			Remedy: fmt.Sprintf("Remove %s (the next apply links it again).", statePath)}
	}
	what := "does not parse"
	if o, err := Parse(statePath, other); err == nil {
		what = fmt.Sprintf("says serial %d, lineage %s", o.Serial, o.Lineage)
	}
	return nil, &DamagedError{Dir: w.Dir,
		Problem: fmt.Sprintf("%s is a copy, not the link to %s, and it differs from the applied state: it %s, where applied set %d (the set %s names) has serial %d, lineage %s",
			statePath, stateLink, what, n, w.CurrentDir(), st.Serial, st.Lineage),
		Remedy: fmt.Sprintf("Remove %s to keep the applied state of set %d (the next apply links it again).", statePath, n)}
}

// noCurrent is the state of a work directory without artifacts/current: nothing
// applied yet, or a first apply that crashed before its commit point (it may have
// left set 1, never switched to, which the next publish removes). Anything else
// (state.json present, or other sets) means the link was lost.
func (w *Workdir) noCurrent(statePath string) (*State, error) {
	sets := w.sets()
	_, serr := os.Lstat(statePath)
	if serr != nil && (len(sets) == 0 || len(sets) == 1 && sets[0] == 1) {
		return Empty(), nil
	}
	problem := fmt.Sprintf("%s is missing", w.CurrentDir())
	if len(sets) > 0 {
		problem += fmt.Sprintf(" beside applied sets %s", serialList(sets))
	}
	if serr == nil {
		problem += fmt.Sprintf(", while %s exists", statePath)
	}
	return nil, &DamagedError{Dir: w.Dir, Problem: problem, Remedy: w.relinkRemedy()}
}

// relinkRemedy says how to point current at the newest set again.
func (w *Workdir) relinkRemedy() string {
	sets := w.sets()
	if len(sets) == 0 {
		return fmt.Sprintf("No applied set is left in %s.", w.artifacts())
	}
	n := sets[len(sets)-1]
	return fmt.Sprintf("To resume from the newest applied set, %d: ln -sfn %d %s.", n, n, w.CurrentDir())
}

func serialList(sets []int64) string {
	parts := make([]string, len(sets))
	for i, n := range sets {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ", ")
}

// Parse parses a state document (state.json, or the output of state pull);
// name is for messages. A document over MaxSize is refused.
func Parse(name string, data []byte) (*State, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s is %d bytes, over the %d a state may be", name, len(data), MaxSize)
	}
	st := Empty()
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", name, err)
	}
	if st.FormatVersion != "1" {
		return nil, fmt.Errorf("%s has format_version %q; this fuelsync reads 1", name, st.FormatVersion)
	}
	return st, nil
}

// CurrentSerial is the serial of the set artifacts/current names, 0 for none.
func (w *Workdir) CurrentSerial() int64 {
	target, err := os.Readlink(w.CurrentDir())
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(target, 10, 64)
	return n
}

// AppliedError says Publish switched current to the new set (the apply
// happened) but a step after that commit point failed.
type AppliedError struct {
	Serial int64
	Err    error
}

func (e *AppliedError) Error() string {
	return fmt.Sprintf("serial %d was applied, but a step after the switch failed: %v", e.Serial, e.Err)
}

func (e *AppliedError) Unwrap() error { return e.Err }

// do runs f as the step name.
func do(name string, f func() error) error {
	if err := step(name); err != nil {
		return err
	}
	return f()
}

// Publish writes a new applied set with state st (its serial the current one + 1)
// and switches to both at once. write is called once; its put may be called from
// several goroutines and copies data before returning. The caller holds lock l.
//
// The order of the steps is what makes a crash at any of them harmless: the set
// is written and synced under a temporary name, renamed to its serial and the
// directory synced; then a new symlink is renamed over current (the commit
// point) and synced; only then is state.json linked (when it is not yet) and are
// old sets pruned. Before the commit point the next run reads the previous state
// and removes the leftovers; after it, the new state, whatever followed.
func (w *Workdir) Publish(l *Lock, st *State, write func(put func(name string, data []byte) error) error) error {
	return w.publish(l, st, false, nil, withoutLink(write))
}

// PublishStaged is Publish for a set some of whose files were staged (s, made
// under the same lock): write's link makes a file of the set the object of
// content sum that s holds (Stage.Put), and its put works as Publish's.
func (w *Workdir) PublishStaged(l *Lock, st *State, s *Stage, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	if s == nil || s.w != w || s.l != l {
		return errors.New("publishing staged files needs the stage of the same lock")
	}
	return w.publish(l, st, false, s.objs, write)
}

// withoutLink is a write of Publish as one of PublishStaged.
func withoutLink(write func(put func(name string, data []byte) error) error) func(put func(name string, data []byte) error, link func(name, sum string) error) error {
	return func(put func(name string, data []byte) error, _ func(name, sum string) error) error {
		return write(put)
	}
}

// checkSerialRoom refuses to publish st over cur when cur leaves no serial
// after it, or st is past the last one (NextSerial): a serial never wraps.
func checkSerialRoom(cur, st *State) error {
	if _, err := NextSerial(cur.Serial); err != nil {
		return err
	}
	if st.Serial > MaxSerial {
		return fmt.Errorf("publishing serial %d: serials end at %d (2^53); nothing was changed", st.Serial, int64(MaxSerial))
	}
	return nil
}

// publish is Publish; a push may skip serials. objs, when not nil, holds the
// objects staged for the set.
func (w *Workdir) publish(l *Lock, st *State, push bool, objs *objectWriter, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	if l == nil || l.w != w {
		return errors.New("publishing needs the work directory's lock")
	}
	if err := w.claim(); err != nil {
		return err
	}
	cur, err := w.ReadStateUnder(l)
	l.read = nil // whatever follows, read anew
	if err != nil {
		return err
	}
	if objs == nil {
		objs = w.newObjectWriter(l)
	}
	// Its unchanged files are kept by their stat (store_seal.go).
	objs.follow(cur)
	if mb, ok := w.Backend.(MergingBackend); ok && !push {
		return w.publishMerged(mb, cur, st, objs, write) // a shard's (shard.go)
	}
	if err := checkSerialRoom(cur, st); err != nil {
		return err
	}
	if st.Serial != cur.Serial+1 && !(push && st.Serial > cur.Serial) {
		return fmt.Errorf("publishing serial %d over serial %d: serials must follow each other", st.Serial, cur.Serial)
	}
	if st.Lineage == "" {
		st.Lineage = NewLineage()
	}
	final, err := w.placeSet(cur, st, objs, write)
	if err != nil {
		return err
	}
	if w.Backend != nil {
		return w.commitToBackend(cur, st, final, objs)
	}
	return w.switchCurrent(st, objs)
}

// placeSet writes the set of st (Publish's steps before the commit point):
// under a temporary name, synced, then renamed to its serial (final) and the
// artifacts directory synced. The leftovers of a crashed run are removed
// first; a failed step leaves no temporary set behind.
func (w *Workdir) placeSet(cur, st *State, objs *objectWriter, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) (final string, err error) {
	if err := do("mkdir artifacts", func() error { return os.MkdirAll(w.artifacts(), 0o755) }); err != nil {
		return "", err
	}
	w.clean(cur.Serial)
	if err := step("mkdir set"); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(w.artifacts(), ".tmp-"+strconv.FormatInt(st.Serial, 10)+"-")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	// MkdirTemp makes it 0700; a set is as readable as the files in it.
	if err := do("chmod set", func() error { return os.Chmod(tmp, 0o755) }); err != nil {
		return "", err
	}
	if err := w.writeSet(tmp, st, objs, write); err != nil {
		return "", err
	}
	final = w.SetDir(st.Serial)
	// A set of a crashed run, never current.
	if err := do("remove "+filepath.Base(final), func() error { return os.RemoveAll(final) }); err != nil {
		return "", err
	}
	if err := do("rename set", func() error { return os.Rename(tmp, final) }); err != nil {
		return "", err
	}
	ok = true
	if err := syncDir(w.artifacts()); err != nil {
		return "", err
	}
	return final, nil
}

// commitToBackend is Publish's commit point under a Backend: the set (final)
// is written, the state switches there; current follows it here, and the old
// sets are pruned (objs: the set's object writer).
func (w *Workdir) commitToBackend(cur, st *State, final string, objs *objectWriter) error {
	ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
	defer cancel()
	if err := do("commit state", func() error { return w.Backend.Commit(ctx, cur.Serial, st) }); err != nil {
		// A refused commit leaves a set nothing names. Any other failure
		// (no answer) may still have committed: the set stays, and the
		// next run removes it if the backend's serial is below it.
		var stale *StaleStateError
		if errors.As(err, &stale) {
			_ = os.RemoveAll(final)
		}
		return err
	}
	if err := w.relink(st.Serial); err != nil {
		return &AppliedError{Serial: st.Serial, Err: err}
	}
	w.prune(st.Serial, objs)
	return nil
}

// switchCurrent is Publish's commit point without a Backend: a new symlink
// renamed over current names the set of st, synced; then state.json is linked
// and the old sets are pruned (objs: the set's object writer). A step after
// the rename fails as an AppliedError.
func (w *Workdir) switchCurrent(st *State, objs *objectWriter) error {
	linkTmp := filepath.Join(w.artifacts(), ".link-current-"+NewLineage()[:8])
	if err := do("symlink current", func() error { return os.Symlink(strconv.FormatInt(st.Serial, 10), linkTmp) }); err != nil {
		return err
	}
	if err := do("rename current", func() error { return os.Rename(linkTmp, w.CurrentDir()) }); err != nil {
		os.Remove(linkTmp)
		return err
	}
	if err := syncDir(w.artifacts()); err != nil {
		return &AppliedError{Serial: st.Serial, Err: err}
	}
	if err := w.linkState(); err != nil {
		return &AppliedError{Serial: st.Serial, Err: err}
	}
	w.prune(st.Serial, objs)
	return nil
}

// LinkSet makes current name the applied set of serial n when the work
// directory has it (a state a Backend committed), and reports whether it has
// it. The work directory is claimed first (store_owner.go).
func (w *Workdir) LinkSet(n int64) (bool, error) {
	if err := w.claim(); err != nil {
		return false, err
	}
	if _, err := os.Stat(w.SetDir(n)); err != nil {
		return false, nil
	}
	if w.CurrentSerial() != n {
		return true, w.relink(n)
	}
	return true, nil
}

// WriteSet writes the applied set of st, a state a Backend committed (another
// replica applied it), as Publish writes one: write is called once, its put
// as Publish's; the set is synced, renamed to its serial, and current names
// it. There is no commit point of its own (the state is the Backend's). The
// Keep newest sets are kept, as an apply keeps them.
func (w *Workdir) WriteSet(st *State, write func(put func(name string, data []byte) error) error) error {
	return w.writeCommittedSet(st, nil, false, withoutLink(write))
}

// WriteSetLinked is WriteSet whose write may also link: link(name, sum) makes
// the file name of the set the object sum that the work directory holds,
// read and checked against sum first (once per object; not read when the
// current set holds it unchanged by its stat, store_seal.go), without the
// caller reading it. A replica makes most of a committed set so, from the objects of
// the sets before.
func (w *Workdir) WriteSetLinked(st *State, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	objs := &objectWriter{w: w, dirs: map[string]bool{}}
	var follow sync.Once
	return w.writeCommittedSet(st, objs, false, func(put func(string, []byte) error, link func(string, string) error) error {
		return write(put, func(name, sum string) error {
			// Once the new set has its own seal time (writeCommittedSet),
			// it follows the current set.
			follow.Do(func() { objs.follow(nil) })
			if err := objs.checked(name, sum); err != nil {
				return err
			}
			return link(name, sum)
		})
	})
}

// checked makes sure the object sum may be linked as name of the set o
// writes: it is the applied set's file kept unchanged by its stat (unread,
// store_seal.go), or it is read and checked against sum (once per object).
func (o *objectWriter) checked(name, sum string) error {
	if o.keep(name, sum) {
		return nil
	}
	if err := o.done.do(sum, func() error { return o.w.checkObject(sum) }); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// checkObject is ReadObject without keeping the content: the object is
// hashed as it is read, with a buffer of its own.
func (w *Workdir) checkObject(sum string) error {
	if !isLowerHex(sum, 2*sha256.Size) {
		return fmt.Errorf("%q is not a sha256", sum)
	}
	readHook(w.objectPath(sum))
	f, err := os.Open(w.objectPath(sum))
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	buf := checkBuffers.Get().(*[]byte)
	_, err = io.CopyBuffer(h, struct{ io.Reader }{f}, *buf) // not os.File's WriteTo, which takes a buffer of its own
	checkBuffers.Put(buf)
	if err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != sum {
		return errors.New("the object " + sum + " differs from its digest")
	}
	return nil
}

// checkBuffers are checkObject's read buffers.
var checkBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// writeCommittedSet is WriteSet and WriteSetLinked, and the set a shard's
// publish makes of its commit (shard.go): written and synced under a
// temporary name, renamed to its serial, and named by current; the older
// sets are pruned. replace first removes a set of that serial left there.
func (w *Workdir) writeCommittedSet(st *State, objs *objectWriter, replace bool, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	if err := os.MkdirAll(w.artifacts(), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(w.artifacts(), ".tmp-"+strconv.FormatInt(st.Serial, 10)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after the rename, nothing is left there
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	objs = sealFromDir(w, objs, tmp)
	if err := w.writeSet(tmp, st, objs, write); err != nil {
		return err
	}
	if replace {
		if err := os.RemoveAll(w.SetDir(st.Serial)); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, w.SetDir(st.Serial)); err != nil {
		return err
	}
	if err := syncDir(w.artifacts()); err != nil {
		return err
	}
	if err := w.relink(st.Serial); err != nil {
		return err
	}
	w.prune(st.Serial, objs)
	return nil
}

// relink points current at set n, then state.json at its state (a work
// directory under a Backend, where current follows the backend's state).
func (w *Workdir) relink(n int64) error {
	if err := replaceSymlink(w.artifacts(), "current", strconv.FormatInt(n, 10)); err != nil {
		return err
	}
	return w.linkState()
}

// linkState makes <workdir>/state.json the link to the current set's state.
func (w *Workdir) linkState() error {
	if err := replaceSymlink(w.Dir, "state.json", stateLink); err != nil {
		return fmt.Errorf("linking %s: %w", filepath.Join(w.Dir, "state.json"), err)
	}
	return nil
}

// writeSet writes the files (links to their objects; node directories as
// links to their trees) and the state into dir and syncs them all, the
// objects' and trees' directories first. objs, when not nil, holds the
// objects staged for the set (write's link names them).
func (w *Workdir) writeSet(dir string, st *State, objs *objectWriter, write func(put func(name string, data []byte) error, link func(name, sum string) error) error) error {
	if objs == nil {
		objs = &objectWriter{w: w, dirs: map[string]bool{}}
	}
	s := &setWriter{w: w, dir: dir, objs: objs, dirs: map[string]bool{dir: true}}
	put := func(name string, data []byte) error {
		if data == nil {
			data = []byte{}
		}
		return s.place(name, data, "")
	}
	link := func(name, sum string) error { return s.place(name, nil, sum) }
	stop := objs.prefetch()
	err := write(put, link)
	stop()
	if err != nil {
		return err
	}
	// The state is encoded while the node directories are linked (nothing
	// changes it from here on).
	type encoding struct {
		data []byte
		err  error
	}
	encoded := make(chan encoding, 1)
	go func() {
		data, err := encodeState(st)
		encoded <- encoding{data, err}
	}()
	err = objs.linkNodeDirs(dir, &s.nodes, s.mkdir)
	enc := <-encoded
	if err != nil {
		return err
	}
	if enc.err != nil {
		return enc.err
	}
	if err := writeSynced(filepath.Join(dir, ".state.json"), append(enc.data, '\n')); err != nil {
		return err
	}
	if err := objs.writeSeal(dir); err != nil {
		return err
	}
	if err := objs.syncDirs(); err != nil {
		return err
	}
	for d := range s.dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// setWriter puts the files of one set into its directory dir, as writeSet's
// put and link are called (from several goroutines).
type setWriter struct {
	w    *Workdir
	dir  string
	objs *objectWriter
	mu   sync.Mutex
	// dirs are the directories made in the set (and dir), to be synced.
	dirs  map[string]bool
	made  onceMap
	nodes nodeDirs
}

// mkdir makes the set's directory name (slashed) and its parents, once per
// name: a step for each name, whatever order the files come in.
func (s *setWriter) mkdir(name string) error {
	if name == "." {
		return nil
	}
	return s.made.do(name, func() error {
		d := filepath.Join(s.dir, filepath.FromSlash(name))
		if err := do("mkdir "+name, func() error { return os.MkdirAll(d, 0o755) }); err != nil {
			return err
		}
		s.mu.Lock()
		for ; d != s.dir && !s.dirs[d]; d = filepath.Dir(d) {
			s.dirs[d] = true
		}
		s.mu.Unlock()
		return nil
	})
}

// place puts name into the set: data, or (data nil) the staged object sum.
func (s *setWriter) place(name string, data []byte, sum string) error {
	if err := checkArtifactName(name); err != nil {
		return err
	}
	objs := s.objs
	if data == nil && !objs.staged(sum) && !objs.keep(name, sum) {
		return fmt.Errorf("%s: object %.12s: %w", name, sum, ErrNotStaged)
	}
	// The files of a node directory are linked as a tree once the set is
	// whole (a node directory with a subdirectory stays a real one).
	if nd, file, ok := nodeDirOf(name); ok && !s.w.noLinks.Load() {
		if data != nil {
			var err error
			if sum, err = objs.object(data); err != nil {
				return err
			}
		}
		s.nodes.add(nd, file, sum)
		return nil
	}
	if parts := strings.SplitN(name, "/", 4); len(parts) == 4 && isNodeDir(strings.Join(parts[:3], "/")) {
		s.nodes.markDeep(strings.Join(parts[:3], "/"))
	}
	if err := s.mkdir(path.Dir(name)); err != nil {
		return err
	}
	p := filepath.Join(s.dir, filepath.FromSlash(name))
	if data == nil {
		return objs.linkObject(sum, p, name)
	}
	return objs.put(p, name, data)
}

// checkArtifactName refuses an artifact name that is not a clean relative
// path inside the set, or that is hidden (the set's own files start with a
// dot).
func checkArtifactName(name string) error {
	clean := path.Clean(name)
	if name == "" || path.IsAbs(name) || clean != name || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("artifact name %q is not a clean relative path", name)
	}
	return nil
}

// syncDirs syncs the object and tree directories o wrote into, in order.
func (o *objectWriter) syncDirs() error {
	for _, d := range slices.Sorted(maps.Keys(o.dirs)) {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func writeSynced(name string, data []byte) error { return writeSyncedMode(name, data, 0o644) }

func writeSyncedMode(name string, data []byte, mode os.FileMode) error {
	if err := step("create " + filepath.Base(name)); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = do("fsync "+filepath.Base(name), f.Sync)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	if err := step("fsync dir " + filepath.Base(dir)); err != nil {
		return err
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// replaceSymlink points dir/name at target, atomically (a new link renamed over).
func replaceSymlink(dir, name, target string) error {
	if cur, err := os.Readlink(filepath.Join(dir, name)); err == nil && cur == target {
		return nil
	}
	tmp := filepath.Join(dir, ".link-"+name+"-"+NewLineage()[:8])
	if err := do("symlink "+name, func() error { return os.Symlink(target, tmp) }); err != nil {
		return err
	}
	if err := do("rename "+name, func() error { return os.Rename(tmp, filepath.Join(dir, name)) }); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// WriteFileAtomic writes name through a synced temporary file renamed over it,
// keeping the mode of the file it replaces (0644 for a new one): a crash leaves
// the old content or the new, never a part.
func WriteFileAtomic(name string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp-"+NewLineage()[:8])
	if err := writeSyncedMode(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(name))
}

// Tidy removes what crashed runs left behind (temporary sets and links, sets
// never switched to) and the sets beyond the Keep newest, and links state.json
// again when a crash came between the switch and its link. It changes nothing in
// a damaged work directory (unless Reinit). The caller holds lock l.
func (w *Workdir) Tidy(l *Lock) error {
	if l == nil || l.w != w {
		return errors.New("tidying needs the work directory's lock")
	}
	if err := w.claim(); err != nil {
		return err
	}
	var st *State
	var intact bool // the state read, not a fresh one in place of a damaged one
	var err error
	if w.Backend != nil {
		st, err = w.ReadState()
	} else {
		st, intact, err = w.readStateOrFresh()
	}
	if err != nil {
		return err
	}
	if intact {
		l.read = st // ReadStateUnder
	}
	// The nodesets, trees and objects are pruned after each publish; here
	// only when a crashed run's set or a set beyond Keep was removed, whose
	// links they may have been (reading every set's links and every object
	// at each lock cost a one-node apply of a fleet a second time what its
	// publish's pruning costs).
	cleaned := w.clean(st.Serial)
	if pruned := w.pruneSets(st.Serial); cleaned || pruned {
		w.pruneShared(w.refs(nil))
		w.pruneObjects(nil)
	}
	if w.Backend != nil {
		// A crash between the backend's commit and the switch of current.
		if _, err := os.Stat(w.SetDir(st.Serial)); err == nil && w.CurrentSerial() != st.Serial {
			return w.relink(st.Serial)
		}
		return nil
	}
	// A crash between the switch and the link of state.json (the state is
	// read once: a second read parsed the whole state again).
	if intact && w.CurrentSerial() > 0 {
		return w.linkState()
	}
	return nil
}

// sets lists the serials of the applied sets on disk, ascending.
func (w *Workdir) sets() []int64 {
	entries, _ := os.ReadDir(w.artifacts())
	var out []int64
	for _, e := range entries {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && n > 0 && strconv.FormatInt(n, 10) == e.Name() && e.IsDir() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// clean removes what crashed runs left: temporary sets and links, and sets newer
// than the current one (written, never switched to). The set artifacts/current
// names is never removed, nor any name fuelsync does not make, nor anything in
// a directory that is not a claimed work directory. It reports whether it
// removed a set (temporary or not).
func (w *Workdir) clean(current int64) (removed bool) {
	if !w.claimed.Load() {
		return false
	}
	for _, dir := range []string{w.artifacts(), w.Dir} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			name := e.Name()
			var ours bool
			if dir == w.Dir {
				ours = isTempName(name, ".link-state.json-", 8, false)
			} else {
				ours = isSetTempName(name) || isTempName(name, ".link-current-", 8, false)
			}
			if ours {
				removed = removed || dir == w.artifacts() && isSetTempName(name)
				_ = do("remove "+name, func() error { return os.RemoveAll(filepath.Join(dir, name)) })
			}
		}
	}
	linked := w.CurrentSerial()
	for _, n := range w.sets() {
		if n > current && n != linked {
			removed = true
			_ = do("remove "+strconv.FormatInt(n, 10), func() error { return os.RemoveAll(w.SetDir(n)) })
		}
	}
	return removed
}

// prune keeps the Keep newest sets, and always the current one and the one
// artifacts/current names; then it removes the nodesets and trees no set
// links, and the objects no set or tree links any more. What objs, the
// writer of the set just published, knows is not looked at again: the
// nodesets it checked (their trees, refs) and the objects it linked
// (pruneObjects).
func (w *Workdir) prune(current int64, objs *objectWriter) {
	if !w.claimed.Load() {
		return
	}
	w.pruneSets(current)
	w.pruneShared(w.refs(objs.checkedNodesets()))
	w.pruneObjects(objs.linked())
}

// pruneSets removes the sets beyond the Keep newest, but the current one and
// the one artifacts/current names, and reports whether it removed one.
func (w *Workdir) pruneSets(current int64) (removed bool) {
	if !w.claimed.Load() {
		return false
	}
	linked := w.CurrentSerial()
	sets := w.sets()
	for i, n := range sets {
		if i < len(sets)-Keep && n != current && n != linked {
			removed = true
			_ = do("remove "+strconv.FormatInt(n, 10), func() error { return os.RemoveAll(w.SetDir(n)) })
		}
	}
	return removed
}

// pruneObjects removes the objects no applied set links (their only link is
// the store's own) and the temporary objects of crashed runs. Sets of a crashed
// run are removed before (clean), so what they linked goes too. Only names of
// the store's layout are removed (objects/<2 hex>/<the sha256 they begin>,
// objects/<2 hex>/.tmp-<sha256>-<8 hex>): a file of another name was not made
// by fuelsync, whatever its link count (a git object in .git/objects/ab/ has
// 38 digits). The objects linked (by sha256) are known to have another link
// (objectWriter.linked) and are not stat'ed: a fleet's publish that keeps
// most of its files spent a system call on each of them here, one after
// another. Were one of them no longer linked, it would stay until a later
// pruning: an object is never removed on a guess.
func (w *Workdir) pruneObjects(linked map[string]bool) {
	if !w.claimed.Load() {
		return
	}
	entries, _ := os.ReadDir(w.objects())
	var fans []string
	for _, fan := range entries {
		if fan.IsDir() && isLowerHex(fan.Name(), 2) {
			fans = append(fans, fan.Name())
		}
	}
	// The fans are read on a few goroutines; what is found is removed in
	// their order, a step at a time, as when one goroutine read them.
	unlinked := make([][]string, len(fans))
	_ = inParallel(len(fans), func(i int) error {
		unlinked[i] = w.unlinkedObjects(fans[i], linked)
		return nil
	})
	for _, paths := range unlinked {
		for _, p := range paths {
			_ = do("remove object "+filepath.Base(p), func() error { return os.Remove(p) })
		}
	}
}

// unlinkedObjects are the paths of the objects in fan (objects/<fan>) that
// pruneObjects removes: no set links them (a link count of 1; those of
// linked are not looked at), and the temporary objects of crashed runs.
func (w *Workdir) unlinkedObjects(fan string, linked map[string]bool) []string {
	dir := filepath.Join(w.objects(), fan)
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		name := e.Name()
		temp := isObjectTempName(fan, name)
		if !temp && (!isObjectName(fan, name) || linked[name]) {
			continue // not the store's, or linked by the set just published
		}
		p := filepath.Join(dir, name)
		if temp || soleLink(p) {
			out = append(out, p)
		}
	}
	return out
}

// soleLink says p is a regular file with one link: an object no set links.
func soleLink(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	n, ok := linkCount(fi)
	return ok && n == 1
}

// objectWriter puts the files of one set: each distinct content is checked or
// written once in the object store, then linked into the set.
type objectWriter struct {
	w    *Workdir
	mu   sync.Mutex
	done onceMap // objects by sha256
	// mkdirs are the object directories (by sha256 prefix) made or found
	// once per publish: two objects with one prefix, written at once, would
	// otherwise both make it (a step more or less from run to run).
	mkdirs      onceMap
	treesDir    onceMap // the trees directory, made or found once
	nodesetsDir onceMap // the nodesets directory, made or found once
	// dirs are the object directories with a new entry, to sync.
	dirs map[string]bool
	// written are the objects it wrote.
	written []string
	// since is when the writer began, by the file system's clock: the seal
	// of the set it writes (zero: no seal). applied is the set whose
	// unchanged files it keeps by their stat (nil: none). See store_seal.go.
	since   time.Time
	applied *appliedSet
	// keptInTreeN counts the applied files keep kept in their trees
	// without their objects being looked at (keptStat.kept and inTree);
	// inTree indexes them by sha256 (keptInTree), made when inTreeN of
	// them were kept.
	keptInTreeN atomic.Int64
	inTreeMu    sync.Mutex
	inTree      map[string]string
	inTreeN     int64
	// nodesets are the nodesets it found to hold their entries, kept
	// unread or built (ensureNodeset): id → the trees they link.
	nodesets sync.Map
}

// onceMap runs a function once per key, from any number of goroutines: the
// calls for one key wait for the first and return its error. The steps of a
// publish are thus the same from run to run (the kill tests count them).
type onceMap struct {
	mu sync.Mutex
	m  map[string]*onceErr
}

type onceErr struct {
	once sync.Once
	err  error
}

func (m *onceMap) do(key string, f func() error) error {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]*onceErr{}
	}
	o := m.m[key]
	if o == nil {
		o = &onceErr{}
		m.m[key] = o
	}
	m.mu.Unlock()
	o.once.Do(func() { o.err = f() })
	return o.err
}

// succeeded says whether f ran for key and returned nil.
func (m *onceMap) succeeded(key string) bool {
	m.mu.Lock()
	o := m.m[key]
	m.mu.Unlock()
	if o == nil {
		return false
	}
	o.once.Do(func() { o.err = errors.New("never made") })
	return o.err == nil
}

// len is the number of keys.
func (m *onceMap) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// put makes the file p (name in the set) with data: a hard link to its object,
// or a copy where links fail.
func (o *objectWriter) put(p, name string, data []byte) error {
	if o.w.noLinks.Load() {
		return writeSynced(p, data)
	}
	sum, err := o.object(data)
	if err != nil {
		return err
	}
	return o.link(sum, p, name, data)
}

// staged says whether the object sum was made (checked, or written) by this
// writer.
func (o *objectWriter) staged(sum string) bool { return o.done.succeeded(sum) }

// object makes the object of data (checked, or written) once per publish, and
// returns its sha256.
func (o *objectWriter) object(data []byte) (string, error) {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	return sum, o.done.do(sum, func() error { return o.ensure(sum, data) })
}

// linkObject makes the file p (name in the set) a link to object sum, or a
// copy of it where links fail.
func (o *objectWriter) linkObject(sum, p, name string) error {
	if o.w.noLinks.Load() {
		return copyObject(o.w.objectPath(sum), sum, p)
	}
	return o.link(sum, p, name, nil)
}

// link makes p a hard link to object sum; where links fail, a copy of data
// (of the object when data is nil).
func (o *objectWriter) link(sum, p, name string, data []byte) error {
	obj := o.w.objectPath(sum)
	copyIt := func() error {
		if data == nil {
			return copyObject(obj, sum, p)
		}
		return writeSynced(p, data)
	}
	err := do("link "+name, func() error { return os.Link(obj, p) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP):
		// The file system has no hard links (or refuses them): copies.
		o.w.noLinks.Store(true)
		o.w.warn(fmt.Sprintf("hard links do not work in %s (%v): every applied set is a full copy", o.w.Dir, errors.Unwrap(err)))
		return copyIt()
	case errors.Is(err, syscall.EMLINK):
		// One content linked more times than the file system allows.
		return copyIt()
	}
	return err
}

// ensure makes the object sum hold data: kept when it does (same size, same
// bytes), written otherwise (missing, or changed in place through a link).
func (o *objectWriter) ensure(sum string, data []byte) error {
	dir := filepath.Join(o.w.objects(), sum[:2])
	obj := filepath.Join(dir, sum)
	if objectHolds(obj, data) {
		return nil
	}
	if err := o.mkdir(sum[:2], dir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".tmp-"+sum+"-"+NewLineage()[:8])
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := o.sealObject(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := do("rename object "+sum, func() error { return os.Rename(tmp, obj) }); err != nil {
		os.Remove(tmp)
		return err
	}
	o.mu.Lock()
	o.dirs[dir] = true
	o.written = append(o.written, obj)
	o.mu.Unlock()
	return nil
}

// mkdir makes the object directory dir (of sha256 prefix prefix) when it is
// missing, once per publish.
func (o *objectWriter) mkdir(prefix, dir string) error {
	return o.mkdirs.do(prefix, func() error {
		if _, err := os.Stat(dir); err == nil {
			return nil
		}
		if err := do("mkdir object "+prefix, func() error { return os.MkdirAll(dir, 0o755) }); err != nil {
			return err
		}
		o.mu.Lock()
		o.dirs[o.w.objects()] = true
		o.dirs[o.w.Dir] = true
		o.mu.Unlock()
		return nil
	})
}

// objectHolds reports whether the file obj is a regular file holding data.
func objectHolds(obj string, data []byte) bool {
	readHook(obj)
	f, err := os.Open(obj)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// ReadApplied reads the files names of the applied set of st, on a few
// goroutines, each as st records it (keptFile: from the object store when the
// set's file was changed in place), and hands each to use with the error of
// its read; before each read, check may refuse the file. The first error check
// or use returns is returned.
func (w *Workdir) ReadApplied(st *State, names []string, check func(name string) error, use func(name string, data []byte, err error) error) error {
	applied := w.SetFS(st.Serial)
	return inParallel(len(names), func(i int) error {
		name := names[i]
		if err := check(name); err != nil {
			return err
		}
		data, err := w.keptFile(applied, name, st.Artifacts[name])
		return use(name, data, err)
	})
}

// keptFile reads the applied file name, whose digest is sum: from the applied
// set, or from the object store when the set's file no longer holds it
// (changed in place).
func (w *Workdir) keptFile(applied fs.FS, name, sum string) ([]byte, error) {
	readHook(name)
	data, err := fs.ReadFile(applied, name)
	if err == nil && digest(data) == sum {
		return data, nil
	}
	// The object of sum, when sum is a sha256 (the state says it; it never becomes
	// a path unless it is one).
	if isLowerHex(sum, 2*sha256.Size) {
		readHook(w.objectPath(sum))
		if obj, oerr := os.ReadFile(w.objectPath(sum)); oerr == nil && digest(obj) == sum {
			return obj, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("keeping the applied %s: %w", name, err)
	}
	return nil, fmt.Errorf("keeping the applied %s: neither the applied set nor the object store holds what the state says any more (changed in place)", name)
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
