package state

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The work directory's system calls on Linux, the one system that writes a
// work directory (system_other.go refuses elsewhere): flock(2) for the lock,
// renameat2(2)'s RENAME_EXCHANGE to replace a tree in one step, O_NOFOLLOW,
// and the link count of an object.

// CheckSystem says whether this system can write a work directory: it can.
func CheckSystem() error { return nil }

// tryLock takes f's flock without waiting: busy when another process holds it.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// exchange swaps the directories old and new in one step (both exist);
// syscall.EINVAL, ENOSYS or ENOTSUP when the file system cannot.
func exchange(old, new string) error {
	return unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_EXCHANGE)
}

// openNoFollow opens p, refusing a symlink there (O_NOFOLLOW).
func openNoFollow(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errForeignSymlink
	}
	return f, err
}

// linkCount is fi's number of hard links (false when unknown).
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
