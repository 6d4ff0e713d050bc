// Package reconcile keeps the applied state of a fuelsync work directory: the state
// file, the lock that serialises writers, the applied artifact sets, and the plan and
// apply operations built on them. Every change to the work directory is atomic: a
// crash at any instant leaves the previous complete state and artifacts, or the new
// ones, never a mix.
package reconcile
