//go:build !unix

package cli

// openFileLimit is unknown here.
func openFileLimit() (uint64, bool) { return 0, false }
