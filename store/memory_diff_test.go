package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/celguard/celguard/internal/deadline"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

// refMemory is the memory store's Commit as it was before it looked each
// op's entry up once, kept as the reference of
// TestMemoryCommitDifferential.
type refMemory struct {
	ttl        time.Duration
	now        func() time.Time
	maxEntries int
	entries    map[state.Key]refEntry
	versions   uint64
}

type refEntry struct {
	version string
	data    []byte
	expires time.Time
}

func (m *refMemory) get(k state.Key, now time.Time) (refEntry, bool) {
	e, ok := m.entries[k]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(m.entries, k)
		return refEntry{}, false
	}
	return e, ok
}

func (m *refMemory) Commit(ops []state.Op) (bool, []state.Entry, error) {
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
			e = refEntry{version: string(strconv.AppendUint(append(v[:0], 'm'), m.versions, 36)), data: op.Write}
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

func (m *refMemory) room(ops []state.Op, now time.Time) error {
	fresh := 0
	for _, op := range ops {
		if _, ok := m.entries[op.Key]; !ok && op.Write != nil {
			fresh++
		}
	}
	if len(m.entries)+fresh <= m.maxEntries {
		return nil
	}
	for k := range m.entries {
		m.get(k, now)
	}
	if len(m.entries)+fresh > m.maxEntries {
		return fmt.Errorf("the memory store is full (%d entries)", m.maxEntries)
	}
	return nil
}

// TestMemoryCommitDifferential: the memory store answers every commit as
// its reference does (refMemory), over random commits of one to six ops on
// a few keys (the same key twice in a commit too), with current, stale and
// absent versions, writes, persistent writes, entries expiring and the
// store's bound reached; and the entries it holds afterwards read the same.
// Half the commits go through CommitInto, answering in a reused array.
func TestMemoryCommitDifferential(t *testing.T) {
	ctx := context.Background()
	keys := []state.Key{{Scope: policy.ScopeSession, ID: "a"}, {Scope: policy.ScopeSession, ID: "b"},
		{Scope: policy.ScopeAgent}, {Scope: policy.ScopeRepository, ID: "r"}, {Scope: policy.ScopeOrg, ID: "o"}}
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 26))
		now := time.Unix(1_800_000_000, 0)
		clock := func() time.Time { return now }
		mem := store.NewMemory(time.Minute)
		mem.Now, mem.MaxEntries = clock, 1+r.IntN(5)
		ref := &refMemory{ttl: time.Minute, now: clock, maxEntries: mem.MaxEntries, entries: map[state.Key]refEntry{}}
		seen := map[state.Key][]string{} // versions each key had, to commit stale ones
		into := make([]state.Entry, 6)
		for step := range 60 {
			ops := make([]state.Op, 1+r.IntN(6))
			for i := range ops {
				k := keys[r.IntN(len(keys))]
				op := state.Op{Key: k}
				switch v := seen[k]; {
				case len(v) > 0 && r.IntN(4) != 0:
					op.Version = v[len(v)-1] // likely current
				case len(v) > 1:
					op.Version = v[r.IntN(len(v)-1)] // stale
				}
				if r.IntN(2) == 0 {
					op.Write = fmt.Appendf(nil, `{"step":%d,"op":%d}`, step, i)
					op.Persistent = r.IntN(4) == 0
				}
				ops[i] = op
			}
			wok, want, werr := ref.Commit(ops)
			var gok bool
			var got []state.Entry
			var gerr error
			if r.IntN(2) == 0 {
				gok, got, gerr = mem.Commit(ctx, ops)
			} else {
				// Answered in an array that held an earlier answer and
				// junk, with room or without.
				for i := range into {
					into[i] = state.Entry{Version: "junk", State: []byte("junk"), Fault: "junk"}
				}
				gok, got, gerr = mem.CommitInto(ctx, time.Time{}, ops, into[:r.IntN(len(into)+1)])
			}
			if wok != gok || !reflect.DeepEqual(got, want) || (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("seed %d step %d, ops %+v:\n got %v %+v %v\nwant %v %+v %v", seed, step, ops, gok, got, gerr, wok, want, werr)
			}
			for i, e := range got {
				if e.Version != "" {
					seen[ops[i].Key] = append(seen[ops[i].Key], e.Version)
				}
			}
			now = now.Add(time.Duration(r.IntN(40)) * time.Second)
		}
		// What each holds at the end, read with versions none has.
		read := make([]state.Op, len(keys))
		for i, k := range keys {
			read[i] = state.Op{Key: k, Version: "none"}
		}
		_, want, _ := ref.Commit(read)
		_, got, _ := mem.Commit(ctx, read)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d, the entries at the end:\n got %+v\nwant %+v", seed, got, want)
		}
	}
}

// TestMemoryCopiesWrites: the memory store keeps its own copy of what a
// commit writes and answers with copies of it (state.WriteCopier), so the
// caller's bytes, changed after the commit, and an answer's bytes, changed
// by whoever got them, never change what it holds; an entry written again
// in its own array reads as the last write, longer or shorter.
func TestMemoryCopiesWrites(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(time.Hour)
	var _ state.WriteCopier = mem
	key := state.Key{Scope: policy.ScopeSession, ID: "s"}
	read := func() []byte {
		ok, cur, err := mem.Commit(ctx, []state.Op{{Key: key, Version: "none"}})
		if err != nil || ok {
			t.Fatalf("read: %v %v", ok, err)
		}
		return cur[0].State
	}
	version := ""
	for _, w := range []string{`{"id":"s","turn":1}`, `{"id":"s","turn":2,"labels_lost":true}`, `{"id":"s"}`, ``} {
		buf := []byte(w)
		ok, cur, err := mem.Commit(ctx, []state.Op{{Key: key, Version: version, Write: buf}})
		if err != nil || !ok {
			t.Fatalf("write %q: %v %v", w, ok, err)
		}
		version = cur[0].Version
		for i := range buf {
			buf[i] = 'X' // the caller reuses its bytes
		}
		got := read()
		if string(got) != w || got == nil {
			t.Fatalf("after writing %q the store holds %q", w, got)
		}
		for i := range got {
			got[i] = 'Y' // whoever got an answer changes it
		}
		if again := read(); string(again) != w {
			t.Fatalf("an answer's bytes are the store's: it holds %q, want %q", again, w)
		}
	}
}

// TestMemoryCommitIntoDeadline: CommitInto by a deadline answers as Commit
// with a context ending at that deadline (internal/deadline, which the
// engine gives a store that is not in memory): the deadline's error first,
// then the context's, and a commit when neither has ended; nothing is
// written when it fails.
func TestMemoryCommitIntoDeadline(t *testing.T) {
	key := state.Key{Scope: policy.ScopeSession, ID: "s"}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		by   time.Time
	}{
		{"in time", context.Background(), future},
		{"deadline passed", context.Background(), past},
		{"context ended", canceled, future},
		{"both", canceled, past},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := []state.Op{{Key: key, Write: []byte(`{"n":1}`)}}
			ref := store.NewMemory(time.Minute)
			dctx := deadline.New(tc.ctx, tc.by)
			wok, want, werr := ref.Commit(dctx, ops)
			dctx.Stop()
			mem := store.NewMemory(time.Minute)
			gok, got, gerr := mem.CommitInto(tc.ctx, tc.by, ops, make([]state.Entry, 0, 4))
			if gok != wok || !reflect.DeepEqual(got, want) || !errors.Is(gerr, werr) || (gerr == nil) != (werr == nil) {
				t.Fatalf("CommitInto = %v %+v %v; Commit through a deadline context = %v %+v %v", gok, got, gerr, wok, want, werr)
			}
			// What each holds afterwards.
			read := []state.Op{{Key: key, Version: "none"}}
			_, want, _ = ref.Commit(context.Background(), read)
			_, got, _ = mem.Commit(context.Background(), read)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("afterwards: %+v, want %+v", got, want)
			}
		})
	}
}
