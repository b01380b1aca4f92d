package eval

// This file is the engine's side of a state store: its options, the
// engine's copies of the shared entries (counters scoped to an agent, a
// repository or an organisation, and fleet halts) and the per-session
// locks. storesession.go is a session's side.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/celguard/celguard/internal/deadline"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// A decision with a store (WithStore: a state.Store, which package store
// opens: memory, the signed state directory, Redis and Valkey) evaluates on
// the state its session handle last read, then commits with one Commit:
// the entries it read are checked and the entries it changed written,
// atomically, only if none changed since; otherwise the store answers with
// their current state and the decision runs again on it (at most
// WithStoreRetries times, then it is a block with code store_conflict). A
// decision therefore costs one round trip to the store while one replica
// serves a session, and no decision is taken on a state another replica
// changed since. A store that cannot be reached within WithStoreTimeout
// makes the decision a block with code store_unavailable (fail closed),
// except that a decision whose counters all opted into `on_store_error:
// local` (and that read or counted one) stands on the replica's last known
// state. The entries hold SessionState as JSON.

// Codes of the decisions a store makes.
const (
	// CodeStoreUnavailable: the state store could not be reached within
	// the decision's deadline (WithStoreTimeout); the call is blocked.
	CodeStoreUnavailable = "store_unavailable"
	// CodeStoreConflict: other replicas changed the session's state at
	// every try (WithStoreRetries); the call is blocked.
	CodeStoreConflict = "store_conflict"
	// CodeFleetHalted: a halt of the session's agent, repository or
	// organisation is in force (Engine.Halt).
	CodeFleetHalted = "fleet_halted"
)

// Faults of the state store that an operation outside a decision
// returns (Session.NextTurn, Open, Approve, Revoke; Engine.Halt,
// LiftHalt), checked with errors.Is; the error wraps the store's own, and
// its text starts with the code (a decision the store cannot settle is a
// block with the code instead).
var (
	// ErrStoreUnavailable: the store could not be reached or did not
	// answer within WithStoreTimeout.
	ErrStoreUnavailable = errors.New(CodeStoreUnavailable)
	// ErrStoreConflict: other replicas changed the state at every try
	// (WithStoreRetries).
	ErrStoreConflict = errors.New(CodeStoreConflict)
)

// Defaults of the store options.
const (
	DefaultStoreTimeout = 2 * time.Second
	DefaultStoreRetries = 64
)

// WithStore keeps the engine's session state in st (see Store): a Session
// is then a handle on the stored state, and sessions of the same id on
// engines with the same store share it.
func WithStore(st state.Store) Option {
	return func(c *config) error {
		if st == nil {
			return errors.New("eval.WithStore: nil store")
		}
		c.store = st
		return nil
	}
}

// WithStoreTimeout bounds each commit to the store; past it the decision
// is a block with code store_unavailable.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("eval.WithStoreTimeout: the timeout must be positive, got %s", d)
		}
		c.storeTimeout = d
		return nil
	}
}

// WithStoreRetries bounds how many times a decision runs again after other
// replicas changed the state it read; past it the decision is a block with
// code store_conflict.
func WithStoreRetries(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("eval.WithStoreRetries: the bound must be positive, got %d", n)
		}
		c.storeRetries = n
		return nil
	}
}

// storedEngine is an engine's side of its state store: the store and its
// bounds, the engine's copies of the shared entries, and the locks of the
// sessions it decides. An engine has one exactly when it has a store
// (WithStore); its sessions then keep their state in the store
// (storeSession).
type storedEngine struct {
	store   state.Store
	timeout time.Duration
	retries int
	// copies says the store copies what it keeps (state.WriteCopier): a
	// session's state is then encoded into its own buffers, not a new
	// array at every commit (encodeStateKept).
	copies bool

	sharedMu      sync.Mutex
	sharedEntries map[state.Key]*sharedEntry
	locks         sessionLocks
}

// Store returns the engine's store, nil without one.
func (e *Engine) Store() state.Store {
	if e.stored == nil {
		return nil
	}
	return e.stored.store
}

// sharedScopes are the scopes of shared entries, in lock order.
var sharedScopes = [...]policy.Scope{policy.ScopeAgent, policy.ScopeRepository, policy.ScopeOrg}

// ScopeID is the identifier of a session's agent, repository or
// organisation, read from its metadata: the string under "agent",
// "repository" or "org" ("" when it is absent or not a string; every such
// session shares the "" entry, which is stricter, never looser). For the
// agent, an object with a "name" (as a Call's agent) gives its name.
func ScopeID(meta map[string]any, scope policy.Scope) string {
	var v any
	switch scope {
	case policy.ScopeAgent:
		v = meta["agent"]
		if m, ok := v.(map[string]any); ok {
			v = m["name"]
		}
	case policy.ScopeRepository:
		v = meta["repository"]
	case policy.ScopeOrg:
		v = meta["org"]
	}
	s, _ := v.(string)
	return s
}

// Halt halts every session of an agent, a repository or an organisation
// (scope policy.ScopeAgent, ScopeRepository, ScopeOrg; id as ScopeID reads
// it from the sessions' metadata) on every engine sharing the store, until
// LiftHalt: their decisions are halts with code fleet_halted. It needs a
// store (WithStore).
func (e *Engine) Halt(ctx context.Context, scope policy.Scope, id, reason string) error {
	if reason == "" {
		reason = "halted by an operator"
	}
	h := &Decision{Verdict: policy.Halt, Code: CodeFleetHalted, Reason: fmt.Sprintf("%s %q is halted: %s", scope, id, reason)}
	return e.setHalt(ctx, scope, id, h)
}

// LiftHalt lifts a halt Halt recorded.
func (e *Engine) LiftHalt(ctx context.Context, scope policy.Scope, id string) error {
	return e.setHalt(ctx, scope, id, nil)
}

func (e *Engine) setHalt(ctx context.Context, scope policy.Scope, id string, h *Decision) error {
	if !scope.Shared() {
		return fmt.Errorf("eval.Engine.Halt: scope %s is not agent, repository or org", scope)
	}
	se := e.stored
	if se == nil {
		return errors.New("eval.Engine.Halt: a fleet halt needs a state store (WithStore)")
	}
	ent := se.shared(state.Key{Scope: scope, ID: id})
	ent.mu.Lock()
	defer ent.mu.Unlock()
	for try := 0; try < se.retries; try++ {
		w := ent.state()
		w.Halted = h
		js, err := encodeState(&w)
		if err != nil {
			return err
		}
		op := state.Op{Key: ent.key, Version: ent.version, Write: js, Persistent: h != nil}
		ok, cur, err := se.commit(ctx, []state.Op{op})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
		if ok {
			ent.adopt(e, cur[0].Version, &w)
			return nil
		}
		ent.adopt(e, cur[0].Version, cur[0].State)
	}
	return fmt.Errorf("%w: the %s state kept changing on other replicas", ErrStoreConflict, scope)
}

// untrustedState is what is read of a stored state that failed the
// store's check (state.Entry.Fault): whether it was halted, which is all
// failClosed keeps of it; nil when it is not a JSON object. Its bytes are
// whoever changed them's: decoding all of it (its lists and maps) would
// let 4 MB of `{"requests":[{},{},...]}` allocate over a gigabyte, and a
// hook that runs out of memory crashes, which several hosts take as leave
// to go on. Skipping the other fields allocates nothing; a halt is kept
// whatever else the state holds.
func untrustedState(raw []byte) *SessionState {
	var head struct {
		Halted json.RawMessage `json:"halted"`
	}
	if raw == nil || json.Unmarshal(raw, &head) != nil {
		return nil
	}
	st := new(SessionState)
	if len(head.Halted) > 0 && string(head.Halted) != "null" {
		st.Halted = new(Decision)
	}
	return st
}

// storedEntry is an entry as the store answered it, its state decoded.
type storedEntry struct {
	Version string
	State   *SessionState
	// Fault says the entry failed the store's check (state.Entry.Fault):
	// State, when set, is what could be read of it, untrusted.
	Fault string
}

// commit commits ops to the store within the store timeout, checking the
// store answered for every op, and decodes the states it answered with.
func (se *storedEngine) commit(ctx context.Context, ops []state.Op) (bool, []storedEntry, error) {
	return se.commitInto(ctx, ops, nil, nil)
}

// commitInto is commit, answering in out's array when it has room, and
// asking a store that can (state.CommitterInto) to answer in into's.
func (se *storedEngine) commitInto(ctx context.Context, ops []state.Op, out []storedEntry, into []state.Entry) (bool, []storedEntry, error) {
	// The store's timeout makes a timer only for a store that waits on
	// it (deadline.Context); a store in memory answers at once, and is
	// given the deadline itself.
	var ok bool
	var cur []state.Entry
	var err error
	by := time.Now().Add(se.timeout)
	if ci, can := se.store.(state.CommitterInto); can && into != nil {
		ok, cur, err = ci.CommitInto(ctx, by, ops, into)
	} else {
		cctx := deadline.New(ctx, by)
		ok, cur, err = se.store.Commit(cctx, ops)
		cctx.Stop()
	}
	if err != nil {
		return false, nil, err
	}
	if len(cur) != len(ops) {
		return false, nil, fmt.Errorf("the store answered %d entries for %d", len(cur), len(ops))
	}
	if cap(out) < len(cur) {
		out = make([]storedEntry, len(cur))
	}
	out = out[:len(cur)]
	clear(out)
	for i, c := range cur {
		out[i].Version, out[i].Fault = c.Version, c.Fault
		if ok || c.State == nil {
			continue
		}
		if c.Fault != "" {
			out[i].State = untrustedState(c.State)
			continue
		}
		st := new(SessionState)
		if err := json.Unmarshal(c.State, st); err != nil {
			return false, nil, fmt.Errorf("the state of %s does not decode: %w", ops[i].Key, err)
		}
		out[i].State = st
	}
	return ok, out, nil
}

// DeleteSession removes a session's state from the store (the session
// ended); without a store it does nothing.
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	se := e.stored
	if se == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, se.timeout)
	defer cancel()
	return se.store.Delete(cctx, state.Key{Scope: policy.ScopeSession, ID: id})
}

// SharedState returns the state of a shared entry as the engine last read
// it (its counters and halt), for tests and status pages.
func (e *Engine) SharedState(scope policy.Scope, id string) SessionState {
	if e.stored == nil {
		return SessionState{ID: id}
	}
	ent := e.stored.shared(state.Key{Scope: scope, ID: id})
	ent.mu.Lock()
	defer ent.mu.Unlock()
	st := ent.state()
	st.Counters = maps.Clone(st.Counters)
	return st
}

// sharedEntry is an engine's copy of a shared entry of its store: the
// counts of the counters scoped to one agent, repository or organisation,
// and its fleet halt.
type sharedEntry struct {
	// mu is held while a decision may read or count the entry's counters
	// (from its first read to its commit), so that an engine commits one
	// decision of the entry at a time; it is taken after the session's
	// lock (storedEngine.locks) and before its counting lock and mu.
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
func (se *storedEngine) shared(key state.Key) *sharedEntry {
	se.sharedMu.Lock()
	defer se.sharedMu.Unlock()
	ent, ok := se.sharedEntries[key]
	if !ok {
		if se.sharedEntries == nil || len(se.sharedEntries) >= maxSharedEntries {
			se.sharedEntries = map[state.Key]*sharedEntry{}
		}
		ent = &sharedEntry{key: key, counters: map[string]*counterState{}}
		ent.committed.set(SessionState{ID: key.ID})
		se.sharedEntries[key] = ent
	}
	return ent
}

// sessionLocks serializes an engine's decisions on one session id, over
// all its handles: each decision runs, commits and perhaps runs again
// alone, so that replicas, not handles, are what contend in the store. A
// lock is kept while someone holds or waits for it; then it waits, unused,
// in free for the next lock taken (a decision takes one), so that taking
// a lock allocates nothing.
type sessionLocks struct {
	mu   sync.Mutex
	m    map[string]*sessionLock
	free []*sessionLock
}

type sessionLock struct {
	mu    sync.Mutex
	users int
}

// maxFreeSessionLocks bounds the unused locks kept.
const maxFreeSessionLocks = 64

// lock takes the lock of session id; the caller gives it back with unlock.
func (l *sessionLocks) lock(id string) *sessionLock {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sessionLock{}
	}
	sl := l.m[id]
	if sl == nil {
		if n := len(l.free); n > 0 {
			sl = l.free[n-1]
			l.free[n-1] = nil
			l.free = l.free[:n-1]
		} else {
			sl = &sessionLock{}
		}
		l.m[id] = sl
	}
	sl.users++
	l.mu.Unlock()
	sl.mu.Lock()
	return sl
}

// unlock gives back the lock of session id that lock took: sl, which
// nobody holds or waits for once its users are gone, and which it is then
// nobody's (taken out of the map) but free's.
func (l *sessionLocks) unlock(id string, sl *sessionLock) {
	sl.mu.Unlock()
	l.mu.Lock()
	if sl.users--; sl.users == 0 {
		delete(l.m, id)
		if len(l.free) < maxFreeSessionLocks {
			l.free = append(l.free, sl)
		}
	}
	l.mu.Unlock()
}
