package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// This file holds what a session handle does with a store outside a
// decision: a new turn, and reading a session another replica started.

// NextTurn begins a new turn, as StartTurn does, and with a store commits
// it: its error says the store could not be reached (the turn did not
// change, and a halt of the turn stays in force) or kept changing.
func (s *Session) NextTurn(ctx context.Context) (uint64, error) {
	if s.eng.cfg.store == nil {
		s.StartTurn()
		return s.Turn(), nil
	}
	return s.changeStored(ctx, func() error {
		s.mu.Lock()
		s.turn++
		s.halt = nil
		s.mu.Unlock()
		return nil
	})
}

// Sync reads the session's state from the store (a handle opened on a
// session another replica started; a handle opened without metadata takes
// the session's); without a store it does nothing.
func (s *Session) Sync(ctx context.Context) error {
	if s.eng.cfg.store == nil {
		return nil
	}
	defer s.eng.sessionLocks.lock(s.id)()
	return s.syncLocked(ctx)
}

// syncLocked reads the session's entry; the caller holds the session's
// lock and no shared entry.
func (s *Session) syncLocked(ctx context.Context) error {
	ok, got, err := s.eng.commit(ctx, []state.Op{{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: s.st.version}})
	if err != nil || ok {
		return err
	}
	if c := got[0]; c.State != nil && len(s.meta) <= 1 && len(c.State.Meta) > 0 {
		s.mu.Lock()
		s.meta = maps.Clone(c.State.Meta)
		s.meta["id"] = s.id
		s.mu.Unlock()
		s.bindEntries()
	}
	s.adoptSession(got[0])
	return nil
}

// changeStored applies change to the session's own state and commits it,
// on the current state. A change that fails (and changes nothing) on a
// state that is current returns its error; on a state another replica
// changed since, it is applied again on the current one.
func (s *Session) changeStored(ctx context.Context, change func() error) (uint64, error) {
	st := &s.st
	defer s.eng.sessionLocks.lock(s.id)()
	st.counted = [len(sharedScopes)]bool{}
	for try := 0; try < s.eng.cfg.storeRetries; try++ {
		cerr := change()
		cur := s.State()
		op := state.Op{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: st.version}
		js, err := json.Marshal(cur)
		if err != nil {
			s.rollback()
			return s.Turn(), fmt.Errorf("cannot encode the session state: %w", err)
		}
		if cerr == nil && (st.version == "" || !st.committed.same(js)) {
			op.Write = js
		}
		ok, got, err := s.eng.commit(ctx, []state.Op{op})
		if err != nil {
			s.rollback()
			return s.Turn(), fmt.Errorf("%s: %w", CodeStoreUnavailable, err)
		}
		if ok {
			st.version = got[0].Version
			if op.Write != nil {
				st.committed.setJSON(cur, js)
			}
			return s.Turn(), cerr
		}
		s.adoptSession(got[0])
	}
	return s.Turn(), fmt.Errorf("%s: the session state kept changing on other replicas", CodeStoreConflict)
}

// Open starts the session in the store, or resumes it: a handle on a
// session another replica started takes its state (and, opened without
// metadata, its metadata), and a new session's state, its metadata with
// it, is written, so that every replica's handle on it counts its agent,
// repository and organisation alike from the first call. Without a store
// it does nothing.
func (s *Session) Open(ctx context.Context) error {
	if s.eng.cfg.store == nil {
		return nil
	}
	if err := s.Sync(ctx); err != nil {
		return fmt.Errorf("%s: %w", CodeStoreUnavailable, err)
	}
	_, err := s.changeStored(ctx, func() error { return nil })
	return err
}
