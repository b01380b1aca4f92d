//go:build unix

package statedir

import (
	"errors"
	"fmt"
	"io/fs"
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
		f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o600)
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

// oMarker are the flags a pending marker is made with besides O_CREATE:
// an open that fails on a symbolic link, and on a FIFO without a reader
// instead of waiting for one (a FIFO made there would otherwise hang the
// event that records a pending after-event).
const oMarker = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// openFile is os.OpenFile for a regular file that is read or written
// whole and at once (a lock file, a state file): the file is not given to
// the runtime's poller, which os.OpenFile tries for every file it opens
// (four fcntl and an epoll_ctl that fails for a regular file, at every
// event); os.NewFile leaves a blocking descriptor blocking.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// openRegular opens path for reading when it is a regular file. It opens
// without waiting (O_NONBLOCK: a FIFO with no writer would otherwise hold
// the open, and the event, for ever) and refuses anything but a regular
// file with errNotRegular, so that a FIFO, a device or a directory put in
// the state file's place cannot hang or feed an event.
func openRegular(path string) (*os.File, error) {
	f, err := openFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	// A regular file's reads do not wait either way; the descriptor is
	// made blocking again as openFile's are.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return f, nil
}
