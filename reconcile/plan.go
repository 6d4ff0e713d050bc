package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/render"
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

	// rendered is the render the plan was made from (not saved).
	rendered []*render.Rendered
}

// MakePlan compares the applied state st (its artifacts in the work directory)
// with rs, the render of revision. old, when not nil, is a render of the applied
// revision: it lets the change set say which tag or plugin took tasks away.
func MakePlan(w *Workdir, st *State, rs []*render.Rendered, old []*render.Rendered, revision, toolVersion string) (*Plan, error) {
	newSide, err := diff.RenderedSide(rs, revision, toolVersion, st.Artifacts)
	if err != nil {
		return nil, err
	}
	// The applied set of st by its serial, not through current, which another
	// apply may switch meanwhile.
	if _, err := os.Stat(w.SetDir(st.Serial)); err != nil && w.Backend != nil && st.Serial > 0 {
		return nil, fmt.Errorf("the state in %s is at serial %d, but its applied set %s is not in this work directory (another work directory applied it): run plan and apply from that one, or with its artifacts",
			w.Backend, st.Serial, w.SetDir(st.Serial))
	}
	oldSide := diff.FSSide(os.DirFS(w.SetDir(st.Serial)), st.Artifacts)
	oldSide.Rendered = old
	cs, err := diff.Compute(oldSide, newSide)
	if err != nil {
		return nil, fmt.Errorf("comparing with the applied artifacts of serial %d in %s: %w", st.Serial, w.Dir, err)
	}
	return &Plan{
		FormatVersion:  PlanFormatVersion,
		Lineage:        st.Lineage,
		Serial:         st.Serial,
		Revision:       revision,
		ToolVersion:    toolVersion,
		Artifacts:      newSide.Digests,
		ChangesPresent: !cs.Empty(),
		Changes:        cs,
		rendered:       rs,
	}, nil
}

// Save writes the plan file (JSON) to path, atomically.
func (p *Plan) Save(path string) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'))
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

// StaleError says a saved plan was made against another state.
type StaleError struct {
	Plan, State *State
	PlanFile    string
}

func (e *StaleError) Error() string {
	if e.Plan.Lineage != e.State.Lineage && e.Plan.Lineage != "" {
		return fmt.Sprintf("the plan %s is stale: it was made for state lineage %s, but the work directory's state has lineage %s; run plan again",
			e.PlanFile, e.Plan.Lineage, e.State.Lineage)
	}
	return fmt.Sprintf("the plan %s is stale: it was made against state serial %d, but the state is now at serial %d (applied revision %.12s); run plan again",
		e.PlanFile, e.Plan.Serial, e.State.Serial, e.State.Revision)
}

// CheckFresh returns a *StaleError when the state moved since the plan.
func (p *Plan) CheckFresh(st *State, planFile string) error {
	if p.Lineage != st.Lineage || p.Serial != st.Serial {
		return &StaleError{Plan: &State{Lineage: p.Lineage, Serial: p.Serial}, State: st, PlanFile: planFile}
	}
	return nil
}

// Apply publishes the plan's artifacts as the next applied set and records the
// state, both in one atomic switch. rs must render to exactly the plan's artifacts
// (the same revision, rendered again): a file that differs, is missing or is extra
// stops the apply before anything is switched. The caller holds the lock.
func Apply(w *Workdir, l *Lock, st *State, p *Plan, rs []*render.Rendered) (*State, error) {
	if err := p.CheckFresh(st, "plan"); err != nil {
		return nil, err
	}
	next := nextState(st, p, rs)
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
		err := render.Stream(rs, p.Revision, p.ToolVersion, func(name string, data []byte) error {
			sum := sha256.Sum256(data)
			if want, ok := p.Artifacts[name]; !ok || want != hex.EncodeToString(sum[:]) {
				return fmt.Errorf("%s differs from the plan: the configuration changed since the plan was made; run plan again", name)
			}
			seen <- name
			return put(name, data)
		})
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

// nextState is the state after applying p: the next serial, the plan's revision
// and digests, every rendered node as deployed with its roles, the primary tags.
func nextState(st *State, p *Plan, rs []*render.Rendered) *State {
	next := &State{
		FormatVersion: "1",
		Lineage:       st.Lineage,
		Serial:        st.Serial + 1,
		Revision:      p.Revision,
		ToolVersion:   p.ToolVersion,
		Clusters:      map[string]*ClusterState{},
		Artifacts:     p.Artifacts,
	}
	if next.Lineage == "" {
		next.Lineage = newLineage()
	}
	defer func() {
		if p.InputFiles != "" {
			next.Inputs = InputsKey(p.InputFiles, p.ToolVersion, next)
		}
	}()
	for _, r := range rs {
		cs := &ClusterState{Nodes: map[string]NodeState{}, Primary: map[string]string{}}
		for name, nt := range r.Model.NodeTags {
			cs.Nodes[name] = NodeState{ID: nt.Node.ID, Roles: slices.Clone(nt.Roles)}
			for _, tag := range nt.Primary {
				cs.Primary[tag] = name
			}
		}
		next.Clusters[r.Model.Cluster.Name] = cs
	}
	return next
}

// Only returns the state limited to the artifacts of clusters (plan --cluster).
func (st *State) Only(clusters []string) *State {
	out := *st
	out.Artifacts = map[string]string{}
	for name, sum := range st.Artifacts {
		for _, c := range clusters {
			if strings.HasPrefix(name, c+"/") {
				out.Artifacts[name] = sum
			}
		}
	}
	return &out
}
