// Package operation is fuelsync's one reconcile operation, which plan, apply,
// approve, watch and serve all run: read a revision, validate it, attribute
// every error to the clusters it concerns, render the clusters whose inputs
// changed, plan against the applied state (Plan: the change set, each
// cluster's status), and, when asked, apply under the lock (Apply: the next
// state and its artifacts in one switch). It also says each cluster's status
// line (ClusterInfos, HeadStatuses) and how a run ended (Outcome).
//
// The cluster is the unit: an error holds the clusters it concerns and every
// other cluster is planned and applied; each cluster's policy (suspend, sync:
// manual, depends_on) and the guard against emptied clusters are honoured
// once, for every command. Those decisions are operation/decide's, data to
// data; this package holds the effects around them, Run's phases (run.go:
// begin, load, attribute, render and compare, decide, check, confirm,
// publish).
//
// It refuses a saved plan that no longer matches its state or its revision,
// and an approval that is not the pending plan. It does not fetch revisions
// (a source hands it one), loop, serve, print or exit: the controller and the
// CLI decide when to run it and how to show its Result.
package operation
