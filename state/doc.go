// Package state keeps what fuelsync has applied: the work directory (the
// applied artifact sets, the content-addressed objects and trees they share,
// the marker that says the directory is fuelsync's) and the state that
// describes them (State: the serial, the lineage, each cluster's record and
// status), with the lock that serialises writers. The state and the lock live
// in the work directory itself, or on a Backend (etcd, registered by
// etcdstate); a Coordinator adds what serve's replicas share.
//
// Every change is atomic: Publish writes a new set with its state and switches
// to both at once, so a crash at any instant leaves the previous complete state
// and artifacts, or the new ones, never a mix. A state from outside (state push,
// etcd) is held to bounds (Check) before it is stored.
//
// The package does not load, render or plan: it stores the artifacts and
// records it is handed (the operation decides them), reads no repository, and
// never prints or exits; what a user should know but is no error goes to
// Workdir.Warn.
package state
