package eval

import (
	"bytes"
	"encoding/json"

	"github.com/celguard/celguard/state"
)

// This file is how a session's handle takes the store's answer to a commit
// (adopt): new versions, or the current state to decide on again, a
// session entry that failed the store's check restored fail-closed; and
// how it undoes a decision the store did not settle (rollback, keepLocal).
// storesession.go runs and commits the decisions.

// snapshot is a state as committed, with its JSON, which a decision's
// state is compared with to know whether it changed. A decision's commit
// keeps only the JSON (setEncoded), the bytes the store was given: the
// state is decoded from them when a decision rolls back to it (state),
// as another replica reading the entry would decode it, so that no
// decision copies the session's state to commit it.
type snapshot struct {
	st SessionState
	// encoded says st is not decoded yet from js.
	encoded bool
	js      []byte
}

func (sn *snapshot) set(st SessionState) {
	sn.st, sn.encoded = st, false
	sn.js, _ = encodeState(&st)
}

// setJSON is set with the state's JSON already made.
func (sn *snapshot) setJSON(st SessionState, js []byte) { sn.st, sn.encoded, sn.js = st, false, js }

// setEncoded is the state js encodes, decoded only when state asks.
func (sn *snapshot) setEncoded(js []byte) { sn.st, sn.encoded, sn.js = SessionState{}, true, js }

// state is the snapshot's state, decoded from its JSON if need be; ok is
// false when it does not decode (it always does: it was encoded from a
// state), and the state is then empty.
func (sn *snapshot) state() (st *SessionState, ok bool) {
	if sn.encoded {
		var dec SessionState
		if err := json.Unmarshal(sn.js, &dec); err != nil {
			return &SessionState{}, false
		}
		sn.st, sn.encoded = dec, false
	}
	return &sn.st, true
}

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
					st.committed.setEncoded(op.Write)
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
	base, ok := st.local, true
	if base == nil {
		base, ok = st.committed.state()
	}
	s.mu.Lock()
	s.restore(*base)
	if !ok {
		// Not reached: the snapshot was encoded from a state. Were it
		// not to decode, the session would go on fail-closed.
		s.failClosed(nil, "the committed session state does not decode")
	}
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
