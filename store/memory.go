package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/celguard/celguard/state"
)

// DefaultMaxEntries bounds the entries of a memory store.
const DefaultMaxEntries = 1 << 18

// Memory is a store in this process: entries as the JSON they were
// committed with (which neither side changes), with an expiry refreshed at
// every use. It is the
// default, and what tests use to run several engines on one store.
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

// Commit implements state.Store.
func (m *Memory) Commit(ctx context.Context, ops []state.Op) (bool, []state.Entry, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	now := m.now()
	out := make([]state.Entry, len(ops))
	for _, op := range ops {
		if e, _ := m.get(op.Key, now); e.version != op.Version {
			for i, op := range ops {
				e, ok := m.get(op.Key, now)
				out[i].Version = e.version
				if ok {
					out[i].State = e.data
				}
			}
			return false, out, nil
		}
	}
	if err := m.room(ops, now); err != nil {
		return false, nil, err
	}
	for i, op := range ops {
		e, ok := m.get(op.Key, now)
		if op.Write != nil {
			m.versions++
			var v [14]byte
			e = memEntry{version: string(strconv.AppendUint(append(v[:0], 'm'), m.versions, 36)), data: op.Write}
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

// room checks that the entries ops make fit under the bound, dropping
// expired entries when they do not; the caller holds m.mu.
func (m *Memory) room(ops []state.Op, now time.Time) error {
	max := m.MaxEntries
	if max <= 0 {
		max = DefaultMaxEntries
	}
	fresh := 0
	for _, op := range ops {
		if _, ok := m.entries[op.Key]; !ok && op.Write != nil {
			fresh++
		}
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
