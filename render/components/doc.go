// Package components is the component registry of a release: the
// release's components_metadata and the components.yaml of the plugins compatible
// with it, the validation of a cluster's `components:` selection, the wizard's
// per-component state for a selection, the component-registry API's JSON, the plugins
// a selection enables and the attributes it binds.
//
// It ports nailgun (openstack-archive/fuel-web) and fuel-ui behaviour:
//
//   - New follows PluginManager.get_components_metadata and
//     Release.get_all_components: release components first, then each plugin's; a
//     name already introduced by the release or another plugin is the error
//     `Plugin <p> is overlapping with release|<q> by introducing the same component
//     with name "<n>"` at the later definition (a plugin repeating its own name keeps
//     the first, with a warning). Compatible and incompatible are then made
//     symmetric: when A lists an entry matching B and B lists nothing matching A, B
//     gets {name: A} or {name: A, message: "Not compatible with <A's label or
//     name>"}; such relations are marked Added.
//   - Match is nailgun's _resolve_names_for_dependency: a pattern with '*' matches
//     every name starting with what precedes the first '*'.
//   - Validate is ComponentsRestrictions.validate_components with its messages. nailgun
//     raises at its first error; Validate reports every failed check in nailgun's
//     order, so its first Problem is nailgun's error. Names in messages are sorted
//     (where nailgun prints a set), and a relation entry's `message` is appended after
//     a space, as fuel-ui shows it next to the check.
//   - API is what GET /api/v1/releases/<id>/components returns: every key as written
//     except `bind` (nailgun's handler test shows bind removed), `default` included
//     when written (fuel-ui reads it to preselect), relations after completion, keys
//     not written left out.
//   - States is fuel-ui's creation wizard (static/views/wizard.js, models.js) applied
//     to a complete selection. A chosen component is "selected". Another one is
//     "disabled" when adding it would fail its own checks — an incompatible entry
//     (processIncompatible; symmetric relations make this two-way) or a requires entry
//     (processPaneRequires) — with Validate's messages as the reason; the wizard gives
//     forthcoming panes the benefit of the doubt, which a complete selection does not
//     need. Otherwise it is "available". Compatible is processCompatible's green
//     light: every other chosen component of the component's own pane or an earlier
//     one (hypervisor, network, storage, additional_service) matches one of its
//     compatible entries. fuel-ui computes no light on the hypervisor pane; the same
//     rule is applied there.
//   - PluginsFor is PluginManager.enable_plugins_by_components; Binds gives the `bind`
//     entries of Cluster.get_cluster_attributes_by_components: a path string
//     (value true), a [path, value] pair (YAML !!pairs), or a one-key mapping.
//
// The package never prints, never exits and does no file I/O; problems in release or
// plugin data are hcl.Diagnostics at the data, problems of a selection are Problems
// at the selected entry.
package components
