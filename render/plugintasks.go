package render

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Nailgun hands a plugin's tasks to the serializer with two defaults of its own
// (nailgun/plugins/adapters: PluginAdapterBase._add_defaults_to_task, used by
// get_deployment_graph for every graph type of the plugin):
//
//   - a task with non-empty parameters and no parameters.cwd gets
//     cwd: /etc/fuel/plugins/<path name>/ (slaves_scripts_path), the directory the
//     plugin's deployment scripts are synced to on the nodes, so that relative
//     puppet_manifest and cmd paths resolve;
//   - a group task without fault_tolerance gets the fault_tolerance of the plugin's
//     role of the same id, when that role has one.
//
// A release-as-a-plugin's tasks are a release's (nailgun creates a Release from
// them), and get neither.

// PluginScriptsDir is nailgun's PLUGINS_SLAVES_SCRIPTS_PATH: where a plugin's
// scripts are on the nodes, with %s the plugin's path name.
const PluginScriptsDir = "/etc/fuel/plugins/%s/"

// strictVersion is the form Python's distutils StrictVersion accepts.
var strictVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d+)\.(\d+)(\.(\d+))?([ab](\d+))?$`)
})

// PluginPathName is the name nailgun gives a plugin's directory (path_name): for
// package_version 1.0.x the name and the full version as written
// (plugin_name-1.0.0), for 2.0.0 and later the name and the major.minor of the
// version (plugin_name-1.0), which is why a 2.0.0+ version must be what Python's
// StrictVersion reads (1.2 or 1.2.3, optionally a1/b2 after).
func PluginPathName(name, version, packageVersion string) (string, error) {
	if strings.HasPrefix(packageVersion, "1.0.") {
		return name + "-" + version, nil
	}
	m := strictVersion().FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("version %q is not major.minor[.patch] (what nailgun's StrictVersion reads)", version)
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("version %q is out of range", version)
	}
	return fmt.Sprintf("%s-%d.%d", name, major, minor), nil
}

// TaskDefault is a value nailgun adds to a plugin's task because the task does not
// set it.
type TaskDefault struct {
	// Key is the dotted key added: parameters.cwd or fault_tolerance.
	Key   string
	Value string
	// Reason says which rule added it; Range is what the value comes from (the
	// plugin's version, or the role's fault_tolerance).
	Reason string
	Range  hcl.Range
}

// pluginTaskSet is a plugin's graphs with nailgun's defaults in its tasks, made on
// first use (validate never needs them) and shared by every cluster of a builder.
type pluginTaskSet struct {
	p   *loader.Plugin
	cwd string // "" when nailgun could not name the plugin's directory
	// versionRange is where the plugin's version is written.
	versionRange hcl.Range

	once     sync.Once
	graphs   []*loader.Graph
	defaults map[*loader.Task][]TaskDefault
}

// pluginTasks returns the task set of p (one per plugin and builder). A version
// nailgun cannot read is reported here, once.
func (b *builder) pluginTasks(p *loader.Plugin) *pluginTaskSet {
	if s, ok := b.pluginSets[p]; ok {
		return s
	}
	s := &pluginTaskSet{p: p, versionRange: p.NameRange}
	b.pluginSets[p] = s
	if v := p.Metadata.Get("version"); v != nil {
		s.versionRange = v.Range
	}
	pathName, err := PluginPathName(p.Name, p.Version, p.PackageVersion)
	switch {
	case err == nil:
		s.cwd = fmt.Sprintf(PluginScriptsDir, pathName)
	case len(p.Graphs) > 0:
		b.dataDiag(withDetail(errorAt(s.versionRange, "plugin %s: %v", p.Name, err),
			"Nailgun puts a plugin of package_version 2.0.0 or later in /etc/fuel/plugins/<name>-<major.minor>/, and cannot install one whose version it cannot read."))
	}
	return s
}

// get returns the plugin's graphs with the defaults added, and the defaults of each
// task that got some. Safe for concurrent use.
func (s *pluginTaskSet) get() ([]*loader.Graph, map[*loader.Task][]TaskDefault) {
	s.once.Do(s.fill)
	return s.graphs, s.defaults
}

func (s *pluginTaskSet) fill() {
	p := s.p
	s.defaults = map[*loader.Task][]TaskDefault{}
	roles := map[string]*loader.Role{}
	for _, r := range p.Roles {
		roles[r.Name] = r
	}
	for _, g := range p.Graphs {
		ng := *g
		ng.Tasks = make([]*loader.Task, len(g.Tasks))
		for i, t := range g.Tasks {
			data := t.Data
			var defs []TaskDefault
			if params := data.Get("parameters"); s.cwd != "" && params.IsMap() && len(params.Fields) > 0 && !params.Has("cwd") {
				data = data.With("parameters", data.Field("parameters").KeyRange, params.With("cwd", params.Range, loader.NewString(s.cwd, params.Range)))
				defs = append(defs, TaskDefault{Key: "parameters.cwd", Value: s.cwd, Range: s.versionRange,
					Reason: fmt.Sprintf("nailgun's working directory for the tasks of plugin %s (%s, package_version %s)", p.Name, pathRule(p.PackageVersion), p.PackageVersion)})
			}
			if t.Type == "group" && !data.Has("fault_tolerance") {
				if r := roles[t.ID]; r != nil && r.Data.Has("fault_tolerance") {
					ft := r.Data.Get("fault_tolerance")
					data = data.With("fault_tolerance", t.Range, ft)
					defs = append(defs, TaskDefault{Key: "fault_tolerance", Value: ft.String(), Range: ft.Range,
						Reason: fmt.Sprintf("the fault_tolerance of plugin %s's role %s, which nailgun copies onto the group of the same id", p.Name, t.ID)})
				}
			}
			if len(defs) == 0 {
				ng.Tasks[i] = t
				continue
			}
			nt := *t
			nt.Data = data
			ng.Tasks[i] = &nt
			s.defaults[&nt] = defs
		}
		s.graphs = append(s.graphs, &ng)
	}
}

func pathRule(packageVersion string) string {
	if strings.HasPrefix(packageVersion, "1.0.") {
		return "<name>-<version>"
	}
	return "<name>-<major.minor>"
}

// pluginTaskOverlaps is nailgun's refusal of two enabled plugins that define the
// same task id in one graph type (PluginManager.get_plugins_deployment_graph: "Plugin
// <later> is overlapping with plugin <earlier> by introducing the same deployment
// task with id <id>", the plugins named with their versions), wherever the two
// definitions would resolve. One error per id and graph type, at the plugins: entry
// (or component) that enabled the later plugin. A release-as-a-plugin is a release,
// never among the enabled plugins: a plugin overriding its tasks is no overlap.
func pluginTaskOverlaps(m *Model) hcl.Diagnostics {
	type definition struct {
		ep *EnabledPlugin
		t  *loader.Task
	}
	var diags hcl.Diagnostics
	byType := map[string]map[string]definition{}
	for _, ep := range m.Plugins {
		for _, g := range ep.Plugin.Graphs {
			first := byType[g.Type]
			if first == nil {
				first = map[string]definition{}
				byType[g.Type] = first
			}
			for _, t := range g.Tasks {
				a, seen := first[t.ID]
				switch {
				case t.ID == "":
				case !seen:
					first[t.ID] = definition{ep, t}
				case a.ep != ep: // a plugin's own duplicates are the loader's
					p, q := a.ep.Plugin, ep.Plugin
					diags = append(diags, withDetail(errorAt(ep.Cause.Range, "Plugin %s-%s is overlapping with plugin %s-%s by introducing the same deployment task with id %s", q.Name, q.Version, p.Name, p.Version, t.ID),
						"Graph %s: task %s is defined by plugin %s at %s and by plugin %s at %s. nailgun refuses to deploy a cluster whose enabled plugins define the same task; enable only one of them.",
						g.Type, t.ID, p.Name, at(a.t.Range), q.Name, at(t.Range)))
				}
			}
		}
	}
	return diags
}
