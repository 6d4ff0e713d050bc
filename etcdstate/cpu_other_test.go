//go:build !unix

package etcdstate

import (
	"time"

	"github.com/fuelsync/fuelsync/internal/benchutil"
)

// processCPU is this process's CPU time where there is no getrusage: from
// /proc/self/stat (benchutil.ProcessCPU), 0 where there is none.
func processCPU() time.Duration {
	d, _ := benchutil.ProcessCPU()
	return d
}
