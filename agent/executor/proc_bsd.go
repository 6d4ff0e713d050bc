//go:build unix && !linux

package executor

// groupAlive reports whether some process is in group pgid.
func groupAlive(pgid int) bool { return groupExists(pgid) }

// procStart is unknown here: a record's group is taken for the task's.
func procStart(int) (string, bool) { return "", false }
