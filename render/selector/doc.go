// Package selector answers which nodes of a cluster a task selector selects, the way
// nailgun's TagResolver (nailgun/utils/resolvers.py with nailgun/policy/name_match.py)
// does, and computes the fault tolerance of a task group the way
// nailgun's TransactionSerializer.calculate_fault_tolerance does.
//
// A selector is the value of a task's `tags`, `roles`/`role` or `groups` key, or of
// the `role`/`tags` of a cross-dependency entry:
//
//   - the string "*" selects every node (never the master pseudo node);
//   - any other string is a one-item list;
//   - in a list, the item "master" selects the master pseudo node, an item written
//     "/re/" selects every node having a tag that the regular expression matches at
//     the start of the tag (Python's re.match: `/c.+/` matches "compute" but not
//     "primary-controller"), and any other item selects the nodes having exactly
//     that tag — so the list item "*" only selects a tag literally named "*";
//   - null, a mapping or a non-string scalar selects nothing and is reported as
//     malformed, so that the caller can warn.
//
// Results are node names sorted by node id, the master pseudo node first when it is
// selected, without duplicates. A cross dependency's policy is not the resolver's
// business here: with policy any, nailgun's TagResolver keeps one node of the result
// (the first of a Python set), while fuelsync's render keeps the first node of the
// result that runs the task the dependency names.
//
// An Index is built once per cluster and then answers queries quickly: tags are
// indexed to nodes when it is built, and each regular expression is compiled and
// matched against the cluster's tags once, on first use. An Index is safe for
// concurrent use.
package selector
