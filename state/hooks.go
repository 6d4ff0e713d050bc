//go:build fuelsync_testhooks

package state

// The test hooks, in a build with the tag fuelsync_testhooks only (make test,
// the kill tests): a released fuelsync has no TestHookStep, and its step is
// the no-op of nohooks.go, which the compiler removes.

// TestHookStep, when not nil, is called before each step of Publish and Tidy
// that changes the disk (every mkdir, file creation, fsync, rename, symlink and
// removal), with a name for it; an error it returns is that step's error. Tests
// set it to kill the process, or fail the step, at each step in turn.
var TestHookStep func(step string) error

func step(name string) error {
	if TestHookStep != nil {
		return TestHookStep(name)
	}
	return nil
}

// TestHookRead, when not nil, is told each content a publish reads to check
// it: an applied file (its artifact name) or an object or a tree's file (its
// path). Tests count what a publish reads.
var TestHookRead func(what string)

func readHook(what string) {
	if TestHookRead != nil {
		TestHookRead(what)
	}
}
