//go:build unix

package cli

import "syscall"

// openFileLimit is the process's limit of open files (RLIMIT_NOFILE, its soft
// limit, which the Go runtime raised to the hard limit at start); false when
// it cannot be read.
func openFileLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
