package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/celguard/celguard/state"
)

// DefaultMaxEntries bounds the entries of a memory store.
const DefaultMaxEntries = 1 << 18

// Memory is a store in this process: entries as a copy of the JSON they
// were committed with (state.WriteCopier), with an expiry refreshed at
// every use. It is the default, and what tests use to run several engines
// on one store.
type Memory struct {
	ttl time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxEntries bounds the entries kept; zero means DefaultMaxEntries.
	// A commit that would make a new entry past it, once the expired ones
	// are dropped, fails (the decision is blocked: store_unavailable).
	MaxEntries int

	mu      sync.Mutex
	entries map[state.Key]memEntry
	commits int
	// versions counts the versions given: an entry's version is the
	// count when it was written, so that no two writes of the store ever
	// share one (an entry that expired and was made again never takes a
	// version a replica still holds), without asking the system for
	// random bytes on every commit as a store shared between processes
	// does (newVersion).
	versions uint64
}

type memEntry struct {
	version string
	data    []byte
	expires time.Time // zero: never
}

// NewMemory is an empty memory store whose entries expire ttl after their
// last use.
func NewMemory(ttl time.Duration) *Memory {
	return &Memory{ttl: ttl, entries: map[state.Key]memEntry{}}
}

func (m *Memory) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// get is an entry that has not expired; the caller holds m.mu.
func (m *Memory) get(k state.Key, now time.Time) (memEntry, bool) {
	e, ok := m.entries[k]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(m.entries, k)
		return memEntry{}, false
	}
	return e, ok
}

// memLookup is an op's entry as a commit read it.
type memLookup struct {
	e  memEntry
	ok bool
}

// Commit implements state.Store. Each op's entry is looked up once (a
// decision commits four, its session's and three shared ones), again only
// for an op whose key an earlier op of the commit names.
func (m *Memory) Commit(ctx context.Context, ops []state.Op) (bool, []state.Entry, error) {
	return m.CommitInto(ctx, time.Time{}, ops, nil)
}

// CommitInto implements state.CommitterInto: Commit by deadline, answering
// in out's array when it has room. The deadline is checked first, on the
// system's clock (not Now), as a context with that deadline would
// (internal/deadline.Context.Err).
func (m *Memory) CommitInto(ctx context.Context, deadline time.Time, ops []state.Op, out []state.Entry) (bool, []state.Entry, error) {
	if !deadline.IsZero() && time.Until(deadline) <= 0 {
		return false, nil, context.DeadlineExceeded
	}
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	now := m.now()
	if cap(out) < len(ops) {
		out = make([]state.Entry, len(ops))
	}
	out = out[:len(ops)]
	clear(out)
	var buf [4]memLookup
	cur := buf[:0]
	match := true
	fresh := 0
	for _, op := range ops {
		e, ok := m.get(op.Key, now)
		cur = append(cur, memLookup{e, ok})
		match = match && e.version == op.Version
		if !ok && op.Write != nil {
			fresh++
		}
	}
	if !match {
		for i, c := range cur {
			out[i].Version = c.e.version
			if c.ok {
				out[i].State = bytes.Clone(c.e.data) // the caller's own (CopiesWrites)
			}
		}
		return false, out, nil
	}
	if err := m.room(fresh, now); err != nil {
		return false, nil, err
	}
	for i, op := range ops {
		e, ok := cur[i].e, cur[i].ok
		if named(ops[:i], op.Key) {
			e, ok = m.get(op.Key, now) // as an earlier op left it
		}
		if op.Write != nil {
			m.versions++
			var v [14]byte
			// A copy, made in the entry's own array when it has room:
			// nobody else holds it (answers are copies).
			var data []byte
			if ok {
				data = e.data[:0]
			}
			if data = append(data, op.Write...); data == nil {
				data = []byte{} // an empty state, not an absent one
			}
			e = memEntry{version: string(strconv.AppendUint(append(v[:0], 'm'), m.versions, 36)), data: data}
			ok = true
		}
		if ok {
			switch {
			case op.Persistent && op.Write != nil:
				e.expires = time.Time{}
			case op.Write != nil || !e.expires.IsZero():
				e.expires = now.Add(m.ttl)
			}
			m.entries[op.Key] = e
		}
		out[i].Version = e.version
	}
	return true, out, nil
}

// named reports whether one of ops is of key k.
func named(ops []state.Op, k state.Key) bool {
	for _, op := range ops {
		if op.Key == k {
			return true
		}
	}
	return false
}

// room checks that fresh new entries fit under the bound, dropping expired
// entries when they do not; the caller holds m.mu.
func (m *Memory) room(fresh int, now time.Time) error {
	max := m.MaxEntries
	if max <= 0 {
		max = DefaultMaxEntries
	}
	if len(m.entries)+fresh <= max {
		return nil
	}
	for k := range m.entries {
		m.get(k, now) // drops it when expired
	}
	if len(m.entries)+fresh > max {
		return fmt.Errorf("the memory store is full (%d entries)", max)
	}
	return nil
}

// CopiesWrites implements state.WriteCopier: an entry's bytes are the
// store's own copy, made in the entry's array when it has room, and an
// answer's are a copy of them.
func (m *Memory) CopiesWrites() {}

// Delete implements state.Store.
func (m *Memory) Delete(ctx context.Context, key state.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
	return nil
}

// Close implements state.Store.
func (m *Memory) Close() error { return nil }

// Commits is how many commits the store answered (a test's count of round
// trips).
func (m *Memory) Commits() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}
