//go:build fuelsync_testhooks && unix

package cli

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// profileHookFromEnv makes serve write a CPU profile when
// FUELSYNC_TEST_CPUPROFILE=DIR: from SIGUSR1 to SIGUSR2, into
// DIR/<pid>.prof (make bench-shards profiles the replicas so).
func profileHookFromEnv() {
	dir := os.Getenv("FUELSYNC_TEST_CPUPROFILE")
	if dir == "" {
		return
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f *os.File
		for sig := range sigs {
			switch {
			case sig == syscall.SIGUSR1 && f == nil:
				var err error
				if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("%d.prof", os.Getpid()))); err == nil {
					if pprof.StartCPUProfile(f) != nil {
						f.Close()
						f = nil
					}
				}
			case sig == syscall.SIGUSR2 && f != nil:
				pprof.StopCPUProfile()
				f.Close()
				f = nil
			}
		}
	}()
}
