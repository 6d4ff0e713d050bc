// Package decide holds the reconcile operation's decisions, as functions from
// data to data: no file, lock, clock or render (TestDecideIsPure). The
// operation (package operation) loads, renders, compares, locks and
// publishes; every rule of what that work means is here, tested by tables
// that run in milliseconds:
//
//   - attribute.go: which clusters an error holds (its own spec, the clusters
//     reading a file through tasks_path, the users of a release or plugin,
//     every cluster for fuelsync.yaml), and the problem lines of a status
//     (ProblemLines, capped);
//   - decide.go: the clusters of a run (Names), its targets and a shard's
//     own (CheckTargets, Owned, Scope), each cluster's disposition (Dispose),
//     then, once rendered and compared, Decide: held by errors or by the
//     empty-cluster guard (guard.go, Emptying), waiting for a dependency
//     synced or healthy (depends_on), awaiting approval (sync: manual, not
//     under --cluster), what the plan applies and keeps;
//   - status.go: every cluster's status and record (Statuses), the outcome of
//     a run (OutcomeOf), whether applying writes anything (NeedsApply);
//   - plan.go: the plan (Plan, ClusterRecord), a plan file's format
//     (ParsePlan), a saved plan's checks (CheckFresh, SamePlan: artifacts and
//     each cluster's status);
//   - approve.go: an approval's checks (CheckApproved, CheckPending,
//     CheckApproval);
//   - next.go: the state after applying a plan (NextState).
package decide
