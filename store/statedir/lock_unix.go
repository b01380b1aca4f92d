//go:build unix

package statedir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fileLock is an exclusive flock(2) on a lock file.
type fileLock struct {
	f    *os.File
	path string
}

// tryLockFile takes the lock on path if nobody holds it; it returns nil and
// no error when somebody does.
func tryLockFile(path string) (*fileLock, error) {
	for range 16 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
				return nil, nil
			}
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		// Cleanup may have removed the file between open and flock: then
		// the lock is on a file nobody else will open; take the new one.
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return &fileLock{f: f, path: path}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("the lock file %s keeps being replaced", path)
}

// removeLocked removes the lock file while the lock is held; a process
// waiting on it notices and locks the new file instead.
func (l *fileLock) removeLocked() { _ = os.Remove(l.path) }

// unlock releases the lock.
func (l *fileLock) unlock() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// oNoFollow makes an open fail on a symbolic link (a pending marker).
const oNoFollow = syscall.O_NOFOLLOW
