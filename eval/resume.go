package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// This file is what a host that decides each event with a new handle (the
// command hook, one process per event) needs of a session kept in a store:
// the handle resumed with the event's metadata, the fault of a state that
// failed the store's check, and what the host keeps in the session's state
// (its record of a streamed answer, its note on a pending request),
// committed with it.

// ResumeSession is a handle on session id as it is kept, for a host that
// decides each event of a session with a new handle (the command hook runs
// one process per event). With a store (WithStore) it reads the session's
// state there first, with one commit that writes nothing, and the
// session's metadata becomes the stored metadata with meta over it: an
// event carries what it knows (the permission mode, the model), the latest
// wins, the first commit writes it, and the agent, repository and
// organisation whose counters the session shares are read from the result
// (ScopeID). A stored state that failed the store's check (state.Entry.Fault,
// a file changed outside celguard) starts the session again fail-closed,
// with meta alone (decide.go, rule 19): every decision this handle makes
// is marked, Session.Tampered says why, and the first commit writes a
// signed state over it. Without a store it is NewSession: there is nothing
// to resume. The error wraps ErrStoreUnavailable when the store could not
// be read.
func (e *Engine) ResumeSession(ctx context.Context, id string, meta map[string]any) (*Session, error) {
	s := e.NewSession(id, meta)
	se := e.stored
	if se == nil {
		return s, nil
	}
	s.st.oneEvent = true
	// A read of one entry: no lock of the session id is needed, since
	// the handle is nobody else's yet and a later commit checks the
	// version read.
	cctx, cancel := context.WithTimeout(ctx, se.timeout)
	defer cancel()
	ok, got, err := se.store.Commit(cctx, []state.Op{{Key: state.Key{Scope: policy.ScopeSession, ID: id}}})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	case len(got) != 1:
		return nil, fmt.Errorf("%w: the store answered %d entries for 1", ErrStoreUnavailable, len(got))
	case ok || (got[0].State == nil && got[0].Fault == ""):
		return s, nil // a new session
	}
	c := got[0]
	var stored SessionState
	if c.Fault != "" {
		// Restored fail-closed, with meta alone; what could be read of
		// it (nothing, when it does not decode) is untrusted.
		s.adoptSession(storedEntry{Version: c.Version, Fault: c.Fault, State: untrustedState(c.State)})
		return s, nil
	}
	if err := json.Unmarshal(c.State, &stored); err != nil {
		return nil, fmt.Errorf("%w: the state of session %q does not decode: %w", ErrStoreUnavailable, id, err)
	}
	s.mu.Lock()
	if len(stored.Meta) > 0 {
		m := maps.Clone(stored.Meta)
		maps.Copy(m, meta)
		m["id"] = id
		s.meta, s.view, s.metaKept = m, nil, false
	}
	s.restore(stored)
	s.mu.Unlock()
	s.bindEntries()
	s.st.version = c.Version
	// As committed: the state as the store holds it, so that the first
	// commit writes the event's metadata when it changed it.
	s.st.committed.setJSON(stored, c.State)
	return s, nil
}

// Tampered says why the session's state was restored fail-closed (its
// stored state failed its check), with the consequence, while the handle's
// decisions are marked with it (decide.go, rule 19); "" otherwise.
func (s *Session) Tampered() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tampered
}

// Stream is the host's record of the model's answer being streamed
// (SessionState.Stream), nil when there is none. The engine neither reads
// nor changes it.
func (s *Session) Stream() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream
}

// SetStream replaces the host's record of the answer being streamed (nil
// forgets it). With a store it is committed there, on the session's
// current stored state, as Approve's change is; the error says the store
// could not be reached or kept changing, and the record is as it was.
func (s *Session) SetStream(ctx context.Context, rec json.RawMessage) error {
	return s.be.change(ctx, s, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stream = rec
		return nil
	})
}

// NoteRequest keeps what the host said about the pending request id; it
// reports whether there is one. With a store the note is committed to it,
// as Approve's change is; the error says the store failed and nothing was
// kept.
func (s *Session) NoteRequest(ctx context.Context, id string, host json.RawMessage) (bool, error) {
	err := s.changeBook(ctx, func(b *approvalBook, _ time.Time) error {
		i := b.find(id)
		if i < 0 {
			return errNothingRevoked
		}
		b.requests[i].Host = host
		return nil
	})
	if errors.Is(err, errNothingRevoked) {
		return false, nil
	}
	return err == nil, err
}
