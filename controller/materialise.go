package controller

// Making an applied set again: a replica that did not apply a state (a
// follower, a leader after another one, a shard for the other owners'
// clusters) renders its revision with its state, and keeps each file only
// when its sha256 is the digest the state gives it.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

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
	return setMaker{w: w, src: src, st: st, toolVersion: toolVersion}.make(ctx)
}

// materialise makes the applied set of st in the loop's work directory, as
// Materialise does, with the loop's loads (a leader's, a follower's or a
// shard's): its load options and its cache, swept afterwards unless a
// reconcile runs (which sweeps at its end). The loop's onRender is told the
// clusters it renders. With objects (a shard), a cluster whose every file is
// an object of the work directory already (a shard made it, or an earlier set
// had it) is taken from the objects, checked by digest, instead of being
// rendered. A replica that makes the set of each commit renders only the
// clusters it lacks, but loads the whole revision: with the cache it decodes
// only the files the commit changed.
func (l *Loop) materialise(ctx context.Context, st *state.State, objects bool) error {
	l.init()
	defer l.sweepBetween()
	m := setMaker{w: l.Workdir, src: l.Source, st: st, toolVersion: l.ToolVersion, load: l.loadOptions(), objects: objects, onRender: l.onRender}
	return m.make(ctx)
}

// setMaker makes the applied set of st in w from src (Materialise,
// Loop.materialise).
type setMaker struct {
	w           *state.Workdir
	src         source.Source
	st          *state.State
	toolVersion string
	load        loader.Options
	// objects takes a cluster whose every file is an object of w from the
	// objects; onRender, when set, is told the clusters rendered.
	objects  bool
	onRender func([]string)
}

// part is what is rendered of one revision: its clusters, loaded, with the
// diagnostics that hold each.
type part struct {
	rev      string
	repo     *loader.Repo
	held     map[string]hcl.Diagnostics
	clusters []string
}

func (m setMaker) make(ctx context.Context) error {
	st, w := m.st, m.w
	if st.Serial == 0 {
		return nil
	}
	if linked, err := w.LinkSet(st.Serial); err != nil || linked {
		return err
	}
	files := clusterFiles(st)
	stored, byRev := m.sources(files)
	parts, err := m.loadParts(ctx, byRev)
	if err != nil {
		return err
	}
	// Each cluster rendered, its files checked and written, one after the
	// other: the set is made with the memory of a few clusters.
	return w.WriteSetLinked(st, func(put func(string, []byte) error, link func(string, string) error) error {
		return m.write(put, link, files, stored, parts)
	})
}

// clusterFiles are the files of each cluster of st.
func clusterFiles(st *state.State) map[string][]string {
	files := map[string][]string{}
	for name := range st.Artifacts {
		if c := state.ClusterOf(name); c != "" {
			files[c] = append(files[c], name)
		}
	}
	return files
}

// sources says where each cluster's files come from: the objects (stored),
// or the render of its own applied revision (byRev; a held cluster keeps an
// older one's).
func (m setMaker) sources(files map[string][]string) (stored []string, byRev map[string][]string) {
	st := m.st
	byRev = map[string][]string{}
	for name := range st.Artifacts {
		c := state.ClusterOf(name)
		if c == "" || slices.Contains(stored, c) {
			continue
		}
		if m.objects && m.w.HasObjects(st.Artifacts, files[c]) {
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
	return stored, byRev
}

// loadParts loads each revision of byRev, in order.
func (m setMaker) loadParts(ctx context.Context, byRev map[string][]string) ([]part, error) {
	st := m.st
	rsrc, ok := m.src.(source.RevisionSource)
	if len(byRev) > 0 && !ok {
		return nil, fmt.Errorf("the applied set of serial %d is not in %s, and this source cannot read revision %.12s to render it (a working tree is not shared between replicas)", st.Serial, m.w.Dir, st.Revision)
	}
	var parts []part
	for _, revName := range slices.Sorted(maps.Keys(byRev)) {
		clusters := byRev[revName]
		rev, err := rsrc.At(ctx, revName)
		if err != nil {
			return nil, &RevisionGoneError{Revision: revName, Serial: st.Serial, Err: err}
		}
		repo, diags := loader.Load(rev.FS, m.load)
		held, _ := operation.Hold(repo, st, diags)
		if m.onRender != nil {
			m.onRender(clusters)
		}
		parts = append(parts, part{revName, repo, held, clusters})
	}
	return parts, nil
}

// write writes the set with put and link: the files of the stored clusters
// linked from the objects, each read and checked against the committed
// digest (WriteSetLinked) before it is linked; the others rendered from
// parts and checked; the manifest made again and checked. Every file of the
// state must be made.
func (m setMaker) write(put func(string, []byte) error, link func(string, string) error, files map[string][]string, stored []string, parts []part) error {
	st := m.st
	var mu sync.Mutex
	got := map[string]bool{}
	check := func(rev, name string, data []byte) error {
		sum := sha256.Sum256(data)
		if want := st.Artifacts[name]; want != hex.EncodeToString(sum[:]) {
			return &RenderMismatchError{Serial: st.Serial, Revision: rev, File: name, Applied: st.ToolVersion, Replica: m.toolVersion}
		}
		mu.Lock()
		got[name] = true
		mu.Unlock()
		return put(name, data)
	}
	for _, c := range stored {
		for _, name := range files[c] {
			if err := link(name, st.Artifacts[name]); err != nil {
				return fmt.Errorf("making the applied set of serial %d: %w", st.Serial, err)
			}
			got[name] = true
		}
	}
	for _, pt := range parts {
		if err := m.render(pt, check); err != nil {
			return err
		}
	}
	if _, ok := st.Artifacts["manifest.json"]; ok {
		manifest, err := render.Manifest(st.Artifacts, st.Revision, m.toolVersion)
		if err != nil {
			return err
		}
		if err := check(st.Revision, "manifest.json", manifest); err != nil {
			return err
		}
	}
	for name := range st.Artifacts {
		if !got[name] {
			return &RenderMismatchError{Serial: st.Serial, Revision: st.Revision, File: name, Applied: st.ToolVersion, Replica: m.toolVersion}
		}
	}
	return nil
}

// render renders the clusters of pt, each file given to check; a cluster
// held by an error fails the set.
func (m setMaker) render(pt part, check func(rev, name string, data []byte) error) error {
	st := m.st
	_, err := render.Walk(pt.repo, render.Options{Clusters: pt.clusters, State: st}, false, func(wk *render.Walked) error {
		c := wk.Cluster.Name
		if d := append(slices.Clone(pt.held[c]), wk.Diagnostics...); d.HasErrors() {
			return fmt.Errorf("rendering cluster %s of the applied revision %.12s of serial %d: %s", c, pt.rev, st.Serial, operation.ProblemLines(loader.SortDiagnostics(d), 0)[0])
		}
		if wk.Rendered == nil {
			return nil // its files are missing: said in write
		}
		return render.StreamCluster(wk.Rendered, func(name string, data []byte) error { return check(pt.rev, name, data) })
	})
	return err
}
