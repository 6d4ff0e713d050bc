// Package render turns a loaded repository into what fuelsync deploys.
//
// This first layer is the merged model of a cluster: the cluster's release,
// the plugins it enables (listed in `plugins:` or brought in by a chosen component),
// and the cluster's own data, merged the way nailgun merges them — roles and their
// tags, tags metadata, volumes, network roles, attributes with the cluster's
// `settings:` and the `bind` of every chosen component — together with the checks
// that only make sense on that merged model: plugin↔release compatibility, the
// upstream overlap errors, the component registry's validation of the selection,
// and the role checks (unknown roles, conflicts, restrictions, limits).
//
// Build returns a Model and every problem as an hcl.Diagnostic. Problems caused by
// the cluster spec point at the entry of the spec that caused them (the role of a
// node, the component, the plugin); problems in release or plugin data (an
// expression that does not parse) point at that data.
//
// The package never prints, never exits and does no file I/O.
package render
