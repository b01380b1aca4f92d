//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package setup

import "syscall"

// writable reports whether the current user may write path (access(2)).
func writable(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}
