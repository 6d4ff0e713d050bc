//go:build !linux

package state

import (
	"io/fs"
	"os"
	"syscall"
)

// Elsewhere than on Linux (system_linux.go) fuelsync reads a work directory
// but never writes one: the store relies on flock(2), renameat2(2), hard
// links and symlinks as Linux has them, and is tested there only. Taking
// the lock (apply, watch, serve, approve, state push) says so before
// anything is made; validate, render, plan, diff, explain, tags and plugin
// need no lock.

// CheckSystem says this system cannot write a work directory.
func CheckSystem() error { return ErrUnsupportedSystem }

func tryLock(*os.File) (bool, error) { return false, ErrUnsupportedSystem }

// exchange is not done here: the caller removes, then renames.
func exchange(string, string) error { return syscall.ENOTSUP }

// openNoFollow opens p, refusing a symlink there. Without O_NOFOLLOW on every
// system, it looks first (fuelsync writes no work directory here: what it
// reads here was copied in).
func openNoFollow(p string) (*os.File, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errForeignSymlink
	}
	return os.Open(p)
}

// linkCount is unknown here.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }
