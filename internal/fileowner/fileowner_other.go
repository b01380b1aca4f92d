//go:build !unix

package fileowner

import "io/fs"

// UID returns the user id owning the file fi describes; ok is false when the
// platform does not say, which on this platform is always.
func UID(fs.FileInfo) (uid uint32, ok bool) { return 0, false }

// Supported reports whether UID can answer on this platform.
const Supported = false
