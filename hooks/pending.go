package hooks

import (
	"context"
	"crypto/rand"
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
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/atomicfile"
)

// An after-event whose session lock cannot be taken in time comes after the
// tool ran: dropping it would lose its counts. It is written instead as a
// pending file beside the session's state (signed like the state, under the
// state key), and the next event that takes the lock replays it (After on
// the restored session) before deciding, then removes it. The hook still
// answers the event as a failure: the after-phase rules did not run on that
// result.

// pendingFormat names the format of a pending after-event file.
const pendingFormat = "celguard-pending/1"

// pendingInfix separates a session's file name from a pending event's
// sortable suffix: s-<id>.pending-<time>-<random>.
const pendingInfix = ".pending-"

// pendingEvent is an after-event that waits for its session's lock.
type pendingEvent struct {
	Call   eval.Call   `json:"call"`
	Result eval.Result `json:"result"`
}

// pendingPrefix is the start of the names of a session's pending files.
func (s *Store) pendingPrefix(sessionID string) string {
	return strings.TrimSuffix(s.Path(sessionID), ".json") + pendingInfix
}

// RecordPending writes an after-event that could not take its session's
// lock, for the session's next event to replay (LockedState.Replay).
func (s *Store) RecordPending(sessionID string, call eval.Call, res eval.Result) error {
	key, err := s.Key()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(pendingEvent{Call: call, Result: res})
	if err != nil {
		return fmt.Errorf("cannot encode the pending after-event: %w", err)
	}
	data, err := seal(key, pendingFormat, domainPending, sessionID, raw)
	if err != nil {
		return fmt.Errorf("cannot encode the pending after-event: %w", err)
	}
	if int64(len(data)) > s.maxBytes() {
		return fmt.Errorf("the pending after-event would be %d bytes, more than the cap of %d", len(data), s.maxBytes())
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	name := fmt.Sprintf("%s%020d-%s", s.pendingPrefix(sessionID), time.Now().UnixNano(), hex.EncodeToString(nonce[:]))
	if err := atomicfile.Write(name, data, 0o600); err != nil {
		return fmt.Errorf("cannot record the pending after-event: %w", err)
	}
	return nil
}

// pendingFiles lists a session's pending files, oldest first.
func (ls *LockedState) pendingFiles() ([]string, error) {
	prefix := ls.store.pendingPrefix(ls.id)
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

// Replay applies the session's pending after-events to sess, oldest first,
// and returns the files to remove once the state is saved. A pending file
// that fails its check is not applied; its error says so, and it is
// removed too.
func (ls *LockedState) Replay(ctx context.Context, sess *eval.Session) (done []string, bad error, err error) {
	names, err := ls.pendingFiles()
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		p, perr := ls.readPending(name)
		if perr != nil {
			bad = errors.Join(bad, perr)
			done = append(done, name)
			continue
		}
		if _, err := sess.After(ctx, p.Call, p.Result); err != nil {
			return nil, bad, fmt.Errorf("the pending after-event of %s could not be applied: %w", p.Call.Tool, err)
		}
		done = append(done, name)
	}
	return done, bad, nil
}

// readPending reads and checks one pending file.
func (ls *LockedState) readPending(name string) (pendingEvent, error) {
	var p pendingEvent
	key, err := ls.store.Key()
	if err != nil {
		return p, err
	}
	f, err := os.Open(name)
	if err != nil {
		return p, fmt.Errorf("cannot read the pending after-event %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, ls.store.maxBytes()+1))
	if err != nil {
		return p, fmt.Errorf("cannot read the pending after-event %s: %w", name, err)
	}
	if int64(len(data)) > ls.store.maxBytes() {
		return p, fmt.Errorf("the pending after-event %s is not celguard's; it was not applied", name)
	}
	payload, why := unseal(key, data, pendingFormat, domainPending, ls.id)
	switch {
	case payload == nil && why == "its MAC does not check":
		return p, fmt.Errorf("the pending after-event %s was changed outside celguard (its MAC does not check); it was not applied", name)
	case payload == nil:
		return p, fmt.Errorf("the pending after-event %s is not celguard's; it was not applied", name)
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, fmt.Errorf("the pending after-event %s is signed but not valid: %w", name, err)
	}
	return p, nil
}

// removePending removes pending files already applied.
func removePending(names []string) error {
	var errs error
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = errors.Join(errs, fmt.Errorf("cannot remove the applied pending after-event: %w", err))
		}
	}
	return errs
}
