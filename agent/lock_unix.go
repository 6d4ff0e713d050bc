//go:build unix

package agent

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the state directory's lock file: one agent per directory.
func lockDir(name string) (func(), error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another agent runs with this state directory (%s is locked)", name)
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}
