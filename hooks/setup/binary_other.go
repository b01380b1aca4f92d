//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package setup

import "os"

// writable reports whether path's permission bits let anyone write it; a
// path that cannot be read counts as writable (warn rather than not).
func writable(path string) bool {
	fi, err := os.Stat(path)
	return err != nil || fi.Mode().Perm()&0o222 != 0
}
