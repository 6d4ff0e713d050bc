//go:build fuelsync_testhooks && !unix

package failpoint

// cpuProfile profiles nothing where there is no SIGUSR1 (the benchmarks that
// use it run on Linux).
func cpuProfile(string) {}
