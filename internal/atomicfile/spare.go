package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteSpare replaces the file at path with data, with permissions perm,
// atomically as Write does (a reader sees the old content or the new,
// never a mix), through spare, a file of its own in the same directory
// that only the writer of path uses, under the caller's lock. Where the
// file system can exchange two names atomically (Linux's renameat2 with
// RENAME_EXCHANGE), the data is written over spare's previous content and
// the two names are exchanged: path names the new content and spare the
// previous one, the next call's spare. That costs no new file and no
// freed one, and on ext4 no flush of the new data at the rename, which
// make Write cost about ten times as much CPU and wall-clock time for a
// small file. Elsewhere, or while there is no usable spare (the first
// calls, or a spare that is not a regular file of this user with
// permissions perm and one link), it writes a temporary file as Write
// does, and keeps the previous content as the spare when it can.
//
// What a killed process leaves: path with its old content or its new one,
// as Write. What a crash of the machine may leave differs from Write's on
// ext4: Write's rename over an existing file makes ext4 write the new data
// before the rename is committed (auto_da_alloc), while data written over
// spare is not ordered with the exchange, so after a power loss path may
// hold spare's previous content (the file as it was two writes before) or
// a mix of the two. Neither Write nor WriteSpare calls fsync.
//
// spare must be a path that nothing else writes or reads, in path's
// directory; a symbolic link, a hard link, a device or a FIFO found there
// is never written through: it is removed (the name, not what it points
// to) and replaced.
func WriteSpare(path, spare string, data []byte, perm os.FileMode) error {
	if filepath.Dir(spare) != filepath.Dir(path) {
		return errors.New("atomicfile: the spare file is not in the file's directory")
	}
	if err := overwrite(spare, data, perm); err == nil {
		if exchange(spare, path) == nil {
			return nil
		}
	}
	tmp, err := writeTemp(filepath.Dir(path), data, perm)
	if err != nil {
		return err
	}
	if exchange(tmp, path) == nil {
		// tmp holds path's previous content: the next spare. A spare
		// that was not usable is replaced; if the rename fails, the
		// temporary file goes.
		if os.Rename(tmp, spare) != nil {
			_ = os.Remove(tmp)
		}
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
