package render

import (
	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render/components"
	"github.com/hashicorp/hcl/v2"
)

// Model is the merged model of one cluster: release ← enabled plugins ←
// cluster. Everything later stages need — which roles exist and which tags they
// carry, the attributes the expressions read, the chosen components — is here,
// already checked.
type Model struct {
	Cluster *loader.Cluster
	Release *loader.Release
	// Plugins are the enabled plugins: those listed in `plugins:` in that order, then
	// those a chosen component brought in, in registry order.
	Plugins []*EnabledPlugin
	// Roles are the release's roles then each enabled plugin's, in definition order.
	Roles []*Role
	// Tags is the merged tags metadata: release, then plugins, then the cluster's own
	// `tags:` (a later definition of a name wins).
	Tags map[string]*Tag
	// Volumes are the merged volumes metadata.
	Volumes Volumes
	// NetworkRoles are the release's network roles merged with the plugins'.
	NetworkRoles []*loader.Value
	// Attributes are the editable attributes: the release's groups, one group per
	// plugin compatible with the release (named after it, with metadata.enabled),
	// then the `bind` of every chosen component, then the cluster's `settings:`.
	Attributes *loader.Value
	// Sensitive holds the "group.attribute" paths of attributes of type password,
	// whose values are never printed.
	Sensitive map[string]bool
	// Registry offers the components of the release and of the plugins compatible
	// with it; Selected is the cluster's choice and States what the wizard shows.
	Registry *components.Registry
	Selected []string
	States   []components.State
	// Models are the roots of the expression language for this cluster.
	Models expr.Models
	// NodeTags are each node's tags, by node name.
	NodeTags map[string]*NodeTags
	// Warnings are the pre-deployment warnings written to cluster.yaml.
	Warnings []string

	roleIndex map[string]*Role
	nodeOrder []*NodeTags
}

// EnabledPlugin is a plugin the cluster enables, with the entry of the cluster spec
// that enabled it.
type EnabledPlugin struct {
	Plugin *loader.Plugin
	// Cause is the `plugins:` entry, or the `components:` entry of the component that
	// brought the plugin in.
	Cause loader.Ref
	// Component names the chosen component that enabled the plugin ("" when listed).
	Component string
	tasks     *pluginTaskSet
}

// Graphs returns the plugin's graphs with the defaults nailgun adds to a plugin's
// tasks (parameters.cwd, a group's fault_tolerance from the role of its id).
func (ep *EnabledPlugin) Graphs() []*loader.Graph {
	if ep.tasks == nil {
		return ep.Plugin.Graphs
	}
	g, _ := ep.tasks.get()
	return g
}

// taskDefaults returns the defaults added to each of the plugin's tasks.
func (ep *EnabledPlugin) taskDefaults() map[*loader.Task][]TaskDefault {
	if ep.tasks == nil {
		return nil
	}
	_, d := ep.tasks.get()
	return d
}

// Role is a node role of the merged model.
type Role struct {
	Name string
	Meta *loader.Role
	// Plugin owns the role; nil for a release role.
	Plugin *loader.Plugin
	// Tags are the role's tags: the cluster's override, else the role's `tags`, else
	// [Name]. TagsRange is where they are written.
	Tags      []string
	TagsRange hcl.Range
	// Conflicts lists the roles this one cannot share a node with; ConflictsAll is
	// `conflicts: "*"` (every other role).
	Conflicts    []string
	ConflictsAll bool
	Restrictions []*Restriction
	Limits       *Limits
}

// Owner names where the role comes from, for messages: "release" or "plugin <name>".
func (r *Role) Owner() string {
	if r.Plugin != nil {
		return "plugin " + r.Plugin.Name
	}
	return "release"
}

// Tag is an entry of the merged tags metadata.
type Tag struct {
	Name       string
	HasPrimary bool
	// Owner is "release", "plugin <name>" or "cluster".
	Owner string
	Range hcl.Range
}

// Restriction is one entry of a role's `restrictions`, in its canonical form.
type Restriction struct {
	Condition string
	Message   string
	// Action is disable (the default), hide, enable or none. Role checks honour every
	// action, as nailgun's assignment validator does.
	Action string
	Strict bool
	// Expr is nil when the condition does not parse (already reported).
	Expr *expr.Expr
	// Range is the condition as written; Implicit marks the plugin-enabled condition
	// fuelsync prepends to a plugin role (it is written nowhere).
	Range    hcl.Range
	Implicit bool
}

// Limits are a role's node-count limits.
type Limits struct {
	Min, Max, Recommended *LimitValue
	Message               string
	Overrides             []*LimitOverride
	Range                 hcl.Range
}

// LimitOverride replaces some limits while its condition holds.
type LimitOverride struct {
	Condition             *Restriction
	Min, Max, Recommended *LimitValue
	Message               string
}

// LimitValue is a limit as written: an integer or an expression that evaluates to one.
type LimitValue struct {
	Text  string
	Expr  *expr.Expr
	Range hcl.Range
}

// Volumes is the merged volumes metadata.
type Volumes struct {
	// Volumes are the volume definitions (release first, then plugins).
	Volumes []*loader.Value
	// RolesMapping maps a role to its volume allocations; RoleOrder keeps the order
	// the roles were first defined in.
	RolesMapping map[string]*loader.Value
	RoleOrder    []string
	// BootDisk is rule_to_pick_boot_disk, concatenated.
	BootDisk []*loader.Value
}

// Role returns the role named name, or nil.
func (m *Model) Role(name string) *Role { return m.roleIndex[name] }

// Plugin returns the enabled plugin named name, or nil.
func (m *Model) Plugin(name string) *EnabledPlugin {
	for _, p := range m.Plugins {
		if p.Plugin.Name == name {
			return p
		}
	}
	return nil
}
