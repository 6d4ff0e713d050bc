package operation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/operation/decide"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// MakePlan compares the applied state st (its artifacts in the work directory)
// with rs, the render of revision. old, when not nil, is a render of the applied
// revision: it lets the change set say which tag or plugin took tasks away.
func MakePlan(w *state.Workdir, st *state.State, rs []*render.Rendered, old []*render.Rendered, revision, toolVersion string) (*Plan, error) {
	in := PlanInput{Rendered: rs, Revision: revision, ToolVersion: toolVersion}
	if old != nil {
		in.Applied = func([]string) []*render.Rendered { return old }
	}
	return PlanWith(w, st, in)
}

// PlanInput is what PlanWith compares with the applied state.
type PlanInput struct {
	// Rendered is the render of Revision: every cluster but Kept.
	Rendered []*render.Rendered
	// Kept are the clusters not rendered because their inputs are those of
	// the applied state (Reuse): their applied artifacts are their render.
	Kept []string
	// Applied, when not nil, renders the applied revision again, limited to
	// the clusters given (those whose artifacts differ; nil when it cannot):
	// it lets the change set say which tag or plugin took tasks away.
	Applied func(clusters []string) []*render.Rendered
	// Revision is the source revision rendered, ToolVersion the tool's.
	Revision, ToolVersion string
	// Unreadable says the applied set is not in the work directory and cannot
	// be made again: the plan compares with the state's digests alone, and
	// what it cannot compare is planned as changed (diff.Side.Unreadable).
	Unreadable bool
}

// PlanWith compares the applied state st (its artifacts in the work
// directory) with in: a render of in.Revision, and the clusters it keeps.
// Each rendered cluster is compared on its own, as an Operation compares them.
func PlanWith(w *state.Workdir, st *state.State, in PlanInput) (*Plan, error) {
	// The applied set of st by its serial, not through current, which another
	// apply may switch meanwhile.
	if _, err := os.Stat(w.SetDir(st.Serial)); err != nil && w.Backend != nil && st.Serial > 0 && !in.Unreadable {
		return nil, fmt.Errorf("the state in %s is at serial %d, but its applied set %s is not in this work directory (another work directory applied it): run plan and apply from that one, or with its artifacts",
			w.Backend, st.Serial, w.SetDir(st.Serial))
	}
	applied := w.SetFS(st.Serial)
	old := byCluster(st.Artifacts)
	digests := map[string]string{}
	var changes []*diff.ClusterChange
	for _, r := range in.Rendered {
		c := r.Model.Cluster.Name
		var oldRender func() *render.Rendered
		if in.Applied != nil {
			oldRender = func() *render.Rendered {
				for _, or := range in.Applied([]string{c}) {
					if or.Model.Cluster.Name == c {
						return or
					}
				}
				return nil
			}
		}
		d, cc, err := compareCluster(r, old[c], applied, in.Unreadable, oldRender, nil)
		if err != nil {
			return nil, fmt.Errorf("comparing with the applied artifacts of serial %d in %s: %w", st.Serial, w.Dir, err)
		}
		maps.Copy(digests, d)
		if cc != nil {
			changes = append(changes, cc)
		}
	}
	more, _, err := assemble(st, applied, in.Unreadable, digests, in.Kept, in.Revision, in.ToolVersion)
	if err != nil {
		return nil, err
	}
	cs := changeSet(append(changes, more...))
	return &Plan{
		FormatVersion:  PlanFormatVersion,
		Lineage:        st.Lineage,
		Serial:         st.Serial,
		Revision:       in.Revision,
		ToolVersion:    in.ToolVersion,
		Artifacts:      digests,
		ChangesPresent: !cs.Empty(),
		Changes:        cs,
	}, nil
}

// manifestOf encodes the manifest of a set (render.Manifest), telling the
// failpoint OperationManifest (tests count the encodings).
func manifestOf(digests map[string]string, revision, toolVersion string) ([]byte, error) {
	if err := failpoint.Inject(failpoint.OperationManifest); err != nil {
		return nil, err
	}
	return render.Manifest(digests, revision, toolVersion)
}

// assemble completes digests, the files of the clusters rendered, into the
// digests of a whole set: the applied files of the kept clusters, and the
// manifest of the set. It returns the changes of the clusters of st that
// have no file left (removed), and the manifest.
func assemble(st *state.State, applied fs.FS, unreadable bool, digests map[string]string, kept []string, revision, toolVersion string) ([]*diff.ClusterChange, []byte, error) {
	old := byCluster(st.Artifacts)
	for _, c := range kept {
		for name, sum := range old[c] {
			if _, dup := digests[name]; dup {
				return nil, nil, fmt.Errorf("cluster %s is both kept and rendered", c)
			}
			digests[name] = sum
		}
	}
	manifest, err := manifestOf(digests, revision, toolVersion)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(manifest)
	digests["manifest.json"] = hex.EncodeToString(sum[:])
	var gone []*diff.ClusterChange
	present := map[string]bool{}
	for name := range digests {
		present[state.ClusterOf(name)] = true
	}
	for _, c := range slices.Sorted(maps.Keys(old)) {
		if c == "" || present[c] {
			continue
		}
		cc, err := goneChange(old[c], applied, unreadable)
		if err != nil {
			return nil, nil, fmt.Errorf("comparing with the applied artifacts of serial %d: %w", st.Serial, err)
		}
		if cc != nil {
			gone = append(gone, cc)
		}
	}
	return gone, manifest, nil
}

// changeSet is the change set of the clusters' changes, sorted by name.
func changeSet(clusters []*diff.ClusterChange) *diff.ChangeSet {
	slices.SortFunc(clusters, func(a, b *diff.ClusterChange) int { return strings.Compare(a.Name, b.Name) })
	return &diff.ChangeSet{Clusters: clusters, Summary: diff.Summarize(clusters)}
}

// changedClusters lists, sorted, the clusters with an artifact whose digest
// differs between the digests old and new (added or removed included).
func changedClusters(old, new map[string]string) []string {
	set := map[string]bool{}
	for name, sum := range new {
		if old[name] != sum {
			set[state.ClusterOf(name)] = true
		}
	}
	for name := range old {
		if _, ok := new[name]; !ok {
			set[state.ClusterOf(name)] = true
		}
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// SavePlan writes the plan file of p (JSON) to path, atomically.
func SavePlan(p *Plan, path string) error {
	data, err := p.Encode()
	if err != nil {
		return err
	}
	return state.WriteFileAtomic(path, data)
}

// ReadPlan reads a plan file (decide.ParsePlan).
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decide.ParsePlan(data, path)
}

// Apply publishes the plan's artifacts as the next applied set and records the
// state, both in one atomic switch. rs must render to exactly the plan's artifacts
// (the same revision, rendered again): a file that differs, is missing or is extra
// stops the apply before anything is switched. The clusters of the plan that rs
// does not render are kept (PlanInput.Kept): their files are taken from the
// applied set of st, and must be the plan's too. The caller holds the lock.
func Apply(w *state.Workdir, l *state.Lock, st *state.State, p *Plan, rs []*render.Rendered) (*state.State, error) {
	var models []*render.Model
	var names []string
	for _, r := range rs {
		models = append(models, r.Model)
		names = append(names, r.Model.Cluster.Name)
	}
	return publishPlan(w, l, st, p, models, setSource{
		fromRender: names,
		render: func(clusters []string, put func(name string, data []byte) error) error {
			for _, r := range rs {
				if slices.Contains(clusters, r.Model.Cluster.Name) {
					if err := render.StreamCluster(r, put); err != nil {
						return err
					}
				}
			}
			return nil
		},
		canRender: func(c string) bool { return slices.Contains(names, c) },
	})
}

// setSource says where publishPlan takes the files of a set from: the stage
// (files written while planning), the applied set (a file that did not
// change), or a render made again.
type setSource struct {
	// stage and staged are the files staged: path → sha256.
	stage  *state.Stage
	staged map[string]string
	// manifest is the set's manifest.json as the plan encoded it (nil:
	// encoded again), used when it has the plan's digest.
	manifest []byte
	// fromRender are clusters whose every file is taken from render.
	fromRender []string
	// render hands put the files of the clusters named, rendered again; a
	// file already put is not put again. canRender says whether it can
	// render a cluster (nil: any).
	render    func(clusters []string, put func(name string, data []byte) error) error
	canRender func(c string) bool
	// damaged, when set, is told each cluster whose applied files cannot be
	// read as the state records them, before they are rendered again.
	damaged func(c string, err error)
	// unreadable says the applied set cannot be read at all.
	unreadable bool
}

// publishPlan publishes the set of plan p, made against st, under lock l:
// each file of p linked from the stage, read from the applied set of st (a
// file that did not change; verified), or rendered again, each checked
// against p's digest; and the state next to st with models, the clusters
// rendered by the plan.
func publishPlan(w *state.Workdir, l *state.Lock, st *state.State, p *Plan, models []*render.Model, src setSource) (*state.State, error) {
	if err := p.CheckFresh(st, "plan"); err != nil {
		return nil, err
	}
	next := decide.NextState(st, p, models, decide.KeptClusters(p, models))
	write := func(put func(name string, data []byte) error, link func(name, sum string) error) error {
		sw := &setWriter{w: w, st: st, p: p, src: src, put: put, link: link, got: map[string]bool{}}
		return sw.write()
	}
	stage := src.stage
	if stage == nil {
		// Nothing staged: the stage links the unchanged files.
		var err error
		if stage, err = w.NewStage(l); err != nil {
			return nil, err
		}
		defer stage.Discard()
	}
	if err := w.PublishStaged(l, next, stage, write); err != nil {
		return nil, err
	}
	return next, nil
}

// setWriter writes the files of a plan's set (publishPlan): each linked from
// the stage, linked or read from the applied set, or rendered again, and
// checked against the plan's digest; put and link are the publish's.
type setWriter struct {
	w    *state.Workdir
	st   *state.State
	p    *Plan
	src  setSource
	put  func(name string, data []byte) error
	link func(name, sum string) error

	mu  sync.Mutex
	got map[string]bool // the files put or linked
}

// write writes every file of the set, the manifest last.
func (sw *setWriter) write() error {
	p := sw.p
	again, fromApplied := sw.sources()
	for name, sum := range sw.src.staged {
		if !again[state.ClusterOf(name)] && p.Artifacts[name] == sum && sw.claim(name) {
			if err := sw.link(name, sum); err != nil {
				return err
			}
		}
	}
	if err := sw.rerender(slices.Sorted(maps.Keys(again))); err != nil {
		return err
	}
	fromApplied = slices.DeleteFunc(fromApplied, func(name string) bool { return again[state.ClusterOf(name)] })
	if err := sw.keepApplied(fromApplied); err != nil {
		return err
	}
	var missing []string
	for name := range p.Artifacts {
		if !sw.got[name] && name != "manifest.json" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the render no longer produces %s (and %d more planned files); run plan again", missing[0], len(missing)-1)
	}
	manifest := sw.src.manifest
	if sum := sha256.Sum256(manifest); manifest == nil || hex.EncodeToString(sum[:]) != p.Artifacts["manifest.json"] {
		var err error
		if manifest, err = manifestOf(p.Artifacts, p.SetRev(), p.ToolVersion); err != nil {
			return err
		}
	}
	return sw.check("manifest.json", manifest)
}

// sources says where each file comes from: again, the clusters whose files
// are rendered again (those asked for, and those with a changed file the
// stage does not hold); fromApplied, the unchanged files the applied set
// holds. The others are staged.
func (sw *setWriter) sources() (again map[string]bool, fromApplied []string) {
	p, src := sw.p, sw.src
	again = map[string]bool{}
	for _, c := range src.fromRender {
		again[c] = true
	}
	for _, name := range slices.Sorted(maps.Keys(p.Artifacts)) {
		sum := p.Artifacts[name]
		c := state.ClusterOf(name)
		switch {
		case name == "manifest.json" || again[c]:
		case src.staged[name] == sum:
		case !src.unreadable && sw.st.Artifacts[name] == sum:
			fromApplied = append(fromApplied, name)
		default:
			again[c] = true
		}
	}
	return again, fromApplied
}

// claim says name is not put yet, and is from now on.
func (sw *setWriter) claim(name string) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.got[name] {
		return false
	}
	sw.got[name] = true
	return true
}

// check puts file name, data, once it is checked against the plan.
func (sw *setWriter) check(name string, data []byte) error {
	sum := sha256.Sum256(data)
	if want, ok := sw.p.Artifacts[name]; !ok || want != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("%s differs from the plan: the configuration changed since the plan was made; run plan again", name)
	}
	if !sw.claim(name) {
		return nil
	}
	return sw.put(name, data)
}

// rerender puts the files of clusters, rendered again, that are not put yet.
func (sw *setWriter) rerender(clusters []string) error {
	src := sw.src
	if len(clusters) == 0 {
		return nil
	}
	var cannot []string
	for _, c := range clusters {
		if src.render == nil || src.canRender != nil && !src.canRender(c) {
			cannot = append(cannot, c)
		}
	}
	if len(cannot) > 0 {
		return fmt.Errorf("the render no longer produces the files of cluster %s; run plan again", cannot[0])
	}
	return src.render(clusters, func(name string, data []byte) error {
		sw.mu.Lock()
		done := sw.got[name]
		sw.mu.Unlock()
		if done {
			return nil
		}
		return sw.check(name, data)
	})
}

// keepApplied keeps the unchanged files fromApplied: each linked by its
// digest when its stat says the applied set still holds it
// (state/store_seal.go), any other read and checked. The clusters whose
// files cannot be kept (changed in place) are rendered again, when they can
// be (a *DamagedFilesError when not).
func (sw *setWriter) keepApplied(fromApplied []string) error {
	read, err := sw.linkKept(fromApplied)
	if err != nil {
		return err
	}
	damaged := map[string]error{}
	err = sw.w.ReadApplied(sw.st, read, func(string) error { return nil }, func(name string, data []byte, err error) error {
		if err != nil {
			// Every cluster whose files cannot be kept, to render again.
			sw.mu.Lock()
			if damaged[state.ClusterOf(name)] == nil {
				damaged[state.ClusterOf(name)] = err
			}
			sw.mu.Unlock()
			return nil
		}
		return sw.check(name, data)
	})
	if err != nil || len(damaged) == 0 {
		return err
	}
	src := sw.src
	e := &DamagedFilesError{}
	for _, c := range slices.Sorted(maps.Keys(damaged)) {
		e.Clusters = append(e.Clusters, c)
		e.Errs = append(e.Errs, damaged[c])
	}
	if src.render == nil || src.canRender != nil && slices.ContainsFunc(e.Clusters, func(c string) bool { return !src.canRender(c) }) {
		return e
	}
	for i, c := range e.Clusters {
		if src.damaged != nil {
			src.damaged(c, e.Errs[i])
		}
	}
	if err := sw.rerender(e.Clusters); err != nil {
		return fmt.Errorf("%w; rendering them again failed: %v", e, err)
	}
	return nil
}

// linkKept links each of names, unchanged files of the applied set, by its
// digest, on a few goroutines (syscallWorkers: each link stats the applied
// file and its object), and returns those whose link says the applied set
// does not hold them unchanged by their stat (state.ErrNotStaged), in the
// order of names, to be read and checked. Each file is claimed once linked.
// Any other error stops it: the one a loop over names in order returns.
func (sw *setWriter) linkKept(names []string) (read []string, err error) {
	notStaged := make([]bool, len(names))
	err = eachIndex(len(names), syscallWorkers, func(i int) error {
		err := sw.link(names[i], sw.p.Artifacts[names[i]])
		switch {
		case err == nil:
			sw.claim(names[i])
		case errors.Is(err, state.ErrNotStaged):
			notStaged[i] = true
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, name := range names {
		if notStaged[i] {
			read = append(read, name)
		}
	}
	return read, nil
}

// DamagedFilesError says the applied files of some clusters to keep are no
// longer what the state says (changed in place) and no object holds them: the
// clusters must be rendered again (Operation does, from their applied
// revision) rather than kept.
type DamagedFilesError struct {
	Clusters []string
	Errs     []error // the first problem of each cluster
}

func (e *DamagedFilesError) Error() string {
	var parts []string
	for i, c := range e.Clusters {
		parts = append(parts, fmt.Sprintf("cluster %s: %v", c, e.Errs[i]))
	}
	return strings.Join(parts, "; ")
}
