// Package state is the persistence protocol of celguard's session state:
// the keys of stored entries, a versioned compare-and-set commit over them
// (Store), and the faults a store reports. It is a leaf: it knows nothing
// of the evaluator, the hooks or any store implementation, so that every
// implementation (package store: memory, the signed state directory, Redis
// and Valkey) depends on it alone, and the evaluator (package eval, which
// decides on the state and commits it) and the stores meet here.
//
// A store keeps each entry's state as opaque JSON bytes: what a session
// remembers (its turn, halt, counters, approvals; eval.SessionState) is the
// evaluator's schema, which grows without any store changing. A store
// never changes the bytes it is given or returns.
//
// Sessions keep their own entry (Key scope policy.ScopeSession, ID the
// session id); counters scoped beyond a session (policy.ScopeAgent,
// ScopeRepository, ScopeOrg) and fleet halts are kept in one entry per
// agent, repository or organisation. eval's package doc, section "State and
// locks", says who reads and writes which entry, and under which lock.
package state

import (
	"context"
	"time"

	"github.com/celguard/celguard/policy"
)

// Key names an entry of a Store: a session's own state (Scope
// policy.ScopeSession, ID the session id), or the shared state of an
// agent, a repository or an organisation (ScopeAgent, ScopeRepository,
// ScopeOrg, ID its identifier from the session metadata, "" for sessions
// that have none).
type Key struct {
	Scope policy.Scope
	ID    string
}

// String is "scope:id".
func (k Key) String() string { return k.Scope.String() + ":" + k.ID }

// Op is one entry of a Commit: the version the caller read, and the state
// to write, if the caller changed it.
type Op struct {
	Key     Key
	Version string
	// Write is the entry's new state as JSON; nil only checks the version.
	Write []byte
	// Persistent says the entry written is kept without expiry (a shared
	// entry with a fleet halt in force, which lasts until it is lifted);
	// other entries expire after the store's time to live since their last
	// use.
	Persistent bool
}

// Entry is an entry as a store holds it.
type Entry struct {
	// Version is the entry's version, "" for an entry that does not exist.
	Version string
	// State is the entry's state as JSON, nil for an absent entry (and in
	// the answer of a commit that succeeded).
	State []byte
	// Fault, set by a store that checks its entries (the signed state
	// directory), says why the entry failed its check: it was changed
	// outside celguard. State is then what could be read of it (nil when
	// nothing could), not to be trusted, and Version is the version to
	// commit over it with: the caller restores the session fail-closed
	// and writes its state over the entry.
	Fault string
}

// Store keeps entries outside one process, so that several engines (the
// replicas of a decision service, the processes of the command hook) share
// them.
type Store interface {
	// Commit checks every op's entry still has the op's Version ("" for an
	// entry that does not exist) and, only if all do, writes every op's
	// Write (giving its entry a new version), all atomically. It returns
	// ok and, in current, each entry's version after the commit (State
	// nil); or not ok and, in current, each entry's current version and
	// state, having written nothing. An error means the store could not
	// be asked or could not answer. A store keeps nothing of ops after
	// Commit returns but the Write bytes (the caller reuses the slice).
	Commit(ctx context.Context, ops []Op) (ok bool, current []Entry, err error)
	// Delete removes an entry (a session that ended).
	Delete(ctx context.Context, key Key) error
	// Close releases the store's connections.
	Close() error
}

// WriteCopier is a Store that keeps a copy of each op's Write bytes, never
// the caller's slice, and answers with State bytes that are the caller's
// own: the caller may write into its Write bytes again as soon as Commit
// returns. A store in the process's memory (store.Memory) is one; the
// engine then encodes a session's state into the same two buffers from one
// decision to the next instead of handing each encoding to the store.
type WriteCopier interface {
	Store
	// CopiesWrites marks the store; it does nothing.
	CopiesWrites()
}

// CommitterInto is a Store in the process's memory that answers a commit
// at once, in the caller's array. CommitInto is Commit with ctx ending at
// deadline (as a context with that deadline would: its error is
// context.DeadlineExceeded once the deadline has passed, else ctx's; a
// zero deadline is none), without a context made for it, and with current
// made in out's array when it has room (every element of it overwritten),
// so that a caller committing one decision after another (a session's
// handle, under its lock) allocates neither. The caller keeps nothing of
// current but what it copies out before it passes the same array again.
// store.Memory is one.
type CommitterInto interface {
	Store
	CommitInto(ctx context.Context, deadline time.Time, ops []Op, out []Entry) (ok bool, current []Entry, err error)
}
