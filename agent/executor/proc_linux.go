package executor

import (
	"os"
	"strconv"
	"strings"
)

// groupAlive reports whether group pgid has a process that is not a zombie
// (a zombie has ended: it only waits for its parent to reap it).
func groupAlive(pgid int) bool {
	if !groupExists(pgid) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		f, ok := procStat(ent.Name())
		if ok && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// procStart is process pid's start time (clock ticks since boot).
func procStart(pid int) (string, bool) {
	f, ok := procStat(strconv.Itoa(pid))
	if !ok {
		return "", false
	}
	return f[19], true
}

// procStat is the fields of /proc/<pid>/stat after the command's name:
// state, ppid, pgrp, … (starttime is the 20th).
func procStat(pid string) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return nil, false
	}
	return f, true
}
