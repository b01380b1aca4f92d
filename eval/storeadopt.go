package eval

import (
	"bytes"

	"github.com/celguard/celguard/state"
)

// This file is how a session's handle takes the store's answer to a commit
// (adopt): new versions, or the current state to decide on again, a
// session entry that failed the store's check restored fail-closed; and
// how it undoes a decision the store did not settle (rollback, keepLocal).
// storesession.go runs and commits the decisions.

// snapshot is a state as committed, with its JSON, which a decision's
// state is compared with to know whether it changed.
type snapshot struct {
	st SessionState
	js []byte
}

func (sn *snapshot) set(st SessionState) {
	sn.st = st
	sn.js, _ = encodeState(&st, nil)
}

// setJSON is set with the state's JSON already made.
func (sn *snapshot) setJSON(st SessionState, js []byte) { sn.st, sn.js = st, js }

// same reports whether js, a state's JSON, is the snapshot's state, as a
// store keeps it.
func (sn *snapshot) same(js []byte) bool {
	return sn.js != nil && bytes.Equal(js, sn.js)
}

// adopt takes the store's answer to a commit: new versions, or the current
// state of every entry to decide on again.
func (s *Session) adopt(ops []state.Op, writes *opStates, cur []storedEntry, ok bool) {
	st := s.st
	for i, op := range ops {
		c := cur[i]
		if i == 0 {
			st.local = nil
			if ok {
				st.version = c.Version
				if op.Write != nil {
					st.committed.setJSON(writes[i], op.Write)
					s.mu.Lock()
					st.overwrite = false
					s.mu.Unlock()
				}
				continue
			}
			s.adoptSession(c)
			continue
		}
		ent := st.entries[i-1]
		if !st.counted[i-1] {
			seen := &st.seen[i-1]
			if !ok && c.Version != seen.version {
				seen.version, seen.halt = c.Version, nil
				if c.State != nil && c.State.Halted != nil {
					h := *c.State.Halted
					seen.halt = &h
				}
			}
			continue
		}
		switch {
		case ok && op.Write != nil:
			ent.version, ent.local = c.Version, nil
			ent.committed.setJSON(writes[i], op.Write)
		case ok:
			ent.version = c.Version
		case c.Version != ent.version:
			ent.adopt(s.eng, c.Version, c.State)
		default:
			ent.adopt(s.eng, ent.version, &ent.committed.st) // undo this try's counts
		}
	}
}

// adoptSession replaces the session's state with the store's.
func (s *Session) adoptSession(c storedEntry) {
	st := s.st
	state := SessionState{ID: s.id}
	if c.State != nil && c.Fault == "" {
		state = *c.State
	}
	s.mu.Lock()
	s.restore(state)
	st.overwrite = c.Fault != ""
	if st.overwrite {
		// The entry failed the store's check: the session starts again
		// fail-closed from it, as Engine.RestoreTampered does.
		s.failClosed(c.State, c.Fault)
	}
	s.mu.Unlock()
	st.version = c.Version
	st.committed.set(s.State())
}

// rollback undoes what a decision changed in the handle's state, back to
// the states last committed (or kept locally).
func (s *Session) rollback() {
	st := s.st
	base := &st.committed.st
	if st.local != nil {
		base = st.local
	}
	s.mu.Lock()
	s.restore(*base)
	s.mu.Unlock()
	for i, ent := range st.entries {
		if st.counted[i] {
			local := ent.local
			ent.adopt(s.eng, ent.version, &ent.committed.st)
			if local != nil {
				ent.counters, ent.local = s.eng.restoreCounters(local.Counters), local
			}
		}
	}
}

// keepLocal keeps the handle's state, and its shared entries', as they
// are, while the store is unreachable: a later failed decision rolls back
// to it, a commit replaces it.
func (s *Session) keepLocal() {
	st := s.st
	cur := s.State()
	st.local = &cur
	for i, ent := range st.entries {
		if st.counted[i] {
			est := ent.state()
			ent.local = &est
		}
	}
}
