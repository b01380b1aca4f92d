package hooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/atomicfile"
)

// Defaults of a Store.
const (
	// DefaultMaxStateBytes caps a session's state file. Counter keys and
	// approvals are bounded by the engine; the cap catches what those
	// bounds do not (long keys) and a file grown by something else.
	DefaultMaxStateBytes = 4 << 20
	// DefaultMaxAge is how long a session's state is kept after its last
	// event.
	DefaultMaxAge = 7 * 24 * time.Hour
	// cleanupEvery is how often a hook looks for old sessions.
	cleanupEvery = 6 * time.Hour
)

// Store keeps session state across hook processes: one JSON file
// (eval.SessionState) per session in Dir, named after the sanitised session
// id, replaced atomically (a temporary file renamed over it) while an
// exclusive lock on the session's lock file is held, so that concurrent hooks
// of one session (Codex runs them concurrently) each see the others' counts.
type Store struct {
	// Dir is the state directory; it is created (0700) when missing.
	Dir string
	// MaxBytes caps a state file: a larger file is not read and a state
	// that would encode larger is not written, and either is an error (so a
	// hook fails closed). Zero means DefaultMaxStateBytes.
	MaxBytes int64
	// MaxAge is how long a session's files are kept after their last
	// change. Zero means DefaultMaxAge; negative disables cleanup.
	MaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultStateDir is $XDG_STATE_HOME/celguard, or ~/.local/state/celguard.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "celguard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir: %w", err)
	}
	return filepath.Join(home, ".local", "state", "celguard"), nil
}

func (s *Store) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxStateBytes
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// FileName is the base name of a session's state file: the session id with
// every character outside [A-Za-z0-9_-] replaced by '_', cut to 64
// characters, then '-' and 16 hex digits of the id's SHA-256, so that two
// ids never share a file and no id can name a path outside the directory.
func FileName(sessionID string) string {
	var b strings.Builder
	for _, r := range sessionID {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(sessionID))
	return "s-" + b.String() + "-" + hex.EncodeToString(sum[:8]) + ".json"
}

// Path is the state file of a session.
func (s *Store) Path(sessionID string) string {
	return filepath.Join(s.Dir, FileName(sessionID))
}

// LockedState is a session's state file while its exclusive lock is held
// (Store.Lock): Load, Save and Remove it, then Close to release the lock.
type LockedState struct {
	store *Store
	id    string
	path  string
	lock  *fileLock
}

// Lock takes the session's exclusive lock, waiting until ctx ends.
func (s *Store) Lock(ctx context.Context, sessionID string) (*LockedState, error) {
	if sessionID == "" {
		return nil, errors.New("no session id to keep state for")
	}
	if s.Dir == "" {
		return nil, errors.New("no state directory")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	path := s.Path(sessionID)
	l, err := lockFile(ctx, strings.TrimSuffix(path, ".json")+".lock")
	if err != nil {
		return nil, fmt.Errorf("cannot lock the state of session %q: %w", sessionID, err)
	}
	return &LockedState{store: s, id: sessionID, path: path, lock: l}, nil
}

// Path is the session's state file.
func (ls *LockedState) Path() string { return ls.path }

// Load reads the session's state; found is false when there is none yet.
func (ls *LockedState) Load() (st eval.SessionState, found bool, err error) {
	f, err := os.Open(ls.path)
	if errors.Is(err, fs.ErrNotExist) {
		return eval.SessionState{ID: ls.id}, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("cannot read the session state: %w", err)
	}
	defer f.Close()
	max := ls.store.maxBytes()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return st, false, fmt.Errorf("cannot read the session state %s: %w", ls.path, err)
	}
	if int64(len(data)) > max {
		return st, false, fmt.Errorf("the session state %s is larger than %d bytes; delete it to start the session afresh", ls.path, max)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		return st, false, fmt.Errorf("the session state %s is not valid (%v); delete it to start the session afresh", ls.path, err)
	}
	if st.ID != ls.id {
		return st, false, fmt.Errorf("the session state %s belongs to session %q, not %q", ls.path, st.ID, ls.id)
	}
	return st, true, nil
}

// Save replaces the session's state atomically: readers see the old state or
// the new one, never a mix. A state that would encode larger than the cap is
// not written.
func (ls *LockedState) Save(st eval.SessionState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cannot encode the session state: %w", err)
	}
	if max := ls.store.maxBytes(); int64(len(data)) > max {
		return fmt.Errorf("the session state would be %d bytes, more than the cap of %d", len(data), max)
	}
	if err := atomicfile.Write(ls.path, data, 0o600); err != nil {
		return fmt.Errorf("cannot write the session state %s: %w", ls.path, err)
	}
	return nil
}

// Remove deletes the session's state (the session ended).
func (ls *LockedState) Remove() error {
	if err := os.Remove(ls.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the session state: %w", err)
	}
	return nil
}

// Close releases the lock. The lock file stays (removing it would race with
// a hook waiting on it); Cleanup removes it with the state once it is old.
func (ls *LockedState) Close() error {
	if ls.lock == nil {
		return nil
	}
	err := ls.lock.unlock()
	ls.lock = nil
	return err
}

// MaybeCleanup runs Cleanup when the last cleanup is older than a few hours
// (a marker file's time says when), so that most hooks pay one stat for it.
func (s *Store) MaybeCleanup() (int, error) {
	if s.MaxAge < 0 || s.Dir == "" {
		return 0, nil
	}
	marker := filepath.Join(s.Dir, ".last-cleanup")
	now := s.now()
	if fi, err := os.Stat(marker); err == nil && now.Sub(fi.ModTime()) < cleanupEvery {
		return 0, nil
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return 0, fmt.Errorf("cannot mark the state cleanup: %w", err)
	}
	_ = os.Chtimes(marker, now, now)
	return s.Cleanup()
}

// Cleanup removes the state of sessions untouched for longer than MaxAge,
// with their lock files, and temporary files left by interrupted writes. A
// session whose lock is held is skipped.
func (s *Store) Cleanup() (int, error) {
	maxAge := s.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return 0, fmt.Errorf("cannot list the state directory: %w", err)
	}
	cut := s.now().Add(-maxAge)
	removed := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cut) {
			continue
		}
		full := filepath.Join(s.Dir, name)
		switch {
		case strings.HasPrefix(name, atomicfile.TempPrefix):
			if os.Remove(full) == nil {
				removed++
			}
		case strings.HasPrefix(name, "s-") && strings.HasSuffix(name, ".json"):
			if s.removeSession(full) {
				removed++
			}
		case strings.HasPrefix(name, "s-") && strings.HasSuffix(name, ".lock"):
			// A lock file whose state is gone (the session ended).
			if _, err := os.Stat(strings.TrimSuffix(full, ".lock") + ".json"); errors.Is(err, fs.ErrNotExist) {
				s.removeLock(full)
			}
		}
	}
	return removed, nil
}

// removeSession removes an old state file and its lock file, under the lock.
func (s *Store) removeSession(path string) bool {
	lockPath := strings.TrimSuffix(path, ".json") + ".lock"
	l, err := tryLockFile(lockPath)
	if err != nil || l == nil {
		return false
	}
	defer l.unlock()
	// Still old? A hook may have written it since the directory was read.
	if fi, err := os.Stat(path); err != nil || !fi.ModTime().Before(s.now().Add(-s.maxAge())) {
		return false
	}
	ok := os.Remove(path) == nil
	l.removeLocked()
	return ok
}

// removeLock removes a lock file nobody holds.
func (s *Store) removeLock(path string) {
	l, err := tryLockFile(path)
	if err != nil || l == nil {
		return
	}
	l.removeLocked()
	l.unlock()
}

func (s *Store) maxAge() time.Duration {
	if s.MaxAge == 0 {
		return DefaultMaxAge
	}
	return s.MaxAge
}
