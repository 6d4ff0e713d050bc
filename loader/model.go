package loader

import (
	"io/fs"

	"github.com/hashicorp/hcl/v2"
)

// Repo is one revision of a config repository, loaded and structurally validated.
type Repo struct {
	// Plugins in directory order (plugins/<dir>), release plugins included.
	Plugins []*Plugin
	// Releases defined by plugins (records with is_release: true), in plugin order.
	Releases []*Release
	// Clusters in file order.
	Clusters []*Cluster
	// Settings from fuelsync.yaml|hcl (zero when absent).
	Settings Settings
	// Sources holds the bytes of every file read, for diagnostic snippets.
	Sources *Sources
	// FS is the revision the repository was loaded from, for the files later
	// steps read themselves (Heat environments and templates).
	FS fs.FS

	// owned maps each cluster spec file the load read for its cluster alone
	// to that cluster (ClusterFingerprints).
	owned map[string]string
}

// Settings are the repository-wide defaults of fuelsync.yaml.
type Settings struct {
	File          string
	Workdir       string
	Interval      string
	Publish       string
	PublishBranch string
	// AllowEmpty lets watch and serve apply a revision that removes every node
	// of a cluster, or every cluster.
	AllowEmpty bool
	// State is where the state is kept: etcd://host:port[,...]/prefix (the
	// work directory when empty).
	State string
	// FeatureGroups is the `version:feature_groups` model of the expression language.
	FeatureGroups []string
	// Sync and Suspend are the clusters' defaults for their own sync: and
	// suspend: ("" and false when not written: auto, not suspended).
	Sync    string
	Suspend bool
	// Deploy is the clusters' default deploy: policy ("" when not written).
	Deploy string
	Data   *Value
}

// SyncPolicy is the sync policy of cluster c: its own sync:, else the
// repository's default, else "auto".
func (repo *Repo) SyncPolicy(c *Cluster) string {
	switch {
	case c.Sync != "":
		return c.Sync
	case repo.Settings.Sync != "":
		return repo.Settings.Sync
	}
	return "auto"
}

// DeployPolicy is the deploy policy of cluster c: its own deploy:, else the
// repository's default, else dflt (serve's: auto when it takes agents).
func (repo *Repo) DeployPolicy(c *Cluster, dflt string) string {
	switch {
	case c.Deploy != "":
		return c.Deploy
	case repo.Settings.Deploy != "":
		return repo.Settings.Deploy
	}
	return dflt
}

// Suspended says whether cluster c is suspended: its own suspend:, else the
// repository's default.
func (repo *Repo) Suspended(c *Cluster) bool {
	if c.SuspendSet {
		return c.Suspend
	}
	return repo.Settings.Suspend
}

// Plugin is one plugin package.
type Plugin struct {
	Name           string
	Title          string
	Version        string
	PackageVersion string
	Description    string
	// Dir is the package directory, repository-relative (plugins/<dir>).
	Dir string
	// MetadataFile is the file the metadata came from (metadata.yaml, plugin.hcl, ...).
	MetadataFile string
	// Metadata is metadata.yaml after `_path` loading.
	Metadata *Value
	// NameRange points at the plugin's name.
	NameRange hcl.Range
	// Compatible are the compatibility records: the releases this plugin extends.
	Compatible []*Compat
	// Defines are the releases this plugin defines (release-as-a-plugin).
	Defines        []*Release
	IsHotpluggable bool
	// Attributes is environment_config.yaml's `attributes` mapping.
	Attributes *Value
	// Roles from node_roles.yaml, in file order.
	Roles []*Role
	// Tags from node_tags.yaml (6.0.0).
	Tags []*TagMeta
	// Volumes is volumes.yaml (volumes, volumes_roles_mapping, ...).
	Volumes *Value
	// NetworkRoles is network_roles.yaml, a list.
	NetworkRoles *Value
	// Components from components.yaml (4.0.0+).
	Components []*Component
	// Graphs: deployment_tasks.yaml is the `default` graph.
	Graphs []*Graph
	// LegacyTasks is tasks.yaml (deprecated pre/post deployment tasks).
	LegacyTasks []*Value
}

// Compat is a compatibility record of a plugin's `releases:` list.
type Compat struct {
	OS      string
	Version string
	Mode    []string
	Range   hcl.Range
}

// Release is a release defined inside a plugin: the nailgun fixture item (if
// base_release_path names one) deep-merged with the record's own keys.
type Release struct {
	Name            string
	Version         string
	OperatingSystem string
	Description     string
	// Plugin is the plugin that defines this release.
	Plugin *Plugin
	// Data is the release with long key names (roles_metadata, tags_metadata, ...).
	Data  *Value
	Range hcl.Range

	Roles                  []*Role
	Tags                   []*TagMeta
	Components             []*Component
	RequiredComponentTypes []string
	Volumes                *Value
	NetworkRoles           *Value
	Attributes             *Value
	Graphs                 []*Graph
}

// Role is a node role: release roles_metadata or a plugin's node_roles.yaml entry.
type Role struct {
	Name string
	// Tags is the role's tag list; nil when the role has no `tags` key.
	Tags    []string
	HasTags bool
	// HasPrimary is the plugin-style `has_primary` on a role.
	HasPrimary bool
	Data       *Value
	Range      hcl.Range
}

// TagMeta is an entry of tags metadata.
type TagMeta struct {
	Name       string
	HasPrimary bool
	Range      hcl.Range
}

// Component is an entry of the component registry.
type Component struct {
	Name  string
	Data  *Value
	Range hcl.Range
}

// Graph is one task graph of a release, plugin or cluster, keyed by type.
type Graph struct {
	Type     string
	Name     string
	Metadata *Value
	Tasks    []*Task
	Range    hcl.Range
}

// Task is one deployment task. Data keeps every key as written (unknown keys too);
// the typed fields are the ones every later stage needs.
type Task struct {
	ID    string
	Type  string
	Data  *Value
	Range hcl.Range
}

// Cluster is a cluster spec, from YAML or HCL.
type Cluster struct {
	Name      string
	NameRange hcl.Range
	File      string
	// Release as written: a version, a name, or name@version.
	Release      string
	ReleaseRange hcl.Range
	Mode         string
	Plugins      []Ref
	Components   []Ref
	// Settings are attribute values, dotted keys expanded into nested mappings.
	Settings   *Value
	Resolution string
	// Tags are user-defined cluster tags.
	Tags []*TagMeta
	// RoleTags overrides a role's tag set for this cluster.
	RoleTags []RoleTags
	// Instances asks for automatic instance tags: tag → number of instances.
	Instances []Instance
	Nodes     []*Node
	// NodesRange is where `nodes:` is written (the cluster's name when absent), for
	// problems of the whole node set such as a role's minimum count.
	NodesRange hcl.Range
	// SettingsKeys holds, for every setting written, the dotted path and where it is,
	// in document order, so later checks can point at the line that set it.
	SettingsKeys []Setting
	// TasksPath and Tasks: cluster-level tasks (they override by id).
	TasksPath        string
	Tasks            []*Task
	Environments     []Ref
	Requires         *Value
	ResourceRegistry *Value

	// Sync is the cluster's sync policy as written ("auto" or "manual"; ""
	// when not written: the repository's default, Repo.SyncPolicy), and
	// SyncRange where.
	Sync      string
	SyncRange hcl.Range
	// Suspend, when written (SuspendSet), stops the cluster's reconciles: its
	// applied artifacts stay and are served; the repository's default applies
	// when it is not written (Repo.Suspended).
	Suspend    bool
	SuspendSet bool
	// Deploy is the cluster's deploy policy as written: auto (a deployment
	// run after each apply that changes it), manual, or "" (the
	// repository's default, Repo.DeployPolicy).
	Deploy string
	// DependsOn are the clusters that must be synced at a revision before this
	// one is applied at it (staging before production).
	DependsOn []Dependency
}

// Dependency is one entry of a cluster's depends_on.
type Dependency struct {
	Cluster string
	// Healthy asks for the cluster to be healthy too (its nodes' reports), not
	// only synced.
	Healthy bool
	Range   hcl.Range
}

// Setting is one value of a cluster's `settings:`.
type Setting struct {
	// Path is the dotted path from the settings root: group.attribute.value.
	Path  []string
	Value *Value
	Range hcl.Range
}

// Ref is a name written in a document, with its position.
type Ref struct {
	Name  string
	Range hcl.Range
}

// RoleTags is a per-cluster override of a role's tags.
type RoleTags struct {
	Role  string
	Tags  []string
	Range hcl.Range
}

// Instance asks for Count instance tags <Tag>:1..<Tag>:Count.
type Instance struct {
	Tag   string
	Count int
	Range hcl.Range
}

// Node is one node of a cluster.
type Node struct {
	Name      string
	NameRange hcl.Range
	ID        int
	Roles     []Ref
	Assign    []Ref
	Unassign  []Ref
}
