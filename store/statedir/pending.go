package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/celguard/celguard/internal/atomicfile"
)

// An after-event whose session lock cannot be taken in time comes after the
// tool ran: dropping it would lose its counts. It is written instead as a
// pending file beside the session's state (signed like the state, under the
// state key), and the next event that takes the lock replays it before
// deciding, then removes it (Locked.Pending, RemovePending). The hook still
// answers the event as a failure: the after-phase rules did not run on that
// result.

// Finding the pending files takes a listing of the state directory, which
// holds every session kept (DefaultMaxAge): a cost that grows with them,
// paid at every event. So a pending file has a marker, a file of a fixed
// name per session (pendingMark), which RecordPending makes after the
// pending file, and the event that takes the lock lists the directory only
// when the marker is there, removing it before it lists (and making it
// again when it found files, so that files it does not remove are found
// again). Every order of the two holds: a pending file written before the
// marker was removed is listed now, one written after is followed by a
// marker of its own. A Dir also lists each session once regardless, at its
// first event (for a file an older celguard wrote without a marker, or
// whose writer died between the two), and Cleanup marks every session that
// has a pending file.

// pendingFormat names the format of a pending after-event file.
const pendingFormat = "celguard-pending/1"

// pendingInfix separates a session's file name from a pending event's
// sortable suffix: s-<id>.pending-<time>-<random>.
const pendingInfix = ".pending-"

// PendingPrefix is the start of the paths of a session's pending files.
func (s *Dir) PendingPrefix(sessionID string) string {
	return strings.TrimSuffix(s.Path(sessionID), ".json") + pendingInfix
}

// pendingMark is the marker of a session's pending files: s-<id>.pending.
func (s *Dir) pendingMark(sessionID string) string {
	return strings.TrimSuffix(s.Path(sessionID), ".json") + pendingMarkSuffix
}

// pendingWritten, when set, runs between a pending file's write and its
// marker's (tests: another event in between).
var pendingWritten func()

// pendingMarkSuffix ends the name of a pending marker.
const pendingMarkSuffix = ".pending"

// markPending makes the marker at path (an empty file), if it is not there.
func markPending(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|oMarker, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// RecordPending writes an after-event (its JSON, opaque here) that could
// not take its session's lock, for the session's next event to replay
// (Locked.Pending).
func (s *Dir) RecordPending(sessionID string, event []byte) error {
	key, err := s.Key()
	if err != nil {
		return err
	}
	data, err := seal(key, pendingFormat, domainPending, sessionID, event)
	if err != nil {
		return fmt.Errorf("cannot encode the pending after-event: %w", err)
	}
	if int64(len(data)) > s.maxBytes() {
		return fmt.Errorf("the pending after-event would be %d bytes, more than the cap of %d", len(data), s.maxBytes())
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	name := fmt.Sprintf("%s%020d-%s", s.PendingPrefix(sessionID), time.Now().UnixNano(), hex.EncodeToString(nonce[:]))
	if err := atomicfile.Write(name, data, 0o600); err != nil {
		return fmt.Errorf("cannot record the pending after-event: %w", err)
	}
	if pendingWritten != nil {
		pendingWritten()
	}
	// After the file (see above). Without it the file is still found at a
	// Dir's first event of the session, or once Cleanup marks it.
	_ = markPending(s.pendingMark(sessionID))
	return nil
}

// Pending is a pending after-event of the session, as RecordPending
// wrote it.
type Pending struct {
	// File is its path, to remove once it is applied (RemovePending).
	File string
	// Event is the event's JSON.
	Event []byte
}

// pendingFiles lists a session's pending files, oldest first: when its
// marker is there, or at the Dir's first event of the session.
func (ls *Locked) pendingFiles() ([]string, error) {
	mark := ls.store.pendingMark(ls.id)
	if ls.store.listedBefore(ls.path) {
		if _, err := os.Lstat(mark); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cannot list the pending after-events: %w", err)
	}
	names, err := ls.listPending()
	if err == nil && len(names) > 0 {
		// Found again by the next event unless they are removed by then.
		err = markPending(mark)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the pending after-events: %w", err)
	}
	return names, nil
}

// maxListed bounds the sessions a Dir remembers having listed: past it,
// it forgets them all (each is listed once more).
const maxListed = 4096

// listedBefore reports whether this Dir listed the pending files of the
// state file at path before, and remembers that it has now.
func (s *Dir) listedBefore(path string) bool {
	s.listedMu.Lock()
	defer s.listedMu.Unlock()
	if _, ok := s.listed[path]; ok {
		return true
	}
	if s.listed == nil || len(s.listed) >= maxListed {
		s.listed = map[string]struct{}{}
	}
	s.listed[path] = struct{}{}
	return false
}

// listPending lists the directory for the session's pending files.
func (ls *Locked) listPending() ([]string, error) {
	prefix := ls.store.PendingPrefix(ls.id)
	entries, err := os.ReadDir(filepath.Dir(prefix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	base := filepath.Base(prefix)
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), base) {
			names = append(names, filepath.Join(filepath.Dir(prefix), e.Name()))
		}
	}
	slices.Sort(names)
	return names, nil
}

// Pending reads the session's pending after-events, oldest first. A
// pending file that fails its check is not returned: bad says why, and it
// is listed in failed, to remove with the others once the state is saved.
func (ls *Locked) Pending() (events []Pending, failed []string, bad error, err error) {
	names, err := ls.pendingFiles()
	if err != nil {
		return nil, nil, nil, err
	}
	for _, name := range names {
		ev, perr := ls.readPending(name)
		if perr != nil {
			bad = errors.Join(bad, perr)
			failed = append(failed, name)
			continue
		}
		events = append(events, Pending{File: name, Event: ev})
	}
	return events, failed, bad, nil
}

// readPending reads and checks one pending file.
func (ls *Locked) readPending(name string) ([]byte, error) {
	key, err := ls.store.Key()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cannot read the pending after-event %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ls.store.maxBytes()+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the pending after-event %s: %w", name, err)
	}
	if int64(len(data)) > ls.store.maxBytes() {
		return nil, fmt.Errorf("the pending after-event %s is not celguard's; it was not applied", name)
	}
	payload, why := unseal(key, data, pendingFormat, domainPending, ls.id)
	switch {
	case payload == nil && why == "its MAC does not check":
		return nil, fmt.Errorf("the pending after-event %s was changed outside celguard (its MAC does not check); it was not applied", name)
	case payload == nil:
		return nil, fmt.Errorf("the pending after-event %s is not celguard's; it was not applied", name)
	}
	return payload, nil
}

// RemovePending removes pending files already applied (or failed).
func RemovePending(files []string) error {
	var errs error
	for _, n := range files {
		if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = errors.Join(errs, fmt.Errorf("cannot remove the applied pending after-event: %w", err))
		}
	}
	return errs
}
