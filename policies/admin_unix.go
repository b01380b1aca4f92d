//go:build unix

package policies

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading; a symbolic link fails to open.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
