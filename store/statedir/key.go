package statedir

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/celguard/celguard/internal/atomicfile"
)

// KeyFile is the name of the key in the state directory.
const KeyFile = "key"

// keySize is the length of the key in bytes.
const keySize = 32

// Key is the secret that authenticates what celguard keeps in its state
// directory (the AST cache and the session state): every entry and every
// state file carries an HMAC-SHA256 under it, so a file the agent rewrote
// fails its check. It is 32 random bytes in the state directory's "key"
// file, mode 0600, made on first use. Its bytes are never printed.
//
// A key file that exists but cannot be read, or does not hold exactly 32
// bytes, or that others may read, is an error, and the hook then fails
// closed: celguard never replaces a key it cannot use, because the
// replacement would make state signed with it, chosen by whoever broke the
// old one, look valid. A missing key is made afresh: every file signed
// with the old key then fails its check, which is the safe outcome
// (approvals dropped, counters at their ceiling; see docs/hooks.md).
type Key struct {
	k [keySize]byte
	// macs reuses HMAC states: a warm hook checks hundreds of entries.
	macs sync.Pool
}

// String never shows the key.
func (k *Key) String() string { return "celguard state key (redacted)" }

// GoString never shows the key.
func (k *Key) GoString() string { return k.String() }

// Domains separate the MACs of the different files the key authenticates,
// so that bytes signed for one can never pass as the other.
// A user of the key outside this package (the hooks' AST cache) names its
// own domain.
const (
	domainState   = "celguard session state v1"
	domainPending = "celguard pending after-event v1"
)

// Sum is the HMAC-SHA256 of parts under the domain, each part preceded by
// its length so that no two lists of parts share an input.
func (k *Key) Sum(domain string, parts ...[]byte) []byte {
	m, ok := k.macs.Get().(hash.Hash)
	if !ok {
		m = hmac.New(sha256.New, k.k[:])
	}
	defer func() {
		m.Reset()
		k.macs.Put(m)
	}()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(domain)))
	m.Write(n[:])
	io.WriteString(m, domain)
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// Verify reports whether mac is the MAC of parts under the domain, in
// constant time.
func (k *Key) Verify(mac []byte, domain string, parts ...[]byte) bool {
	return hmac.Equal(mac, k.Sum(domain, parts...))
}

// LoadKey reads the key of a state directory, making the directory (0700)
// and the key (0600) when missing. Two processes that make it at once get
// the same key: the key is written in full to a temporary file and linked
// into place, which fails for all but the first; the others read it.
func LoadKey(dir string) (*Key, error) {
	if dir == "" {
		return nil, errors.New("no state directory for the state key")
	}
	path := filepath.Join(dir, KeyFile)
	k, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	return createKey(path)
}

// ReadKey reads the key of a state directory without making one: an error
// that is fs.ErrNotExist when there is none yet. The lean hook client
// (cmd/celguard-hook) uses it: it never writes the state directory, and
// leaves making the key to the full hook it runs when there is none.
func ReadKey(dir string) (*Key, error) {
	if dir == "" {
		return nil, errors.New("no state directory for the state key")
	}
	return readKey(filepath.Join(dir, KeyFile))
}

// readKey reads and checks an existing key file.
func readKey(path string) (*Key, error) {
	// Opened without waiting: a FIFO put in the key's place would
	// otherwise hang every hook at its first read of the key.
	f, err := openRegular(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if errors.Is(err, errNotRegular) {
			return nil, keyError(path, "is not a regular file")
		}
		return nil, keyError(path, fmt.Sprintf("cannot be read (%v)", errors.Unwrap(err)))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, keyError(path, fmt.Sprintf("cannot be read (%v)", err))
	}
	if !fi.Mode().IsRegular() {
		return nil, keyError(path, "is not a regular file")
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, keyError(path, fmt.Sprintf("may be read or written by others (mode %v, want 0600)", fi.Mode().Perm()))
	}
	var k Key
	n, err := io.ReadFull(f, k.k[:])
	if err == nil {
		// Exactly keySize bytes: nothing may follow.
		var extra [1]byte
		if m, _ := f.Read(extra[:]); m > 0 {
			err = errors.New("too long")
		}
	}
	if err != nil {
		return nil, keyError(path, fmt.Sprintf("does not hold a key (%d bytes read, want exactly %d)", n, keySize))
	}
	return &k, nil
}

// keyError says what is wrong with the key file and what to do. It never
// includes the key's bytes.
func keyError(path, what string) error {
	return fmt.Errorf("the state key %s %s; celguard will not decide with it nor replace it. "+
		"If you did not change it, something else did: remove it (celguard then makes a new one, and every session's state "+
		"and cached expressions written with the old one are treated as tampered)", path, what)
}

// createKey makes a new key at path, or reads the one a concurrent process
// made first.
func createKey(path string) (*Key, error) {
	var k Key
	if _, err := rand.Read(k.k[:]); err != nil {
		return nil, fmt.Errorf("cannot make a state key: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, atomicfile.TempPrefix+"key-*")
	if err != nil {
		return nil, fmt.Errorf("cannot make the state key in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600.
	if err := writeKey(tmp, &k); err != nil {
		return nil, fmt.Errorf("cannot write the state key in %s: %w", dir, err)
	}
	// A hard link is made complete or not at all, and never over an
	// existing file: exactly one creator wins, and readers never see a
	// partly written key.
	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return &k, nil
	case errors.Is(err, fs.ErrExist):
		return readKey(path)
	}
	// A file system without hard links: create the key exclusively.
	return createKeyExclusive(path, &k)
}

// createKeyExclusive makes the key with O_EXCL, for file systems without
// hard links. A concurrent creator may see the file before its bytes are
// written; it waits a little for them.
func createKeyExclusive(path string, k *Key) (*Key, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		for range 50 {
			if fi, err := os.Stat(path); err == nil && fi.Size() == 0 && time.Since(fi.ModTime()) < 5*time.Second {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		return readKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot create the state key %s: %w", path, err)
	}
	if err := writeKey(f, k); err != nil {
		// A partly written key would be refused forever; remove it so the
		// next hook makes another.
		_ = os.Remove(path)
		return nil, fmt.Errorf("cannot write the state key %s: %w", path, err)
	}
	return k, nil
}

// writeKey writes the key's bytes to f, syncs and closes it.
func writeKey(f *os.File, k *Key) error {
	_, err := f.Write(k.k[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
