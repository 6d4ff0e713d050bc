// Package diff compares two renders of a repository: the change set (per cluster and
// node: what is new, deleted or changed, task by task, with the cause of each change)
// computed from the structured artifacts, and unified diffs of the artifact files
// that changed. It never prints; the CLI formats its results.
package diff
