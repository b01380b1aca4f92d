package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/celguard/celguard/policy"
)

// Store keeps session state outside the engine, so that several engines
// (replicas of one decision service, on one machine or many) share it: with
// one Store and one session id, two Engines see the same counters, halts,
// approvals and refused calls. Package store opens the implementations
// (memory, the hook state files, Redis and Valkey) from a URL.
//
// A store holds entries, each a SessionState under a StateKey with an
// opaque version that changes at every write. Sessions keep their own
// entry; counters scoped beyond the session (policy.ScopeAgent,
// ScopeRepository, ScopeOrg) and fleet halts are kept in one entry per
// agent, repository or organisation, whose Counters and Halted are used.
//
// A decision with a store (WithStore) evaluates on the state its session
// handle last read, then commits with one Commit: the entries it read are
// checked and the entries it changed written, atomically, only if none
// changed since; otherwise the store answers with their current state and
// the decision runs again on it (at most WithStoreRetries times, then it is
// a block with code store_conflict). A decision therefore costs one round
// trip to the store while one replica serves a session, and no decision is
// taken on a state another replica changed since. A store that cannot be
// reached within WithStoreTimeout makes the decision a block with code
// store_unavailable (fail closed), except that a decision whose counters all
// opted into `on_store_error: local` (and that read or counted one) stands
// on the replica's last known state.
type Store interface {
	// Commit checks every op's entry still has the op's Version ("" for an
	// entry that does not exist) and, only if all do, writes every op's
	// Write (giving its entry a new version), all atomically. It returns
	// ok and, in current, each entry's version after the commit (State
	// nil); or not ok and, in current, each entry's current version and
	// state (State nil for an absent entry), having written nothing. An
	// error means the store could not be asked or could not answer.
	Commit(ctx context.Context, ops []StoreOp) (ok bool, current []StoreEntry, err error)
	// Delete removes an entry (a session that ended).
	Delete(ctx context.Context, key StateKey) error
	// Close releases the store's connections.
	Close() error
}

// StateKey names an entry of a Store: a session's own state (Scope
// policy.ScopeSession, ID the session id), or the shared state of an agent,
// a repository or an organisation (ScopeAgent, ScopeRepository, ScopeOrg,
// ID its identifier from the session metadata, "" for sessions that have
// none).
type StateKey struct {
	Scope policy.Scope
	ID    string
}

// String is "scope:id".
func (k StateKey) String() string { return k.Scope.String() + ":" + k.ID }

// StoreOp is one entry of a Commit: the version the decision read, and the
// state to write, if the decision changed it.
type StoreOp struct {
	Key     StateKey
	Version string
	// Write is the entry's new state; nil only checks the version.
	Write *SessionState
}

// Persistent reports whether the entry the op writes is kept without
// expiry: a shared entry with a halt in force (a fleet halt lasts until it
// is lifted). Other entries expire after the store's time to live since
// their last use.
func (op StoreOp) Persistent() bool {
	return op.Write != nil && op.Key.Scope.Shared() && op.Write.Halted != nil
}

// StoreEntry is an entry as a store holds it.
type StoreEntry struct {
	Version string
	State   *SessionState
}

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

// Defaults of the store options.
const (
	DefaultStoreTimeout = 2 * time.Second
	DefaultStoreRetries = 64
)

// WithStore keeps the engine's session state in st (see Store): a Session
// is then a handle on the stored state, and sessions of the same id on
// engines with the same store share it.
func WithStore(st Store) Option {
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

// Store returns the engine's store, nil without one.
func (e *Engine) Store() Store { return e.cfg.store }

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
	if e.cfg.store == nil {
		return errors.New("eval.Engine.Halt: a fleet halt needs a state store (WithStore)")
	}
	ent := e.shared(StateKey{Scope: scope, ID: id})
	ent.mu.Lock()
	defer ent.mu.Unlock()
	for try := 0; try < e.cfg.storeRetries; try++ {
		w := ent.state()
		w.Halted = h
		op := StoreOp{Key: ent.key, Version: ent.version, Write: &w}
		ok, cur, err := e.commit(ctx, []StoreOp{op})
		if err != nil {
			return fmt.Errorf("%s: %w", CodeStoreUnavailable, err)
		}
		if ok {
			ent.adopt(e, cur[0].Version, &w)
			return nil
		}
		ent.adopt(e, cur[0].Version, cur[0].State)
	}
	return fmt.Errorf("%s: the %s state kept changing on other replicas", CodeStoreConflict, scope)
}

// commit commits ops to the store within the store timeout, checking the
// store answered for every op.
func (e *Engine) commit(ctx context.Context, ops []StoreOp) (bool, []StoreEntry, error) {
	cctx, cancel := context.WithTimeout(ctx, e.cfg.storeTimeout)
	defer cancel()
	ok, cur, err := e.cfg.store.Commit(cctx, ops)
	if err == nil && len(cur) != len(ops) {
		err = fmt.Errorf("the store answered %d entries for %d", len(cur), len(ops))
	}
	return ok, cur, err
}

// DeleteSession removes a session's state from the store (the session
// ended); without a store it does nothing.
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	if e.cfg.store == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, e.cfg.storeTimeout)
	defer cancel()
	return e.cfg.store.Delete(cctx, StateKey{Scope: policy.ScopeSession, ID: id})
}

// SharedState returns the state of a shared entry as the engine last read
// it (its counters and halt), for tests and status pages.
func (e *Engine) SharedState(scope policy.Scope, id string) SessionState {
	ent := e.shared(StateKey{Scope: scope, ID: id})
	ent.mu.Lock()
	defer ent.mu.Unlock()
	st := ent.state()
	st.Counters = maps.Clone(st.Counters)
	return st
}
