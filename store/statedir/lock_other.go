//go:build !unix

package statedir

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// staleLock is how old a lock file must be before it is taken to be left
// behind by a process that died holding it.
const staleLock = 30 * time.Second

// fileLock is a lock file created exclusively (O_EXCL), for systems without
// flock(2). It exists only while held.
type fileLock struct {
	path string
}

// tryLockFile takes the lock if nobody holds it; it returns nil and no
// error when somebody does.
func tryLockFile(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
		return &fileLock{path: path}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > staleLock {
		_ = os.Remove(path)
	}
	return nil, nil
}

// removeLocked is a no-op: unlock removes the file.
func (l *fileLock) removeLocked() {}

// unlock releases the lock.
func (l *fileLock) unlock() error {
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// oMarker: no such flags here; a marker is an empty file either way.
const oMarker = 0

// openFile is os.OpenFile.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// openRegular opens path for reading when it is a regular file, and
// refuses anything else with errNotRegular.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
		}
		return nil, err
	}
	return f, nil
}
