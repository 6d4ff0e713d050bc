package state

import "github.com/fuelsync/fuelsync/base/failpoint"

// step is the failpoint before each step of Publish and Tidy that changes
// the disk (every mkdir, file creation, fsync, rename, symlink and removal),
// with a name for it; an error a test's failpoint returns is that step's
// error. Tests kill the process, or fail the step, at each step in turn.
// Without the tag fuelsync_testhooks, as released, it is inlined away.
func step(name string) error { return failpoint.Inject(failpoint.StateStep, name) }

// readHook is the failpoint told each content a publish reads to check it:
// an applied file (its artifact name) or an object or a tree's file (its
// path), a tree's or nodeset's directory ("dir " and its path), or a
// nodeset's node link ("link " and its path). Tests count what a publish
// reads.
func readHook(what string) { _ = failpoint.Inject(failpoint.StateRead, what) }

// pruneReadHook is the failpoint told each directory of links the pruning
// reads (readTreeLinks), its path. Tests count what a pruning reads.
func pruneReadHook(dir string) { _ = failpoint.Inject(failpoint.StatePruneRead, dir) }
