//go:build unix

package etcdstate

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time, user and system, to the
// microsecond.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
