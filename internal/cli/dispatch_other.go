//go:build !unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// execServer runs bin as a child with this process's standard files, and exits
// with its exit status (no exec(2) here).
func execServer(bin string, argv, env []string) error {
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode()}
	}
	if err != nil {
		return &exitError{code: 1, msg: fmt.Sprintf("running %s: %v", bin, err)}
	}
	return &exitError{code: 0}
}
