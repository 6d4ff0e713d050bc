// Package failpoint is fuelsync's one mechanism for test hooks, as etcd's
// gofail: named points in the code where a test build can fail a step, kill
// the process, pause it or count what passes.
//
// A point is a call to Inject with the point's name (one of the constants
// below) and what the point is about (a step's name, the clusters a commit
// writes); an error it returns is the caller's to return. A point does
// nothing until it is enabled, by name, in one of two ways:
//
//   - from a test in the same process: Enable(name, f), Disable(name);
//   - in a child process (the kill tests run the test binary as fuelsync):
//     the environment variable FUELSYNC_FAILPOINTS, read once at start, as
//     "name=term[,term...][;name=term...]", with the terms
//     kill@N (the Nth evaluation of the point kills the process with SIGKILL:
//     no deferred function, no cleanup runs), fail@N (the Nth evaluation
//     fails with ENOSPC, as a full disk), pause(DIR) (when the file DIR/arm
//     exists, the point removes it, writes its arguments to DIR/paused and
//     waits until DIR/paused is removed) and cpuprofile(DIR) (from the point
//     on, SIGUSR1 starts a CPU profile into DIR/<pid>.prof and SIGUSR2 ends
//     it; Unix only). kill and fail say on stderr what they do.
//
// The points exist only in a build with the tag fuelsync_testhooks (make
// test). Without it, as released, Inject is a function that returns nil,
// which the compiler inlines away, Enable and Disable do nothing, and
// FUELSYNC_FAILPOINTS is never read: a released binary has no failpoint.
package failpoint

// The points. Each is injected at one place (docs/design.md lists them).
const (
	// StateStep is before each step of a publish or tidy that changes the
	// disk (every mkdir, file creation, fsync, rename, symlink and removal,
	// and the commit on etcd), with the step's name; its error is the
	// step's.
	StateStep = "state/step"
	// StateRead is told each content a publish reads to check it: an
	// applied file (its artifact name), an object or a tree's file (its
	// path), a tree's or nodeset's directory ("dir " and its path), or a
	// nodeset's node link ("link " and its path).
	StateRead = "state/read"
	// StatePruneRead is told each directory of links the pruning of the
	// nodesets and trees reads (a nodeset, or a set's own nodes/), with its
	// path.
	StatePruneRead = "state/prune-read"
	// OperationManifest is told each encoding of a set's manifest.json by
	// a plan or a publish.
	OperationManifest = "operation/manifest"
	// ShardCommit is between a shard replica's plan (the set written) and
	// its commit to etcd, with the clusters it commits.
	ShardCommit = "controller/shard-commit"
	// CLILoad is at each load of a configuration by a CLI command's
	// operation.
	CLILoad = "cli/load"
	// CLIRender is told the clusters each render of a CLI command renders.
	CLIRender = "cli/render"
	// CLIRenderApplied is told the clusters of applied revisions a CLI
	// command renders again.
	CLIRenderApplied = "cli/render-applied"
	// ServeShard is where serve --shard has built its shard, before it
	// serves.
	ServeShard = "cli/serve-shard"
)

// EnvVar names the environment variable that enables points in a process
// from its start (in a build with the tag fuelsync_testhooks only).
const EnvVar = "FUELSYNC_FAILPOINTS"

// Func is what an enabled point runs, given the point's arguments; its
// error is the point's.
type Func func(args ...string) error
