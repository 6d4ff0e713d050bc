//go:build unix

package executor

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// openNonblock opens without blocking on a FIFO (copy_files' sources).
const openNonblock = syscall.O_NONBLOCK

func supported() error { return nil }

// ownGroup starts cmd in a process group of its own, whose id is its pid:
// signals to the group reach the command's children too.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func ownPgrp() int { return syscall.Getpgrp() }

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// signalGroup sends sig to every process of group pgid.
func signalGroup(pgid int, sig signal) {
	s := syscall.SIGTERM
	if sig == sigKill {
		s = syscall.SIGKILL
	}
	syscall.Kill(-pgid, s) // ESRCH: the group has ended
}

// groupExists reports whether some process is in group pgid (zombies
// included).
func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// exitStatus is how a command ended: its exit code, or the signal that
// killed it.
func exitStatus(ps *os.ProcessState) (code int, sig string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
