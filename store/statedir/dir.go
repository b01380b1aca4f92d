// Package statedir is celguard's signed state directory: one file per
// session (its state as JSON, opaque here), replaced atomically under an
// exclusive lock file, every file carrying an HMAC-SHA256 under the
// directory's state key (Key), so a file changed outside celguard is found
// out (TamperedError); after-events that could not take their session's
// lock wait in pending files, signed alike; old sessions are cleaned up.
//
// It is the store side of the command hook's persistence (each hook is a
// process of its own, so the state lives on disk between events), and
// package store's file store (store.NewFile) commits on it too. It knows
// neither the evaluator nor the hooks: states are bytes, and the one
// thing it reads in them is the counters' keys, to bound a file
// (MaxStateCounterKeys).
package statedir

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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/celguard/celguard/internal/atomicfile"
	"github.com/celguard/celguard/internal/jsonkind"
)

// Defaults of a Dir.
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

// Dir keeps session state across hook processes: one JSON file (a
// session's state, eval.SessionState, as bytes) per session in Dir, named
// after the sanitised session id, replaced atomically (a temporary file renamed over it) while an
// exclusive lock on the session's lock file is held, so that concurrent hooks
// of one session (Codex runs them concurrently) each see the others' counts.
// Every file carries an HMAC-SHA256 under the directory's state key (Key),
// so a file changed outside celguard is found out (TamperedError).
type Dir struct {
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

	keyMu sync.Mutex
	key   *Key

	// known remembers, by state file, the bytes this process last wrote
	// there or found valid there for a session, with the state they hold
	// (knownFile): a Load of that session that reads the same bytes again
	// returns that state without checking them again. The key never changes
	// once read (Key), so the same bytes have the same outcome; any other
	// bytes (another writer, an edit, a rollback to an older file, a file of
	// another key), or the same bytes read for another session whose id
	// shares the file name (FileName's hash), are checked in full. A process that answers many events (the decision daemon)
	// reads back mostly its own writes.
	knownMu    sync.Mutex
	known      map[string]knownFile
	knownBytes int

	// listed are the sessions whose pending after-events this Dir has
	// listed once (Locked.pendingFiles); after that, a session's pending
	// files are listed only when its marker says there are some.
	listedMu sync.Mutex
	listed   map[string]struct{}
}

// knownFile is a state file's bytes as last written or checked for the
// session id, and the state they hold.
type knownFile struct {
	id          string
	data, state []byte
}

// maxKnown and maxKnownBytes bound the state files a Dir remembers
// (Dir.known) and their bytes; past either the memory is dropped and
// refilled.
const (
	maxKnown      = 1024
	maxKnownBytes = 16 << 20
)

// knownState is the state that data, the bytes of the state file path,
// holds for session id, if this process wrote or checked these very bytes
// there for that session.
func (s *Dir) knownState(path, id string, data []byte) ([]byte, bool) {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	k, ok := s.known[path]
	if !ok || k.id != id || !bytes.Equal(k.data, data) {
		return nil, false
	}
	return k.state, true
}

// remember records that the state file path holds data, whose state is
// state for session id (both kept as they are: the caller no longer
// changes them).
func (s *Dir) remember(path, id string, data, state []byte) {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	if old, ok := s.known[path]; ok {
		s.knownBytes -= len(old.data) + len(old.state)
	}
	n := len(data) + len(state)
	if s.known == nil || len(s.known) >= maxKnown || s.knownBytes+n > maxKnownBytes {
		s.known, s.knownBytes = map[string]knownFile{}, 0
	}
	if n > maxKnownBytes {
		return
	}
	s.known[path] = knownFile{id: id, data: data, state: state}
	s.knownBytes += n
}

// forget drops what Dir.known says of the state file path.
func (s *Dir) forget(path string) {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	if old, ok := s.known[path]; ok {
		s.knownBytes -= len(old.data) + len(old.state)
		delete(s.known, path)
	}
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

func (s *Dir) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxStateBytes
}

func (s *Dir) now() time.Time {
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
func (s *Dir) Path(sessionID string) string {
	return filepath.Join(s.Dir, FileName(sessionID))
}

// Locked is a session's state file while its exclusive lock is held
// (Dir.Lock): Load, Save and Remove it, then Close to release the lock.
type Locked struct {
	store *Dir
	id    string
	path  string
	lock  *fileLock
}

// Lock takes the session's exclusive lock, waiting until ctx ends.
func (s *Dir) Lock(ctx context.Context, sessionID string) (*Locked, error) {
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
	return &Locked{store: s, id: sessionID, path: path, lock: l}, nil
}

// Path is the session's state file.
func (ls *Locked) Path() string { return ls.path }

// stateFormat names the format of a state file; a file that does not say
// it is not trusted.
const stateFormat = "celguard-state/1"

// stateFile is a session's state file: the state as JSON, and the
// HMAC-SHA256, under the state key, of the session id and of the exact
// bytes of the state as written (docs/hooks.md).
type stateFile struct {
	Format string          `json:"format"`
	MAC    string          `json:"mac"`
	State  json.RawMessage `json:"state"`
}

// seal wraps payload, the JSON of a session's state or pending event, in a
// stateFile of the format, signed with the key for the domain and session.
func seal(key *Key, format, domain, session string, payload []byte) ([]byte, error) {
	payload, err := marshalForm(payload)
	if err != nil {
		return nil, err
	}
	mac := key.Sum(domain, []byte(session), payload)
	return json.Marshal(stateFile{Format: format, MAC: hex.EncodeToString(mac), State: payload})
}

// sealValid is seal of a payload known to be valid JSON (Save's, which
// normalize decoded): the same bytes, made without json.Marshal's second
// pass over the payload when the payload already is as Marshal writes it
// (compacted); asis says so, and then the file's "state" is payload itself,
// byte for byte, which Load returns.
func sealValid(key *Key, format, domain, session string, payload []byte) (data []byte, asis bool, err error) {
	if !compacted(payload) || !jsonkind.Plain(format) {
		data, err = seal(key, format, domain, session, payload)
		return data, false, err
	}
	mac := key.Sum(domain, []byte(session), payload)
	b := make([]byte, 0, len(`{"format":"","mac":"","state":}`)+len(format)+hex.EncodedLen(len(mac))+len(payload))
	b = append(b, `{"format":"`...)
	b = append(b, format...)
	b = append(b, `","mac":"`...)
	b = hex.AppendEncode(b, mac)
	b = append(b, `","state":`...)
	b = append(b, payload...)
	return append(b, '}'), true, nil
}

// marshalForm is js as json.Marshal writes it inside a document (a
// json.RawMessage: compacted, HTML escaped), the bytes the file holds and
// so the bytes the MAC must be over: a MAC over js itself, with a space
// or a raw '&' in it, would not check over the file's bytes, and the file
// would read as tampered.
func marshalForm(js []byte) ([]byte, error) {
	if compacted(js) {
		return js, nil
	}
	var c, e bytes.Buffer
	if err := json.Compact(&c, js); err != nil {
		return nil, err
	}
	json.HTMLEscape(&e, c.Bytes())
	return e.Bytes(), nil
}

// compacted reports whether js, valid JSON, is what json.Marshal writes
// for it as a json.RawMessage (encoding/json's compact, HTML escaping on):
// no whitespace outside strings, no '<', '>' or '&', no U+2028 or U+2029.
// Valid JSON has no raw tab, newline or carriage return inside a string,
// so only a space needs to know where the strings are.
func compacted(js []byte) bool {
	in := false
	for i := 0; i < len(js); i++ {
		switch c := js[i]; c {
		case '\\':
			if in {
				i++ // the escaped byte
			}
		case '"':
			in = !in
		case ' ':
			if !in {
				return false
			}
		case '\t', '\n', '\r', '<', '>', '&':
			return false
		case 0xE2:
			if i+2 < len(js) && js[i+1] == 0x80 && js[i+2]&^1 == 0xA8 {
				return false
			}
		}
	}
	return true
}

// unseal returns the payload of a stateFile of the format whose MAC checks
// for the domain and session, or why it is not one: not celguard's (no
// header of that format) or changed outside celguard (the MAC).
func unseal(key *Key, data []byte, format, domain, session string) (json.RawMessage, string) {
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil || sf.Format != format {
		return nil, "no " + format + " header"
	}
	mac, err := hex.DecodeString(sf.MAC)
	if err != nil || !key.Verify(mac, domain, []byte(session), sf.State) {
		return nil, "its MAC does not check"
	}
	return sf.State, ""
}

// TamperedError says a session's state file failed its check: it was
// changed, replaced or written outside celguard (or by a celguard from
// before state files carried a MAC, or with another key). Its content is
// not trusted: the file store answers it as an entry with a fault
// (state.Entry.Fault), and the engine restores the session fail-closed
// from it (eval's decide.go, rule 19).
type TamperedError struct {
	// Path is the state file.
	Path string
	// Why says what failed.
	Why string
	// Untrusted is what could be read of the state (its JSON, nil when
	// none), for the one thing a tampered state may still do: keep a halt.
	Untrusted []byte
}

// Error implements error.
func (e *TamperedError) Error() string {
	return fmt.Sprintf("the session state %s was changed outside celguard (%s)", e.Path, e.Why)
}

// Key returns the state key of the store's directory, made on first use
// (LoadKey).
func (s *Dir) Key() (*Key, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key == nil {
		k, err := LoadKey(s.Dir)
		if err != nil {
			return nil, err
		}
		s.key = k
	}
	return s.key, nil
}

// Load reads the session's state (its JSON); found is false when there is
// none yet. A state file that fails its check is a *TamperedError; any
// other error means the state could not be read at all. A signed state is
// checked to be a JSON object whose "id" is the session's.
func (ls *Locked) Load() (state []byte, found bool, err error) {
	key, err := ls.store.Key()
	if err != nil {
		return nil, false, err
	}
	f, err := openRegular(ls.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if errors.Is(err, errNotRegular) {
		// Not celguard's: it writes only regular files there.
		return nil, true, &TamperedError{Path: ls.path, Why: "not a regular file"}
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the session state: %w", err)
	}
	defer f.Close()
	max := ls.store.maxBytes()
	data, err := readUpTo(f, max+1)
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the session state %s: %w", ls.path, err)
	}
	tampered := func(why string) ([]byte, bool, error) {
		return nil, true, &TamperedError{Path: ls.path, Why: why, Untrusted: salvage(data)}
	}
	if int64(len(data)) > max {
		// celguard never writes a state past the cap.
		return tampered(fmt.Sprintf("larger than %d bytes", max))
	}
	if st, ok := ls.store.knownState(ls.path, ls.id, data); ok {
		return st, true, nil
	}
	payload, why := unseal(key, data, stateFormat, domainState, ls.id)
	if why == "no "+stateFormat+" header" {
		why += "; a state written before celguard signed its state files is not trusted either"
	}
	if payload == nil {
		return tampered(why)
	}
	// The bytes are celguard's own: they decode, and they are this session's.
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return nil, false, fmt.Errorf("the session state %s is signed but not valid (%v); delete it to start the session afresh", ls.path, err)
	}
	if head.ID != ls.id {
		return nil, false, fmt.Errorf("the session state %s belongs to session %q, not %q", ls.path, head.ID, ls.id)
	}
	ls.store.remember(ls.path, ls.id, data, payload)
	return payload, true, nil
}

// errNotRegular says a state file's path names something other than a
// regular file (a FIFO, a device, a directory).
var errNotRegular = errors.New("not a regular file")

// readUpTo is io.ReadAll(io.LimitReader(f, n)) from a buffer of f's size
// (io.ReadAll starts from 512 bytes and grows: seven reads for a 3 KB
// state, two here).
func readUpTo(f *os.File, n int64) ([]byte, error) {
	c := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		c = fi.Size() + 1 // the end of the file in the same buffer
	}
	buf := make([]byte, 0, max(min(c, n), 1))
	r := io.LimitReader(f, n)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// salvage reads what it can of an untrusted state file: the state of a
// signed file, or a bare state (the format before MACs); nil when it is
// not JSON.
func salvage(data []byte) []byte {
	var sf stateFile
	if json.Unmarshal(data, &sf) == nil && len(sf.State) > 0 {
		data = sf.State
	}
	if !json.Valid(data) {
		return nil
	}
	return data
}

// Save replaces the session's state, its JSON, atomically: readers see the
// old state or the new one, never a mix. The state written is the
// session's (its "id" set to the session id) and keeps MaxStateCounterKeys
// keys of each counter (bounds.go); a state that would encode larger than
// the cap is not written. It returns the state as written, which Load
// returns until the next Save. The file is replaced through the session's
// spare file (spareOf, atomicfile.WriteSpare): a killed writer leaves the
// old state or the new, as a temporary file and a rename did, for a tenth
// of their cost.
func (ls *Locked) Save(state []byte) (written []byte, err error) {
	key, err := ls.store.Key()
	if err != nil {
		return nil, err
	}
	raw, err := normalize(state, ls.id, MaxStateCounterKeys)
	if err == nil {
		raw, err = marshalForm(raw) // as the file holds it, which Load returns
	}
	if err != nil {
		return nil, fmt.Errorf("cannot encode the session state: %w", err)
	}
	data, asis, err := sealValid(key, stateFormat, domainState, ls.id, raw)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the session state: %w", err)
	}
	if max := ls.store.maxBytes(); int64(len(data)) > max {
		return nil, fmt.Errorf("the session state would be %d bytes, more than the cap of %d", len(data), max)
	}
	if err := atomicfile.WriteSpare(ls.path, spareOf(ls.path), data, 0o600); err != nil {
		ls.store.forget(ls.path)
		return nil, fmt.Errorf("cannot write the session state %s: %w", ls.path, err)
	}
	if asis {
		// Load would find raw in data, its MAC checking and its id the
		// session's (normalize). raw is the caller's bytes or normalize's,
		// which the caller no longer changes (state.Store keeps a commit's
		// Write bytes too).
		ls.store.remember(ls.path, ls.id, data, raw)
	} else {
		ls.store.forget(ls.path)
	}
	return raw, nil
}

// Remove deletes the session's state. A host's SessionEnd does not call
// it (what limits the agent must not be the agent's to reset); store.File's
// Delete, the operator's route, does.
func (ls *Locked) Remove() error {
	ls.store.forget(ls.path)
	if err := os.Remove(ls.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the session state: %w", err)
	}
	// The spare holds an earlier state of the session.
	if err := os.Remove(spareOf(ls.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the session state: %w", err)
	}
	return nil
}

// spareOf is the spare file of the state file at path
// (atomicfile.WriteSpare): after a Save it holds the session's state as it
// was before, and the next Save writes over it. Its name starts with
// atomicfile.TempPrefix, so that it is never taken for a session's state
// (Sessions) and Cleanup removes it once it is old.
func spareOf(path string) string {
	return filepath.Join(filepath.Dir(path), atomicfile.TempPrefix+filepath.Base(path))
}

// Close releases the lock. The lock file stays (removing it would race with
// a hook waiting on it); Cleanup removes it with the state once it is old.
func (ls *Locked) Close() error {
	if ls.lock == nil {
		return nil
	}
	err := ls.lock.unlock()
	ls.lock = nil
	return err
}

// MaybeCleanup runs Cleanup when the last cleanup is older than a few hours
// (a marker file's time says when), so that most hooks pay one stat for it.
func (s *Dir) MaybeCleanup() (int, error) {
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
func (s *Dir) Cleanup() (int, error) {
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
	// The sessions with a pending file kept: marked after the loop (which
	// may remove an old marker of theirs), so that the next event of each
	// applies it, whoever wrote it (pending.go).
	marks := map[string]bool{}
	defer func() {
		for m := range marks {
			_ = markPending(m)
		}
	}()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if i := strings.Index(name, pendingInfix); strings.HasPrefix(name, "s-") && i > 0 {
			marks[filepath.Join(s.Dir, name[:i]+pendingMarkSuffix)] = true
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
		case strings.HasPrefix(name, "s-") && strings.Contains(name, pendingInfix):
			// An after-event no later event of its session applied.
			if os.Remove(full) == nil {
				removed++
			}
		case strings.HasPrefix(name, "s-") && strings.HasSuffix(name, pendingMarkSuffix):
			_ = os.Remove(full) // an old marker; marked again below if a file needs it
		case strings.HasPrefix(name, "s-") && strings.HasSuffix(name, ".json"):
			if s.removeSession(full) {
				removed++
			}
		case strings.HasPrefix(name, "s-") && strings.HasSuffix(name, ".lock"):
			// A lock file whose state is gone (deleted).
			if _, err := os.Stat(strings.TrimSuffix(full, ".lock") + ".json"); errors.Is(err, fs.ErrNotExist) {
				s.removeLock(full)
			}
		}
	}
	return removed, nil
}

// removeSession removes an old state file and its lock file, under the lock.
func (s *Dir) removeSession(path string) bool {
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
	_ = os.Remove(spareOf(path))
	l.removeLocked()
	return ok
}

// removeLock removes a lock file nobody holds.
func (s *Dir) removeLock(path string) {
	l, err := tryLockFile(path)
	if err != nil || l == nil {
		return
	}
	l.removeLocked()
	l.unlock()
}

func (s *Dir) maxAge() time.Duration {
	if s.MaxAge == 0 {
		return DefaultMaxAge
	}
	return s.MaxAge
}

// Sessions lists the session ids of the directory's state files, by what
// each file says its session is: only a file whose name is that session's
// FileName counts (Load checks the rest), and a file that is not JSON
// names none.
func (s *Dir) Sessions() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the state directory: %w", err)
	}
	var ids []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, "s-") || !strings.HasSuffix(name, ".json") || strings.Contains(name, pendingInfix) {
			continue
		}
		f, err := os.Open(filepath.Join(s.Dir, name))
		if err != nil {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, s.maxBytes()+1))
		f.Close()
		if err != nil {
			continue
		}
		var head struct {
			ID string `json:"id"`
		}
		if st := salvage(data); st != nil && json.Unmarshal(st, &head) == nil && head.ID != "" && FileName(head.ID) == name {
			ids = append(ids, head.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Clock is the directory's clock: Now, or time.Now without one.
func (s *Dir) Clock() time.Time { return s.now() }
