// Package atomicfile replaces files atomically, for the files celguard
// writes that another process may read at the same moment: a hook's session
// state and expression cache, a host's settings file.
package atomicfile

import (
	"os"
	"path/filepath"
)

// TempPrefix starts the name of the temporary file Write renames into
// place; one left behind by an interrupted write has a name starting with
// it, in the same directory.
const TempPrefix = ".tmp-"

// Write replaces the file at path with data, with permissions perm: it
// writes a temporary file in the same directory and renames it over path,
// so that a reader sees the old content or the new, never a mix. The
// directory must exist. On failure the temporary file is removed and path is
// left as it was.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(filepath.Dir(path), data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file in dir, with permissions
// perm, and returns its path; on failure the file is removed.
func writeTemp(dir string, data []byte, perm os.FileMode) (string, error) {
	tmp, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}
