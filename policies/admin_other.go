//go:build !unix

package policies

import "os"

// openNoFollow opens path for reading. This platform has no O_NOFOLLOW;
// adminSources refuses an admin layer here before reading it
// (fileowner.Supported is false).
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
