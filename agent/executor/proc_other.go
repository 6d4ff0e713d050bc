//go:build !unix

package executor

import (
	"errors"
	"os"
	"os/exec"
)

const openNonblock = 0

func supported() error {
	return errors.New("executor: runs tasks on Unix systems only (process groups)")
}

func ownGroup(*exec.Cmd) {}

func ownPgrp() int { return 0 }

type signal int

const (
	sigTerm signal = iota
	sigKill
)

func signalGroup(int, signal) {}

func groupAlive(int) bool { return false }

func procStart(int) (string, bool) { return "", false }

func exitStatus(ps *os.ProcessState) (int, string) { return ps.ExitCode(), "" }
