package operation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// PlanFormatVersion is the format_version of plan files.
const PlanFormatVersion = "1"

// Plan is the difference between the applied state of a work directory and a
// render of the configuration; saved as a plan file, it is what apply applies.
type Plan struct {
	FormatVersion string `json:"format_version"`
	// Lineage and Serial are those of the state the plan was made against: apply
	// refuses the plan once the state has moved.
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Revision is the source revision rendered (a commit sha, or "working-tree").
	Revision    string `json:"revision"`
	ToolVersion string `json:"tool_version"`
	// Artifacts are the digests of every desired artifact (path → sha256).
	Artifacts      map[string]string `json:"artifacts"`
	ChangesPresent bool              `json:"changes_present"`
	Changes        *diff.ChangeSet   `json:"changes"`
	// InputFiles is the loader.InputFingerprint of the rendered revision
	// (empty when unknown); apply records it in the state (State.Inputs).
	InputFiles string `json:"input_files,omitempty"`
	// ClusterFiles are the loader.ClusterFingerprints of the rendered
	// revision; apply records them in the state (State.ClusterInputs) when
	// InputFiles is known.
	ClusterFiles map[string]string `json:"cluster_files,omitempty"`
	// Targets are the clusters the plan covers (plan --cluster); empty:
	// every cluster. The others keep their artifacts and records.
	Targets []string `json:"targets,omitempty"`
	// Clusters are every cluster's record once the plan is applied: its
	// status (held, awaiting approval, ...) and why. Empty in a plan made
	// before clusters were units: every cluster synced.
	Clusters []ClusterRecord `json:"clusters,omitempty"`
	// StatusChanged says applying the plan changes a cluster's recorded
	// status even where no artifact changes (a held cluster fixed): apply
	// writes a new state for it.
	StatusChanged bool `json:"status_changed,omitempty"`
	// Again says a cluster waits for another that this plan changes: the
	// same inputs may give another plan once it is applied, so the state
	// applying it records no fingerprint of the whole inputs.
	Again bool `json:"again,omitempty"`
	// SetRevision, when set, is the revision of the set the plan applies
	// (its manifest, the state's revision) when it is not Revision: a plan
	// that changes statuses only keeps the applied set's files, manifest
	// included.
	SetRevision string `json:"set_revision,omitempty"`

	// rendered is the render the plan was made from (not saved).
	rendered []*render.Rendered
}

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
func PlanWith(w *state.Workdir, st *state.State, in PlanInput) (*Plan, error) {
	newSide, err := diff.RenderedSide(in.Rendered, in.Revision, in.ToolVersion, st.Artifacts)
	if err != nil {
		return nil, err
	}
	// The applied set of st by its serial, not through current, which another
	// apply may switch meanwhile.
	if _, err := os.Stat(w.SetDir(st.Serial)); err != nil && w.Backend != nil && st.Serial > 0 && !in.Unreadable {
		return nil, fmt.Errorf("the state in %s is at serial %d, but its applied set %s is not in this work directory (another work directory applied it): run plan and apply from that one, or with its artifacts",
			w.Backend, st.Serial, w.SetDir(st.Serial))
	}
	applied := w.SetFS(st.Serial)
	if len(in.Kept) > 0 {
		if err := keepApplied(newSide, st, applied, in); err != nil {
			return nil, err
		}
	}
	oldSide := diff.FSSide(applied, st.Artifacts)
	oldSide.Unreadable = in.Unreadable
	if in.Applied != nil {
		// Only the clusters whose artifacts differ are compared: the applied
		// revision is rendered for them alone.
		if changed := changedClusters(st.Artifacts, newSide.Digests); len(changed) > 0 {
			oldSide.Rendered = in.Applied(changed)
		}
	}
	cs, err := diff.Compute(oldSide, newSide)
	if err != nil {
		return nil, fmt.Errorf("comparing with the applied artifacts of serial %d in %s: %w", st.Serial, w.Dir, err)
	}
	return &Plan{
		FormatVersion:  PlanFormatVersion,
		Lineage:        st.Lineage,
		Serial:         st.Serial,
		Revision:       in.Revision,
		ToolVersion:    in.ToolVersion,
		Artifacts:      newSide.Digests,
		ChangesPresent: !cs.Empty(),
		Changes:        cs,
		rendered:       in.Rendered,
	}, nil
}

// keepApplied adds to side, the render of the clusters not kept, the applied
// artifacts of the kept clusters (read from the applied set when asked) and
// the manifest of the whole set.
func keepApplied(side *diff.Side, st *state.State, applied fs.FS, in PlanInput) error {
	delete(side.Digests, "manifest.json")
	kept := map[string]bool{}
	for name, sum := range st.Artifacts {
		if c := state.ClusterOf(name); c != "" && slices.Contains(in.Kept, c) {
			if _, dup := side.Digests[name]; dup {
				return fmt.Errorf("cluster %s is both kept and rendered", c)
			}
			side.Digests[name] = sum
			kept[name] = true
		}
	}
	manifest, err := render.Manifest(side.Digests, in.Revision, in.ToolVersion)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(manifest)
	side.Digests["manifest.json"] = hex.EncodeToString(sum[:])
	read := side.Read
	side.Read = func(name string) ([]byte, error) {
		switch {
		case name == "manifest.json":
			return manifest, nil
		case kept[name]:
			return fs.ReadFile(applied, name)
		}
		return read(name)
	}
	return nil
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

// Save writes the plan file (JSON) to path, atomically.
func (p *Plan) Save(path string) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteFileAtomic(path, append(data, '\n'))
}

// ReadPlan reads a plan file.
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s is not a fuelsync plan file: %w", path, err)
	}
	if p.FormatVersion != PlanFormatVersion || p.Artifacts == nil {
		return nil, fmt.Errorf("%s is not a fuelsync plan file of format_version %s", path, PlanFormatVersion)
	}
	return &p, nil
}

// StaleError says a saved plan was made against another state; or, Asked,
// that the state moved while the plan shown awaited its confirmation.
type StaleError struct {
	Plan, State *state.State
	PlanFile    string
	Asked       bool
}

func (e *StaleError) Error() string {
	if e.Asked {
		now := fmt.Sprintf("serial %d", e.State.Serial)
		if e.Plan.Lineage != e.State.Lineage && e.Plan.Lineage != "" {
			now += " of another lineage (" + e.State.Lineage + ")"
		}
		return fmt.Sprintf("the state moved while the plan awaited confirmation: the plan was made against serial %d, the state is now at %s (applied revision %.12s); run apply again",
			e.Plan.Serial, now, e.State.Revision)
	}
	if e.Plan.Lineage != e.State.Lineage && e.Plan.Lineage != "" {
		return fmt.Sprintf("the plan %s is stale: it was made for state lineage %s, but the work directory's state has lineage %s; run plan again",
			e.PlanFile, e.Plan.Lineage, e.State.Lineage)
	}
	return fmt.Sprintf("the plan %s is stale: it was made against state serial %d, but the state is now at serial %d (applied revision %.12s); run plan again",
		e.PlanFile, e.Plan.Serial, e.State.Serial, e.State.Revision)
}

// CheckFresh returns a *StaleError when the state moved since the plan.
func (p *Plan) CheckFresh(st *state.State, planFile string) error {
	if p.Lineage != st.Lineage || p.Serial != st.Serial {
		return &StaleError{Plan: &state.State{Lineage: p.Lineage, Serial: p.Serial}, State: st, PlanFile: planFile}
	}
	return nil
}

// Apply publishes the plan's artifacts as the next applied set and records the
// state, both in one atomic switch. rs must render to exactly the plan's artifacts
// (the same revision, rendered again): a file that differs, is missing or is extra
// stops the apply before anything is switched. The clusters of the plan that rs
// does not render are kept (PlanInput.Kept): their files are taken from the
// applied set of st, and must be the plan's too. The caller holds the lock.
func Apply(w *state.Workdir, l *state.Lock, st *state.State, p *Plan, rs []*render.Rendered) (*state.State, error) {
	if err := p.CheckFresh(st, "plan"); err != nil {
		return nil, err
	}
	kept := keptClusters(p, rs)
	next := nextState(st, p, rs, kept)
	err := w.Publish(l, next, func(put func(name string, data []byte) error) error {
		seen := make(chan string, 64)
		done := make(chan map[string]bool)
		go func() {
			got := map[string]bool{}
			for name := range seen {
				got[name] = true
			}
			done <- got
		}()
		check := func(name string, data []byte) error {
			sum := sha256.Sum256(data)
			if want, ok := p.Artifacts[name]; !ok || want != hex.EncodeToString(sum[:]) {
				return fmt.Errorf("%s differs from the plan: the configuration changed since the plan was made; run plan again", name)
			}
			seen <- name
			return put(name, data)
		}
		err := render.Stream(rs, p.setRevision(), p.ToolVersion, func(name string, data []byte) error {
			if name == "manifest.json" && len(kept) > 0 {
				return nil // the manifest of the rendered clusters alone: made below
			}
			return check(name, data)
		})
		if err == nil && len(kept) > 0 {
			err = putKept(w, st, p, kept, check)
		}
		close(seen)
		got := <-done
		if err != nil {
			return err
		}
		var missing []string
		for name := range p.Artifacts {
			if !got[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("the render no longer produces %s (and %d more planned files); run plan again", missing[0], len(missing)-1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

// setRevision is the revision of the set p applies.
func (p *Plan) setRevision() string {
	if p.SetRevision != "" {
		return p.SetRevision
	}
	return p.Revision
}

// keptClusters lists the clusters of the plan's artifacts that rs does not
// render.
func keptClusters(p *Plan, rs []*render.Rendered) []string {
	rendered := map[string]bool{}
	for _, r := range rs {
		rendered[r.Model.Cluster.Name] = true
	}
	set := map[string]bool{}
	for name := range p.Artifacts {
		if c := state.ClusterOf(name); c != "" && !rendered[c] {
			set[c] = true
		}
	}
	var out []string
	for c := range set {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// putKept puts the applied files of the kept clusters, read from the applied
// set of st (each must be the state's and the plan's), then the manifest of
// the whole set.
func putKept(w *state.Workdir, st *state.State, p *Plan, kept []string, check func(name string, data []byte) error) error {
	var names []string
	for name := range p.Artifacts {
		if slices.Contains(kept, state.ClusterOf(name)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var mu sync.Mutex
	damaged := map[string]error{}
	err := w.ReadApplied(st, names, func(name string) error {
		if st.Artifacts[name] != p.Artifacts[name] {
			return fmt.Errorf("%s differs from the plan: the configuration changed since the plan was made; run plan again", name)
		}
		return nil
	}, func(name string, data []byte, err error) error {
		if err != nil {
			// Every cluster whose files cannot be kept, for the caller to
			// render again.
			mu.Lock()
			if damaged[state.ClusterOf(name)] == nil {
				damaged[state.ClusterOf(name)] = err
			}
			mu.Unlock()
			return nil
		}
		return check(name, data)
	})
	if err != nil {
		return err
	}
	if len(damaged) > 0 {
		e := &DamagedFilesError{}
		for _, c := range slices.Sorted(maps.Keys(damaged)) {
			e.Clusters = append(e.Clusters, c)
			e.Errs = append(e.Errs, damaged[c])
		}
		return e
	}
	manifest, err := render.Manifest(p.Artifacts, p.setRevision(), p.ToolVersion)
	if err != nil {
		return err
	}
	return check("manifest.json", manifest)
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

// nextState is the state after applying p: the next serial, the plan's revision
// and digests, every rendered node as deployed with its roles, the primary tags;
// a kept cluster's as st has it.
func nextState(st *state.State, p *Plan, rs []*render.Rendered, kept []string) *state.State {
	next := &state.State{
		FormatVersion: "1",
		Lineage:       st.Lineage,
		Serial:        st.Serial + 1,
		Revision:      p.setRevision(),
		ToolVersion:   p.ToolVersion,
		Clusters:      map[string]*state.ClusterState{},
		Artifacts:     p.Artifacts,
	}
	if next.Lineage == "" {
		next.Lineage = state.NewLineage()
	}
	defer func() {
		if p.InputFiles == "" {
			return
		}
		if !p.Again && len(p.Targets) == 0 {
			// Only a plan of every cluster makes the state the outcome of
			// these inputs (a targeted one leaves the others behind).
			next.Inputs = state.InputsKey(p.InputFiles, p.ToolVersion, next)
		}
		for c, cs := range next.Clusters {
			files := p.ClusterFiles[c]
			rec := p.record(c)
			switch {
			case files != "" && (rec == nil || !rec.Untouched && rec.Status == state.StatusSynced):
				// Its artifacts are now the render of these inputs.
				if next.ClusterInputs == nil {
					next.ClusterInputs = map[string]string{}
				}
				next.ClusterInputs[c] = state.ClusterInputsKey(files, p.ToolVersion, cs)
			case rec != nil && st.ClusterInputs[c] != "":
				// Held, waiting or not planned: its artifacts are still the
				// render of the inputs it was applied with.
				if next.ClusterInputs == nil {
					next.ClusterInputs = map[string]string{}
				}
				next.ClusterInputs[c] = st.ClusterInputs[c]
			}
		}
	}()
	for _, c := range kept {
		if cs := st.Clusters[c]; cs != nil {
			copied := *cs
			next.Clusters[c] = &copied
		}
	}
	for _, r := range rs {
		cs := &state.ClusterState{Nodes: map[string]state.NodeState{}, Primary: map[string]string{}}
		for name, nt := range r.Model.NodeTags {
			cs.Nodes[name] = state.NodeState{ID: nt.Node.ID, Roles: slices.Clone(nt.Roles)}
			for _, tag := range nt.Primary {
				cs.Primary[tag] = name
			}
		}
		name := r.Model.Cluster.Name
		cs.Revision, cs.File = p.Revision, r.Model.Cluster.File
		cs.Serial = next.Serial
		if old := st.Clusters[name]; old != nil && old.Serial > 0 && ArtifactsDigest(st.Artifacts, name) == ArtifactsDigest(p.Artifacts, name) {
			cs.Serial = old.Serial
		}
		next.Clusters[name] = cs
	}
	// The records the plan gives: statuses, problems, pending plans.
	for _, rec := range p.Clusters {
		cs := next.Clusters[rec.Name]
		switch {
		case rec.Untouched:
			continue
		case rec.Gone:
			delete(next.Clusters, rec.Name)
			continue
		case cs == nil:
			// Held (or suspended, or awaiting approval) and never applied:
			// recorded, without nodes.
			cs = &state.ClusterState{Nodes: map[string]state.NodeState{}, Primary: map[string]string{}}
			next.Clusters[rec.Name] = cs
		}
		cs.Status, cs.Problems, cs.Pending = rec.Status, slices.Clone(rec.Problems), rec.Pending
		if rec.Revision != "" {
			cs.Revision = rec.Revision
		}
		if rec.File != "" {
			cs.File = rec.File
		}
	}
	return next
}

// UnchangedPlan is the plan of a revision whose inputs are those of the
// applied state st (st.Unchanged): no changes, made without rendering. It
// cannot be applied (there is nothing to apply) nor saved for apply.
func UnchangedPlan(st *state.State, revision, toolVersion, files string) *Plan {
	return &Plan{
		FormatVersion: PlanFormatVersion,
		Lineage:       st.Lineage,
		Serial:        st.Serial,
		Revision:      revision,
		ToolVersion:   toolVersion,
		Artifacts:     st.Artifacts,
		Changes:       &diff.ChangeSet{},
		InputFiles:    files,
	}
}
