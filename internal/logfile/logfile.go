// Package logfile appends lines to a log file that several processes write
// at once (every hook process of a laptop's agents, an eval stream, a
// server): each line is one write(2) to a file opened with O_APPEND, under
// an exclusive lock on FILE.lock, so that lines never interleave and the
// size bound and rotation are decided by one writer at a time. It is
// internal: the decision log (eval.FileSink) is its user.
package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// DefaultMaxBytes is the size past which the log rotates when Options
// gives none.
const DefaultMaxBytes = 64 << 20

// Options configures a File.
type Options struct {
	// MaxBytes bounds the file: a line that would take it past the bound
	// first moves the file to FILE.1 (replacing an older FILE.1), so the
	// log holds at most about twice MaxBytes. Zero means DefaultMaxBytes;
	// a negative value never rotates.
	MaxBytes int64
	// Sync makes every line durable before Append returns (fsync); without
	// it the operating system writes the line back later, so a crash of
	// the machine (not of the process) may lose the last lines.
	Sync bool
}

// File is a log file lines are appended to. It is safe for concurrent use,
// and several processes may append to the same path.
type File struct {
	path string
	opts Options
	mu   sync.Mutex
}

// Open checks that path can be appended to (creating it, mode 0600, and its
// directory, mode 0700, if they do not exist) and returns the File.
func Open(path string, opts Options) (*File, error) {
	if path == "" {
		return nil, errors.New("logfile: no path")
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &File{path: path, opts: opts}, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Append writes line (which must end with a newline and hold no other) in
// one write, rotating the file first when it would pass the size bound.
func (f *File) Append(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' || bytes.IndexByte(line, '\n') != len(line)-1 {
		return errors.New("logfile: a line must end with a newline and hold no other")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := lock(f.path + ".lock")
	if err != nil {
		return fmt.Errorf("lock %s.lock: %w", f.path, err)
	}
	defer unlock()
	if f.opts.MaxBytes > 0 {
		if fi, err := os.Stat(f.path); err == nil && fi.Size() > 0 && fi.Size()+int64(len(line)) > f.opts.MaxBytes {
			if err := os.Rename(f.path, f.path+".1"); err != nil {
				return fmt.Errorf("rotate %s: %w", f.path, err)
			}
		}
	}
	w, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	n, err := w.Write(line)
	if err == nil && n < len(line) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(line))
	}
	if err == nil && f.opts.Sync {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
