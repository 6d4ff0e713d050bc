//go:build !unix

package notify

import "os/exec"

// killGroup leaves cmd as it is: its cancellation kills the command alone.
func killGroup(*exec.Cmd) {}
