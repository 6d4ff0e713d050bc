//go:build unix

package runs

import "syscall"

// noFollow opens no stored file through a symbolic link.
const noFollow = syscall.O_NOFOLLOW
