package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// This file is the engine's side of a Store (store.go): the shared
// entries an engine holds, and a decision's run, commit and rerun.

// sharedEntry is an engine's copy of a shared entry of its store: the
// counts of the counters scoped to one agent, repository or organisation,
// and its fleet halt.
type sharedEntry struct {
	// mu is held while a decision may read or count the entry's counters
	// (from its first read to its commit), so that an engine commits one
	// decision of the entry at a time; it is taken after the session's
	// lock (sessionLocks) and before its counting lock and mu.
	mu       sync.Mutex
	key      state.Key
	version  string
	counters map[string]*counterState
	halt     *Decision
	// committed is the entry's state at version, to roll back to.
	committed snapshot
	// local, when set, is the state to roll back to instead (see
	// storeSession.local).
	local *SessionState
}

func (ent *sharedEntry) state() SessionState {
	st := SessionState{ID: ent.key.ID, Counters: exportCounters(ent.counters)}
	if ent.halt != nil {
		h := *ent.halt
		st.Halted = &h
	}
	return st
}

func (ent *sharedEntry) adopt(e *Engine, version string, st *SessionState) {
	if st != nil {
		cp := *st // st may be &ent.committed.st
		st = &cp
	}
	ent.local = nil
	ent.version = version
	ent.halt = nil
	ent.counters = map[string]*counterState{}
	ent.committed.set(SessionState{ID: ent.key.ID})
	if st == nil {
		return
	}
	ent.committed.set(*st)
	ent.counters = e.restoreCounters(st.Counters)
	if st.Halted != nil {
		h := *st.Halted
		ent.halt = &h
	}
}

// maxSharedEntries bounds the shared entries an engine keeps; past it, the
// map is cleared (the entries are read again from the store).
const maxSharedEntries = 1 << 16

// shared returns the engine's copy of a shared entry.
func (e *Engine) shared(key state.Key) *sharedEntry {
	e.sharedMu.Lock()
	defer e.sharedMu.Unlock()
	ent, ok := e.sharedEntries[key]
	if !ok {
		if e.sharedEntries == nil || len(e.sharedEntries) >= maxSharedEntries {
			e.sharedEntries = map[state.Key]*sharedEntry{}
		}
		ent = &sharedEntry{key: key, counters: map[string]*counterState{}}
		ent.committed.set(SessionState{ID: key.ID})
		e.sharedEntries[key] = ent
	}
	return ent
}

// sessionLocks serializes an engine's decisions on one session id, over
// all its handles: each decision runs, commits and perhaps runs again
// alone, so that replicas, not handles, are what contend in the store. A
// lock is kept while someone holds or waits for it.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

type sessionLock struct {
	mu    sync.Mutex
	users int
}

// lock takes the lock of session id and returns its unlock.
func (l *sessionLocks) lock(id string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sessionLock{}
	}
	sl := l.m[id]
	if sl == nil {
		sl = &sessionLock{}
		l.m[id] = sl
	}
	sl.users++
	l.mu.Unlock()
	sl.mu.Lock()
	return func() {
		sl.mu.Unlock()
		l.mu.Lock()
		if sl.users--; sl.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// storeSession is a session's part of the store protocol. Its fields are
// used by the handle's decisions, which hold the engine's lock of the
// session id (sessionLocks), taken first.
type storeSession struct {
	// version is the session entry's version the handle holds ("" before
	// it read one: the entry is taken to be absent until a commit says).
	version string
	// committed is the session's state at version, to roll back to.
	committed snapshot
	// local, when set, is the state to roll back to instead: counts a
	// decision kept while the store was unreachable (on_store_error:
	// local).
	local *SessionState
	// entries are the shared entries of the session, by sharedScopes index.
	entries [len(sharedScopes)]*sharedEntry
	// counted says, during a decision, which shared scopes the set counts
	// in (their entries are locked), by sharedScopes index.
	counted [len(sharedScopes)]bool
	// seen is the version and halt of each shared entry the set does not
	// count in, as the session last read it: those entries are only
	// checked (for a fleet halt), on the session's own view, so that a
	// decision never waits for an entry it does not lock.
	seen [len(sharedScopes)]struct {
		version string
		halt    *Decision
	}
	// touched and strict say whether the decision read or counted a
	// counter, and one that fails closed on a store error.
	touched, strict bool
	// answers are the approvers' answers of the decision, by approval key,
	// so that a decision that runs again does not ask again.
	answers map[string]Approval
}

// entry returns the shared entry of counter c's scope; the decision holds
// it locked.
func (s *Session) entry(c *compile.Counter) *sharedEntry {
	for i, sc := range sharedScopes {
		if sc == c.Decl.Scope {
			return s.st.entries[i]
		}
	}
	return nil
}

// touch records that the decision read or counted counter c.
func (s *Session) touch(c *compile.Counter) {
	if s.eng.cfg.store == nil {
		return
	}
	s.st.touched = true
	if c.Decl.OnStoreError != policy.StoreErrorLocal {
		s.st.strict = true
	}
}

// bindEntries resolves the session's shared entries from its metadata.
func (s *Session) bindEntries() {
	for i, sc := range sharedScopes {
		s.st.entries[i] = s.eng.shared(state.Key{Scope: sc, ID: ScopeID(s.meta, sc)})
	}
}

// decideStored decides one call of a session whose state is in the store:
// run on the state the handle holds, commit, and run again on the current
// state when another replica changed it.
func (s *Session) decideStored(ctx context.Context, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error) {
	st := &s.st
	defer s.eng.sessionLocks.lock(s.id)()
	st.counted = [len(sharedScopes)]bool{}
	if st.version == "" && len(s.meta) <= 1 {
		// A handle opened without metadata on a session another replica
		// started takes the session's metadata, and with it its agent,
		// repository and organisation, before any entry is locked.
		if err := s.syncLocked(ctx); err != nil {
			return s.storeFault(phase, call.Tool, CodeStoreUnavailable, "the state store could not be reached: "+err.Error()), nil
		}
	}
	// The shared entries the set counts in stay locked to the commit.
	for _, c := range set.Counters() {
		for i, sc := range sharedScopes {
			if c.Decl.Scope == sc {
				st.counted[i] = true
			}
		}
	}
	for i, ent := range st.entries {
		if st.counted[i] {
			ent.mu.Lock()
			defer ent.mu.Unlock()
		}
	}
	st.answers = nil
	defer func() { st.answers = nil }()
	for try := 0; ; try++ {
		st.touched, st.strict = false, false
		d, err := s.decideLocal(ctx, set, phase, call, res, io, opts)
		if phase == policy.PhaseBefore {
			s.rememberBefore(call, d)
		}
		ops, writes, serr := s.storeOps()
		var ok bool
		var cur []storedEntry
		if serr == nil {
			ok, cur, serr = s.eng.commit(ctx, ops)
		}
		if serr != nil {
			if st.touched && !st.strict {
				// Every counter the decision used degrades to local
				// counting: the decision stands on the replica's state,
				// which the next commit writes if no other replica
				// changed it meanwhile.
				s.keepLocal()
				return d, err
			}
			s.rollback()
			return s.storeFault(phase, call.Tool, CodeStoreUnavailable, "the state store could not be reached: "+serr.Error()), nil
		}
		s.adopt(ops, writes, cur, ok)
		if ok {
			return d, err
		}
		if try+1 >= s.eng.cfg.storeRetries {
			return s.storeFault(phase, call.Tool, CodeStoreConflict, fmt.Sprintf("the session state kept changing on other replicas (%d tries)", try+1)), nil
		}
		if err := ctx.Err(); err != nil {
			return refusal(phase, call.Tool, CodeCanceled, "the decision was not finished: "+err.Error(), nil), err
		}
	}
}

// storeFault is the block of a decision the store could not settle.
func (s *Session) storeFault(phase policy.Phase, tool, code, reason string) Decision {
	return refusal(phase, tool, code, reason, nil)
}

// storeOps are the entries a decision of the session checks and writes:
// its own, then its shared ones; writes are the states the ops write, by
// op.
func (s *Session) storeOps() ([]state.Op, []SessionState, error) {
	st := &s.st
	ops := make([]state.Op, 0, 1+len(st.entries))
	writes := make([]SessionState, 0, 1+len(st.entries))
	cur := s.State()
	op := state.Op{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: st.version}
	js, err := json.Marshal(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot encode the session state: %w", err)
	}
	if st.version == "" || !st.committed.same(js) {
		op.Write = js
	}
	ops, writes = append(ops, op), append(writes, cur)
	for i, ent := range st.entries {
		if !st.counted[i] {
			// Only checked, for a fleet halt: the session's own view.
			ops = append(ops, state.Op{Key: ent.key, Version: st.seen[i].version})
			writes = append(writes, SessionState{})
			continue
		}
		op := state.Op{Key: ent.key, Version: ent.version}
		est := ent.state()
		js, err := json.Marshal(est)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot encode the %s state: %w", ent.key, err)
		}
		if !ent.committed.same(js) {
			op.Write, op.Persistent = js, est.Halted != nil
		}
		ops, writes = append(ops, op), append(writes, est)
	}
	return ops, writes, nil
}

// snapshot is a state as committed, with its JSON, which a decision's
// state is compared with to know whether it changed.
type snapshot struct {
	st SessionState
	js []byte
}

func (sn *snapshot) set(st SessionState) {
	sn.st = st
	sn.js, _ = json.Marshal(st)
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
func (s *Session) adopt(ops []state.Op, writes []SessionState, cur []storedEntry, ok bool) {
	st := &s.st
	for i, op := range ops {
		c := cur[i]
		if i == 0 {
			st.local = nil
			if ok {
				st.version = c.Version
				if op.Write != nil {
					st.committed.setJSON(writes[i], op.Write)
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
	st := &s.st
	state := SessionState{ID: s.id}
	if c.State != nil {
		state = *c.State
	}
	s.mu.Lock()
	s.restore(state)
	s.mu.Unlock()
	st.version = c.Version
	st.committed.set(s.State())
}

// rollback undoes what a decision changed in the handle's state, back to
// the states last committed (or kept locally).
func (s *Session) rollback() {
	st := &s.st
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
	st := &s.st
	cur := s.State()
	st.local = &cur
	for i, ent := range st.entries {
		if st.counted[i] {
			est := ent.state()
			ent.local = &est
		}
	}
}

// fleetHalt is the fleet halt in force over the session, if one is.
func (s *Session) fleetHalt() *Decision {
	if s.eng.cfg.store == nil {
		return nil
	}
	for i, ent := range s.st.entries {
		h := s.st.seen[i].halt
		if s.st.counted[i] {
			h = ent.halt // the decision holds it locked
		}
		if h != nil {
			return h
		}
	}
	return nil
}
