//go:build !unix

package agent

// lockDir: no lock on this system (the agent runs on Linux nodes).
func lockDir(string) (func(), error) { return func() {}, nil }
