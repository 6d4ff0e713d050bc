package decide

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// UnknownClusterError says a cluster asked for (--cluster) is not in the
// revision nor in the applied state.
type UnknownClusterError struct {
	Name  string
	Known []string
}

func (e *UnknownClusterError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("no cluster %q; clusters: %s", e.Name, known)
}

// Disposition is what the operation does with a cluster.
type Disposition int

const (
	Render    Disposition = iota // rendered and planned
	Reused                       // its inputs are the applied state's: kept as applied
	HeldBack                     // errors, or it would lose every node: kept as applied
	Suspended                    // suspend: true: kept as applied
	Untouched                    // not a target: kept, its record too
	Gone                         // not in the revision: its nodes are deleted
)

// Names are every cluster of a run: of the revision and of the applied state
// (all, Attribution.All), and those a spec that no longer loads would define
// (the clusters errors hold), sorted.
func Names(all []string, holds map[string]hcl.Diagnostics) []string {
	names := slices.Clone(all)
	for c := range holds {
		names = AppendNew(names, c)
	}
	slices.Sort(names)
	return names
}

// CheckTargets says which cluster of targets (--cluster) is none of names.
func CheckTargets(names, targets []string) error {
	for _, t := range targets {
		if !slices.Contains(names, t) {
			return &UnknownClusterError{Name: t, Known: names}
		}
	}
	return nil
}

// Owned are the clusters of owns (those a shard owns of names) that are
// among names and targeted (every one when targets is empty).
func Owned(names, targets, owns []string) []string {
	var owned []string
	for _, name := range owns {
		if (len(targets) == 0 || slices.Contains(targets, name)) && slices.Contains(names, name) {
			owned = append(owned, name)
		}
	}
	return owned
}

// Scope is which clusters a run concerns.
type Scope struct {
	// Targets are the clusters asked for (--cluster); empty: every cluster.
	Targets []string
	// Sharded says the run is a shard's (Request.Owns), Owned its clusters.
	Sharded bool
	Owned   []string
}

// Targeted says whether the run of s concerns cluster c.
func (s Scope) Targeted(c string) bool {
	if s.Sharded {
		return slices.Contains(s.Owned, c)
	}
	return len(s.Targets) == 0 || slices.Contains(s.Targets, c)
}

// Dispose is each cluster's disposition before the render: untouched when
// not targeted, suspended (suspend: true), held by the errors holds gives
// it, gone when repo (the revision) lacks it, reused when reusable (its
// inputs are the applied state's), else rendered. render lists the clusters
// to render, in the order of names.
func Dispose(repo *loader.Repo, names []string, scope Scope, holds map[string]hcl.Diagnostics, reusable []string) (disp map[string]Disposition, render []string) {
	disp = map[string]Disposition{}
	for _, name := range names {
		c := repo.Cluster(name)
		switch {
		case !scope.Targeted(name):
			disp[name] = Untouched
		case c != nil && repo.Suspended(c):
			disp[name] = Suspended
		case len(holds[name]) > 0:
			disp[name] = HeldBack
		case c == nil:
			disp[name] = Gone
		case slices.Contains(reusable, name):
			disp[name] = Reused
		default:
			disp[name] = Render
			render = append(render, name)
		}
	}
	return disp, render
}

// Emptied says the guard holds cluster name back, before comparing it: its
// render has no node while its applied state st has some.
func Emptied(st *state.State, name string, nodes int) bool {
	cs := st.Clusters[name]
	return cs != nil && len(cs.Nodes) > 0 && nodes == 0
}

// Compared is what the render and compare found of one cluster.
type Compared struct {
	// Cluster is the cluster as the revision defines it (its nodes, its
	// depends_on).
	Cluster *loader.Cluster
	// Digests are its rendered files' (path → sha256); Change its change
	// from the applied artifacts (nil: none).
	Digests map[string]string
	Change  *diff.ClusterChange
	// Emptied says the guard holds it (Emptied): it was not compared.
	Emptied bool
}

// Input is what Decide decides from.
type Input struct {
	// Revision is the revision reconciled, Repo its load, State the applied
	// state.
	Revision string
	Repo     *loader.Repo
	State    *state.State
	// Names are every cluster (Names); Disp their dispositions (Dispose),
	// Holds the errors that hold each.
	Names []string
	Disp  map[string]Disposition
	Holds map[string]hcl.Diagnostics
	// Compared are the clusters rendered and compared.
	Compared map[string]*Compared
	Scope    Scope
	// Guard holds back a cluster left without a node, and a revision that
	// leaves no node at all.
	Guard bool
	// Apply says the run applies.
	Apply bool
	// Health is a cluster's health in the applied state (a dependency with
	// healthy: true); nil: unknown.
	Health func(cluster string) reports.Health
}

// Decision is what Decide decided.
type Decision struct {
	// Disp are the dispositions once rendered: a rendered cluster with
	// errors, or emptied, is held.
	Disp map[string]Disposition
	// Planned are the clusters whose render the plan takes (rendered, not
	// held, not deferred), in the order of names; Kept the clusters that
	// keep their applied artifacts.
	Planned, Kept []string
	// Changes are the changes of the clusters rendered.
	Changes map[string]*diff.ClusterChange
	// HeldAll is the guard's reason to hold the whole revision ("": none);
	// Guarded its reason to hold each cluster it holds.
	HeldAll string
	Guarded map[string]string
	// Waiting are the dependencies each cluster waits for to be synced;
	// Unhealthy why it waits for a dependency's health; Awaiting the
	// clusters whose changes await approval (sync: manual).
	Waiting, Unhealthy map[string][]string
	Awaiting           map[string]bool
	// Again says the next run of the same revision may apply a cluster that
	// waits for one this run applies.
	Again bool
	// WaitingHealth are the clusters in Unhealthy, sorted.
	WaitingHealth []string
}

// Deferred says cluster name's changes wait: for approval, or for a
// dependency.
func (d *Decision) Deferred(name string) bool {
	return d.Awaiting[name] || len(d.Waiting[name])+len(d.Unhealthy[name]) > 0
}

// Decide decides, from what the render and compare found, which clusters
// are held (errors, the guard), which wait (approval, dependencies), and
// which the plan applies.
func Decide(in Input) *Decision {
	d := &Decision{Disp: maps.Clone(in.Disp), Changes: map[string]*diff.ClusterChange{}, Guarded: map[string]string{}}
	// The clusters rendered, without errors, in the order of names.
	var rendered []string
	for _, name := range in.Names {
		if in.Compared[name] != nil && len(in.Holds[name]) == 0 {
			rendered = append(rendered, name)
		}
	}
	for name, disp := range d.Disp {
		if (disp == Render || disp == Reused) && len(in.Holds[name]) > 0 {
			d.Disp[name] = HeldBack
		}
	}
	if in.Guard {
		rendered = d.guard(in, rendered)
	}
	for _, name := range rendered {
		if cc := in.Compared[name].Change; cc != nil {
			d.Changes[name] = cc
		}
	}
	d.gate(in, rendered)
	// The plan: the clusters rendered and not deferred; every other cluster
	// keeps its applied artifacts.
	for _, name := range in.Names {
		if disp := d.Disp[name]; disp != Render && disp != Gone || d.Deferred(name) {
			d.Kept = append(d.Kept, name)
		}
	}
	for _, name := range rendered {
		if !d.Deferred(name) {
			d.Planned = append(d.Planned, name)
		}
	}
	return d
}

// guard holds back a cluster left without a node, and every cluster when
// the revision leaves no node at all; it returns rendered without the
// clusters it holds.
func (d *Decision) guard(in Input, rendered []string) []string {
	var kept []string
	for name, disp := range d.Disp {
		if disp != Render && disp != Gone {
			kept = append(kept, name)
		}
	}
	nodes := map[string]int{}
	for _, name := range rendered {
		nodes[name] = len(in.Compared[name].Cluster.Nodes)
	}
	if why := Emptying(in.State, nodes, kept); strings.HasPrefix(why, "removes every cluster") {
		// The whole revision is held: planned (the status shows what it
		// would do), never applied, nothing recorded.
		d.HeldAll = fmt.Sprintf("held back: revision %s %s; it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml", source.Short(in.Revision), why)
	}
	for _, name := range rendered {
		if in.Compared[name].Emptied {
			d.Guarded[name] = fmt.Sprintf("held back: revision %s removes every node of cluster %s (%d applied); it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml",
				source.Short(in.Revision), name, len(in.State.Clusters[name].Nodes))
			d.Disp[name] = HeldBack
		}
	}
	return slices.DeleteFunc(rendered, func(name string) bool { return d.Guarded[name] != "" })
}

// atHead says whether cluster name's applied artifacts are the revision's
// (synced at it), for the clusters that depend on it.
func (d *Decision) atHead(in Input, name string) bool {
	switch d.Disp[name] {
	case Reused:
		return true
	case Render:
		return d.Changes[name] == nil && d.Guarded[name] == ""
	case Untouched:
		// Another shard's: synced at this revision, as its owner recorded.
		cs := in.State.Clusters[name]
		return in.Scope.Sharded && cs != nil && cs.StatusOf() == state.StatusSynced && cs.Revision == in.Revision
	}
	return false
}

// gate applies each rendered cluster's policy: a manual cluster's changes
// wait for approval (unless targeted: --cluster applies them); a cluster
// waits for the clusters it depends on to be synced at this revision (their
// applied artifacts already the revision's), and healthy when depends_on
// says healthy: true (every node converged on its applied artifacts).
func (d *Decision) gate(in Input, rendered []string) {
	d.Waiting, d.Unhealthy, d.Awaiting = map[string][]string{}, map[string][]string{}, map[string]bool{}
	for _, name := range rendered {
		c := in.Compared[name].Cluster
		if d.Changes[name] == nil {
			continue
		}
		for _, dep := range c.DependsOn {
			switch {
			case !d.atHead(in, dep.Cluster):
				d.Waiting[name] = append(d.Waiting[name], dep.Cluster)
			case dep.Healthy:
				h := reports.ClusterHealth(nil, dep.Cluster, nil)
				if in.Health != nil {
					h = in.Health(dep.Cluster)
				}
				if h.Health != reports.Healthy {
					d.Unhealthy[name] = append(d.Unhealthy[name], fmt.Sprintf("waiting for cluster %s to be healthy at revision %s (it is %s: %d of %d nodes converged)",
						dep.Cluster, source.Short(in.Revision), h.Health, h.Converged, h.Converged+h.Progressing+h.Failed))
				}
			}
		}
		if len(d.Waiting[name])+len(d.Unhealthy[name]) == 0 && in.Repo.SyncPolicy(c) == "manual" && len(in.Scope.Targets) == 0 {
			d.Awaiting[name] = true
		}
	}
	// Once more at once only when this run applies a cluster that another
	// waits for: else the next run of the revision plans the same (a
	// dependency suspended, held or awaiting approval waits for a commit
	// or an approval, another shard's commit triggers its own); a loop
	// reconciled such a revision again 8 times a second.
	for _, deps := range d.Waiting {
		for _, dep := range deps {
			d.Again = d.Again || in.Apply && d.HeldAll == "" && d.Disp[dep] == Render && d.Changes[dep] != nil && !d.Deferred(dep)
		}
	}
	if len(d.Unhealthy) > 0 {
		d.WaitingHealth = slices.Sorted(maps.Keys(d.Unhealthy))
	}
}

// Waits says a cluster waits for a dependency (synced or healthy): the same
// inputs may give another plan later.
func (d *Decision) Waits() bool {
	return len(d.Waiting)+len(d.Unhealthy) > 0
}
