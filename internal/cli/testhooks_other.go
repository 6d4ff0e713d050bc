//go:build fuelsync_testhooks && !unix

package cli

// profileHookFromEnv profiles nothing where there is no SIGUSR1 (the
// benchmarks that use it run on Linux).
func profileHookFromEnv() {}
