package eval

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// This file is a session's side of a state store (storeSession, its
// backend): a decision's run, commit and rerun, a new turn, a change of
// the approval book, and reading a session another replica started.
// fleet.go is the engine's side.

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
	// overwrite says the session's entry failed the store's check
	// (state.Entry.Fault): the next commit writes the session's state over
	// it, changed or not, and until then its decisions are marked (rule
	// 19). Read and written under s.mu.
	overwrite bool
	// oneEvent says the handle decides one event (Engine.ResumeSession):
	// every decision it makes on a state restored fail-closed is marked,
	// not only the first.
	oneEvent bool
	// memo keeps the encoding of the session's id and the space its
	// state is encoded in, from one commit to the next (stateenc.go).
	memo stateMemo
	// ops and cur are a decision's ops and the store's answer (storeOps,
	// decideStored), reused from one decision to the next: a store keeps
	// nothing of its ops but their bytes (state.Store).
	ops [1 + len(sharedScopes)]state.Op
	cur [1 + len(sharedScopes)]storedEntry
	// answer is the store's answer to a decision's commit, for a store
	// that answers in the caller's array (state.CommitterInto); nothing
	// of it is kept past commitInto.
	answer [1 + len(sharedScopes)]state.Entry
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

// touch implements backend: the decision read or counted counter c.
func (st *storeSession) touch(c *compile.Counter) {
	st.touched = true
	if c.Decl.OnStoreError != policy.StoreErrorLocal {
		st.strict = true
	}
}

// sharedCounts implements backend: the counts of c in its shared entry,
// which the decision holds locked; the caller holds s.mu.
func (st *storeSession) sharedCounts(s *Session, c *compile.Counter) *counterState {
	ent := s.entry(c)
	cs, ok := ent.counters[c.ID]
	if !ok {
		cs = newCounterState()
		ent.counters[c.ID] = cs
	}
	return cs
}

// answered implements backend.
func (st *storeSession) answered(key string) (Approval, bool) {
	a, ok := st.answers[key]
	return a, ok
}

// noteAnswer implements backend.
func (st *storeSession) noteAnswer(key string, a Approval) {
	if st.answers == nil {
		st.answers = map[string]Approval{}
	}
	st.answers[key] = a
}

// decide implements backend (decideStored).
func (st *storeSession) decide(ctx context.Context, s *Session, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error) {
	return s.decideStored(ctx, set, phase, call, res, io, opts)
}

// decided implements backend: a refused call was remembered in the
// decision's commit.
func (st *storeSession) decided(*Session, Call, Decision) {}

// nextTurn implements backend: the new turn is committed.
func (st *storeSession) nextTurn(ctx context.Context, s *Session) (uint64, error) {
	return s.changeStored(ctx, func() error {
		s.mu.Lock()
		s.turn++
		s.halt = nil
		s.mu.Unlock()
		return nil
	})
}

// change implements backend: the change is committed, on the session's
// current stored state.
func (st *storeSession) change(ctx context.Context, s *Session, apply func() error) error {
	_, err := s.changeStored(ctx, apply)
	return err
}

// sync implements backend.
func (st *storeSession) sync(ctx context.Context, s *Session) error {
	locks := &s.eng.stored.locks
	sl := locks.lock(s.id)
	defer locks.unlock(s.id, sl)
	return s.syncLocked(ctx)
}

// open implements backend.
func (st *storeSession) open(ctx context.Context, s *Session) error {
	if err := st.sync(ctx, s); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	_, err := s.changeStored(ctx, func() error { return nil })
	return err
}

// bindEntries resolves the session's shared entries from its metadata.
func (s *Session) bindEntries() {
	for i, sc := range sharedScopes {
		s.st.entries[i] = s.eng.stored.shared(state.Key{Scope: sc, ID: ScopeID(s.meta, sc)})
	}
}

// decideStored decides one call of a session whose state is in the store:
// run on the state the handle holds, commit, and run again on the current
// state when another replica changed it.
func (s *Session) decideStored(ctx context.Context, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error) {
	st := s.st
	locks := &s.eng.stored.locks
	sl := locks.lock(s.id)
	defer locks.unlock(s.id, sl)
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
	clear(st.answers) // the map is kept for the next decision
	defer clear(st.answers)
	for try := 0; ; try++ {
		st.touched, st.strict = false, false
		d, err := s.decideLocal(ctx, set, phase, call, res, io, opts)
		if phase == policy.PhaseBefore {
			s.rememberBefore(call, d)
		}
		var writes opStates
		ops, serr := s.storeOps(&writes)
		var ok bool
		var cur []storedEntry
		if serr == nil {
			ok, cur, serr = s.commitNoted(ctx, ops, st.cur[:0])
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
		s.adopt(ops, &writes, cur, ok)
		if ok {
			return d, err
		}
		if try+1 >= s.eng.stored.retries {
			return s.storeFault(phase, call.Tool, CodeStoreConflict, fmt.Sprintf("the session state kept changing on other replicas (%d tries)", try+1)), nil
		}
		if err := ctx.Err(); err != nil {
			return refusal(phase, call.Tool, CodeCanceled, "the decision was not finished: "+err.Error(), nil), err
		}
	}
}

// commitNoted commits a decision's ops, noting the commit and its outcome
// for the decision's event (DecisionEvent.Commits).
func (s *Session) commitNoted(ctx context.Context, ops []state.Op, out []storedEntry) (bool, []storedEntry, error) {
	n := notesOf(ctx)
	var start time.Time
	if n != nil {
		start = time.Now()
	}
	ok, cur, err := s.eng.stored.commitInto(ctx, ops, out, s.st.answer[:0])
	if n != nil {
		outcome := StoreCommitted
		switch {
		case err != nil:
			outcome = StoreUnavailable
		case !ok:
			outcome = StoreConflict
		}
		writes := 0
		for _, op := range ops {
			if op.Write != nil {
				writes++
			}
		}
		n.commit(start, outcome, len(ops), writes)
	}
	return ok, cur, err
}

// storeFault is the block of a decision the store could not settle.
func (s *Session) storeFault(phase policy.Phase, tool, code, reason string) Decision {
	return refusal(phase, tool, code, reason, nil)
}

// opStates are the states a decision's shared ops write, by op
// (storeOps; the session's own op, the first, keeps only its bytes): on
// the caller's stack, not allocated per decision.
type opStates [1 + len(sharedScopes)]SessionState

// storeOps are the entries a decision of the session checks and writes:
// its own, then its shared ones; writes receives the states the shared
// ops write, by op.
func (s *Session) storeOps(writes *opStates) ([]state.Op, error) {
	st := s.st
	ops := st.ops[:0]
	op := state.Op{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: st.version}
	// Encoded from the session's own state, not a copy of it: the bytes
	// are the snapshot the commit keeps (adopt), not the view.
	s.mu.Lock()
	view := s.stateLocked()
	meta, err := s.metaMemberLocked()
	var js []byte
	if err == nil {
		js, err = encodeStateKept(&view, &st.memo, meta, s.facts.recentEncodings(view.Recent), st.committed.js, s.eng.stored.copies)
	}
	overwrite := st.overwrite
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("cannot encode the session state: %w", err)
	}
	if st.version == "" || overwrite || !st.committed.same(js) {
		op.Write = js
	}
	ops = append(ops, op)
	for i, ent := range st.entries {
		if !st.counted[i] {
			// Only checked, for a fleet halt: the session's own view.
			ops = append(ops, state.Op{Key: ent.key, Version: st.seen[i].version})
			continue
		}
		op := state.Op{Key: ent.key, Version: ent.version}
		est := ent.state()
		js, err := encodeState(&est)
		if err != nil {
			return nil, fmt.Errorf("cannot encode the %s state: %w", ent.key, err)
		}
		if !ent.committed.same(js) {
			op.Write, op.Persistent = js, est.Halted != nil
		}
		writes[len(ops)] = est
		ops = append(ops, op)
	}
	return ops, nil
}

// fleetHalt implements backend: the fleet halt in force over the session,
// if one is.
func (st *storeSession) fleetHalt(s *Session) *Decision {
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

// syncLocked reads the session's entry; the caller holds the session's
// lock and no shared entry.
func (s *Session) syncLocked(ctx context.Context) error {
	ok, got, err := s.eng.stored.commit(ctx, []state.Op{{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: s.st.version}})
	if err != nil || ok {
		return err
	}
	if c := got[0]; c.State != nil && c.Fault == "" && len(s.meta) <= 1 && len(c.State.Meta) > 0 {
		s.mu.Lock()
		s.meta = maps.Clone(c.State.Meta)
		s.meta["id"] = s.id
		s.view, s.metaKept = nil, false
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
	st := s.st
	locks := &s.eng.stored.locks
	sl := locks.lock(s.id)
	defer locks.unlock(s.id, sl)
	st.counted = [len(sharedScopes)]bool{}
	for try := 0; try < s.eng.stored.retries; try++ {
		cerr := change()
		cur := s.State()
		op := state.Op{Key: state.Key{Scope: policy.ScopeSession, ID: s.id}, Version: st.version}
		js, err := encodeStateKept(&cur, &st.memo, nil, nil, st.committed.js, s.eng.stored.copies)
		if err != nil {
			s.rollback()
			return s.Turn(), fmt.Errorf("cannot encode the session state: %w", err)
		}
		s.mu.Lock()
		overwrite := st.overwrite
		s.mu.Unlock()
		if cerr == nil && (st.version == "" || overwrite || !st.committed.same(js)) {
			op.Write = js
		}
		ok, got, err := s.eng.stored.commit(ctx, []state.Op{op})
		if err != nil {
			s.rollback()
			return s.Turn(), fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
		if ok {
			st.version = got[0].Version
			if op.Write != nil {
				st.committed.setJSON(cur, js)
				s.mu.Lock()
				st.overwrite = false
				s.mu.Unlock()
			}
			return s.Turn(), cerr
		}
		s.adoptSession(got[0])
	}
	return s.Turn(), fmt.Errorf("%w: the session state kept changing on other replicas", ErrStoreConflict)
}
