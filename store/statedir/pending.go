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

// pendingFormat names the format of a pending after-event file.
const pendingFormat = "celguard-pending/1"

// pendingInfix separates a session's file name from a pending event's
// sortable suffix: s-<id>.pending-<time>-<random>.
const pendingInfix = ".pending-"

// PendingPrefix is the start of the paths of a session's pending files.
func (s *Dir) PendingPrefix(sessionID string) string {
	return strings.TrimSuffix(s.Path(sessionID), ".json") + pendingInfix
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

// pendingFiles lists a session's pending files, oldest first.
func (ls *Locked) pendingFiles() ([]string, error) {
	prefix := ls.store.PendingPrefix(ls.id)
	entries, err := os.ReadDir(filepath.Dir(prefix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list the pending after-events: %w", err)
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
