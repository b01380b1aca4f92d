//go:build !unix

package logfile

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// lock takes a lock file created exclusively (O_EXCL), waiting up to ten
// seconds for it, and takes over one older than a minute (left behind by a
// process that died holding it). It returns its release.
func lock(path string) (func(), error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			return func() { _ = os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > time.Minute {
			_ = os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the log's lock is held by another writer")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
