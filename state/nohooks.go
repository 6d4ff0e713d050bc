//go:build !fuelsync_testhooks

package state

// step is where a build with the tag fuelsync_testhooks calls its test hook
// (hooks.go) before each step that changes the disk; without the tag, as
// released, it does nothing and is inlined away.
func step(string) error { return nil }

// readHook is where a build with the tag fuelsync_testhooks tells its test
// hook what a publish reads (hooks.go).
func readHook(string) {}
