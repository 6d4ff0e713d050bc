//go:build !fuelsync_testhooks

package failpoint

// Enabled says whether the failpoints are built in: not without the tag
// fuelsync_testhooks.
const Enabled = false

// Inject does nothing without the test hooks: it is inlined away, arguments
// and all.
func Inject(string, ...string) error { return nil }

// Enable does nothing without the test hooks.
func Enable(string, Func) {}

// Disable does nothing without the test hooks.
func Disable(string) {}
