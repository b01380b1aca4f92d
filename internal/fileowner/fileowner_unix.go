//go:build unix

package fileowner

import (
	"io/fs"
	"syscall"
)

// UID returns the user id owning the file fi describes; ok is false when the
// platform does not say (fi did not come from the operating system).
func UID(fi fs.FileInfo) (uid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// Supported reports whether UID can answer on this platform.
const Supported = true
