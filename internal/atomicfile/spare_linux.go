package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange exchanges the names a and b atomically (both must exist).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// errSpare says a spare file cannot be written over.
var errSpare = errors.New("atomicfile: the spare file is not usable")

// overwrite writes data over the spare file's content, when spare is a
// regular file of this user with permissions perm and one link; it opens
// it without following a symbolic link and without waiting (a FIFO). A
// spare that is there but not usable is removed.
func overwrite(spare string, data []byte, perm os.FileMode) error {
	fd, err := unix.Open(spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			_ = os.Remove(spare)
		}
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Uid != uint32(os.Geteuid()) || os.FileMode(st.Mode&0o7777) != perm {
		unix.Close(fd)
		_ = os.Remove(spare)
		return errSpare
	}
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err != nil {
			unix.Close(fd)
			return err
		}
		if n == 0 {
			unix.Close(fd)
			return errSpare
		}
		off += n
	}
	if st.Size > int64(len(data)) {
		if err := unix.Ftruncate(fd, int64(len(data))); err != nil {
			unix.Close(fd)
			return err
		}
	}
	return unix.Close(fd)
}
