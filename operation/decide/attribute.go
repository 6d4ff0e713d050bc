package decide

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// Attribution says which clusters each error of a load (or of release and
// plugin data) concerns: an error in a cluster's own spec holds that cluster;
// an error in a shared input (a release, a plugin, fuelsync.yaml) holds the
// clusters that use it. See attribute.
type Attribution struct {
	repo *loader.Repo
	st   *state.State
	// all are the clusters an error of a shared input of every cluster holds.
	all []string
	// byFile maps a cluster spec file to its clusters (several when a name is
	// defined twice, or an applied cluster's recorded file).
	byFile map[string][]string
	// byDir maps a clusters/<dir>/ directory with a cluster.yaml to its
	// cluster.
	byDir map[string]string
	// byPlugin maps a plugin directory to the clusters that use it (enable it,
	// or run on a release it defines).
	byPlugin map[string][]string
}

// NewAttribution is the attribution of the errors of a load of repo, with the
// applied state st (nil for none): its clusters, and their recorded spec files.
func NewAttribution(repo *loader.Repo, st *state.State) *Attribution {
	a := &Attribution{repo: repo, st: st, byFile: map[string][]string{}, byDir: map[string]string{}, byPlugin: map[string][]string{}}
	names := map[string]bool{}
	for _, c := range repo.Clusters {
		names[c.Name] = true
		a.byFile[c.File] = AppendNew(a.byFile[c.File], c.Name)
		if dir := path.Dir(c.File); dir != "clusters" && strings.HasPrefix(c.File, "clusters/") {
			a.byDir[dir+"/"] = c.Name
		}
		for _, p := range clusterPlugins(repo, c) {
			a.byPlugin[p.Dir+"/"] = AppendNew(a.byPlugin[p.Dir+"/"], c.Name)
		}
	}
	if st != nil {
		for name, cs := range st.Clusters {
			names[name] = true
			if cs.File != "" {
				a.byFile[cs.File] = AppendNew(a.byFile[cs.File], name)
			}
		}
	}
	for n := range names {
		a.all = append(a.all, n)
	}
	slices.Sort(a.all)
	return a
}

// AppendNew appends s to list unless list holds it.
func AppendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// clusterPlugins are the plugins cluster c uses: the one defining its release,
// and those it enables.
func clusterPlugins(repo *loader.Repo, c *loader.Cluster) []*loader.Plugin {
	var out []*loader.Plugin
	if rels := repo.FindRelease(c.Release); len(rels) == 1 && rels[0].Plugin != nil {
		out = append(out, rels[0].Plugin)
	}
	for _, ref := range c.Plugins {
		if p := repo.FindPlugin(ref.Name); p != nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// concerns lists the clusters an error at file (a path of the repository; ""
// for an error without a place) holds back.
//
//   - no place, or the settings file (fuelsync.yaml): every cluster;
//   - a cluster spec: its cluster (or the cluster the file would define, by its
//     name, when it no longer loads), and an applied cluster whose recorded
//     spec it is;
//   - a file under a cluster's own directory (clusters/<name>/): that cluster;
//   - a file that clusters read through tasks_path: those clusters;
//   - a file of a plugin: the clusters that enable it or run on a release it
//     defines (none when no cluster uses it; an unreadable plugin's clusters
//     fail on their own reference to it);
//   - anything else (Heat environments and templates, files shared through
//     _path): every cluster, as any of them may read it.
func (a *Attribution) concerns(file string) []string {
	if file == "" || file == a.repo.Settings.File || strings.HasPrefix(file, "fuelsync.") && !strings.Contains(file, "/") {
		return a.all
	}
	if cs, ok := a.byFile[file]; ok {
		return cs
	}
	if rest, ok := strings.CutPrefix(file, "clusters/"); ok {
		if dir, _, nested := strings.Cut(rest, "/"); nested {
			if c, ok := a.byDir["clusters/"+dir+"/"]; ok {
				return []string{c}
			}
		}
		var readers []string
		for _, c := range a.repo.Clusters {
			if c.TasksPath == "" {
				continue
			}
			pattern := path.Join(path.Dir(c.File), c.TasksPath)
			if ok, err := doublestar.Match(pattern, file); err == nil && ok {
				readers = AppendNew(readers, c.Name)
			}
		}
		if len(readers) > 0 {
			return readers
		}
		switch base := path.Base(file); {
		case path.Dir(file) == "clusters", strings.HasPrefix(base, "cluster.") && strings.Count(rest, "/") == 1:
			// A spec that no longer loads: the cluster it would define, and
			// (never deleted on a guess) every applied cluster of a state too
			// old to say which file it came from that the revision lacks.
			out := []string{defaultClusterName(file)}
			if a.st != nil {
				for name, cs := range a.st.Clusters {
					if cs.File == "" && a.repo.Cluster(name) == nil {
						out = AppendNew(out, name)
					}
				}
			}
			slices.Sort(out)
			return out
		}
		return a.all
	}
	if rest, ok := strings.CutPrefix(file, "plugins/"); ok {
		dir, _, _ := strings.Cut(rest, "/")
		return a.byPlugin["plugins/"+dir+"/"]
	}
	return a.all
}

// defaultClusterName is the name a cluster spec file gives its cluster when
// it does not name it: clusters/<name>.yaml, clusters/<name>/cluster.yaml.
func defaultClusterName(file string) string {
	base := path.Base(file)
	stem := strings.TrimSuffix(base, path.Ext(base))
	if stem == "cluster" && path.Dir(file) != "clusters" {
		return path.Base(path.Dir(file))
	}
	return stem
}

// Attribute gives every error of diags to the clusters it concerns; errors
// that concern no cluster (a plugin no cluster uses) are returned apart.
// Warnings hold nothing and are left out.
func (a *Attribution) Attribute(diags hcl.Diagnostics, into map[string]hcl.Diagnostics) (orphans hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		file := ""
		if d.Subject != nil {
			file = d.Subject.Filename
		}
		cs := a.concerns(file)
		if len(cs) == 0 {
			orphans = append(orphans, d)
			continue
		}
		for _, c := range cs {
			into[c] = append(into[c], d)
		}
	}
	return orphans
}

// Hold tells the errors of diags (a load of repo, or release and plugin data)
// apart by the clusters they hold, as the operation does: an
// error in a cluster's own spec holds that cluster, in a shared input the
// clusters that use it. st, the applied state (nil for none), adds its
// clusters and their recorded spec files. Errors that hold no cluster are
// returned apart.
func Hold(repo *loader.Repo, st *state.State, diags hcl.Diagnostics) (held map[string]hcl.Diagnostics, orphans hcl.Diagnostics) {
	held = map[string]hcl.Diagnostics{}
	orphans = NewAttribution(repo, st).Attribute(diags, held)
	return held, orphans
}

// ProblemLines formats the errors of diags as file:line:col: error: message,
// at most max of them and a last line that counts the rest.
func ProblemLines(diags hcl.Diagnostics, max int) []string {
	out := diagLines(diags)
	if max > 0 && len(out) > max {
		rest := len(out) - max
		out = append(out[:max:max], "and "+plural(rest, "more error"))
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// diagLines formats the errors of diags as file:line:col: message.
func diagLines(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		where := ""
		if d.Subject != nil {
			where = fmt.Sprintf("%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		out = append(out, where+"error: "+d.Summary)
	}
	return out
}

// All are the clusters an error of an input shared by every cluster holds:
// those of the revision and of the applied state, sorted.
func (a *Attribution) All() []string { return slices.Clone(a.all) }
