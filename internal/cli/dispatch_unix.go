//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// execServer replaces this process by bin: the pid, the open files and the
// signals' targets stay, the exit status is the server's.
func execServer(bin string, argv, env []string) error {
	err := syscall.Exec(bin, argv, env)
	return &exitError{code: 1, msg: fmt.Sprintf("running %s: %v", bin, err)}
}
