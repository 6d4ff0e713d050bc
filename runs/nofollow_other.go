//go:build !unix

package runs

// noFollow: this system has no O_NOFOLLOW (the directories are checked).
const noFollow = 0
