//go:build fuelsync_testhooks && unix

package failpoint

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// cpuProfile makes the process write a CPU profile from SIGUSR1 to SIGUSR2
// into dir/<pid>.prof (make bench-shards profiles serve's replicas so),
// which appears complete: it is written as <pid>.prof.part and renamed.
func cpuProfile(dir string) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f *os.File
		name := filepath.Join(dir, fmt.Sprintf("%d.prof", os.Getpid()))
		for sig := range sigs {
			switch {
			case sig == syscall.SIGUSR1 && f == nil:
				var err error
				if f, err = os.Create(name + ".part"); err == nil {
					if pprof.StartCPUProfile(f) != nil {
						f.Close()
						f = nil
					}
				}
			case sig == syscall.SIGUSR2 && f != nil:
				pprof.StopCPUProfile()
				if f.Close() == nil {
					_ = os.Rename(name+".part", name)
				}
				f = nil
			}
		}
	}()
}
