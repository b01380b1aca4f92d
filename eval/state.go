package eval

import (
	"container/list"
	"errors"
	"maps"
	"slices"
	"time"
)

// SessionState is everything a session remembers: its turn, a halt in
// force, its counters and its remembered approvals. It is plain data with
// stable JSON names, so a host that runs one process per tool call (hook
// adapters) can keep a session across processes: State after a decision,
// RestoreSession before the next.
type SessionState struct {
	ID       string                  `json:"id"`
	Meta     map[string]any          `json:"meta,omitempty"`
	Turn     uint64                  `json:"turn"`
	Halted   *Decision               `json:"halted,omitempty"`
	Counters map[string]CounterState `json:"counters,omitempty"`
	// Approvals are the remembered approval keys.
	Approvals []string `json:"approvals,omitempty"`
}

// CounterState is one counter's counts in a session, keyed by counter id
// (policy/name).
type CounterState struct {
	// Turn is the turn the counts belong to (turn-scoped counters).
	Turn uint64 `json:"turn"`
	// Keys are the counted keys, most recently touched first.
	Keys []KeyCount `json:"keys"`
}

// KeyCount is the count of one key, with its event times for window
// counters.
type KeyCount struct {
	Key    string      `json:"key"`
	Count  int64       `json:"count"`
	Events []time.Time `json:"events,omitempty"`
	// Last is the last streak value, for streak counters.
	Last string `json:"last,omitempty"`
}

// State returns a copy of the session's state.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SessionState{ID: s.id, Meta: maps.Clone(s.meta), Turn: s.turn}
	delete(st.Meta, "id")
	if s.halt != nil {
		h := *s.halt
		st.Halted = &h
	}
	if len(s.counters) > 0 {
		st.Counters = make(map[string]CounterState, len(s.counters))
		for id, cs := range s.counters {
			c := CounterState{Turn: cs.turn}
			for el := cs.order.Front(); el != nil; el = el.Next() {
				ks := el.Value.(*keyState)
				c.Keys = append(c.Keys, KeyCount{Key: ks.key, Count: ks.count, Events: slices.Clone(ks.events), Last: ks.last})
			}
			st.Counters[id] = c
		}
	}
	for k := range s.approvals {
		st.Approvals = append(st.Approvals, k)
	}
	slices.Sort(st.Approvals)
	return st
}

// RestoreSession rebuilds a session from a state State returned. The
// engine's bounds apply: keys beyond the per-counter bound are dropped,
// least recently touched first.
func (e *Engine) RestoreSession(st SessionState) (*Session, error) {
	if st.ID == "" {
		return nil, errors.New("eval.RestoreSession: the state has no session id")
	}
	s := e.NewSession(st.ID, st.Meta)
	if st.Turn > 0 {
		s.turn = st.Turn
	}
	if st.Halted != nil {
		h := *st.Halted
		s.halt = &h
	}
	for id, c := range st.Counters {
		cs := &counterState{keys: map[string]*list.Element{}, order: list.New(), turn: c.Turn}
		for _, k := range c.Keys {
			if len(cs.keys) >= e.cfg.maxCounterKeys {
				break
			}
			if _, dup := cs.keys[k.Key]; dup {
				continue
			}
			ev := k.Events
			if len(ev) > e.cfg.maxWindowEvents {
				ev = ev[len(ev)-e.cfg.maxWindowEvents:]
			}
			cs.keys[k.Key] = cs.order.PushBack(&keyState{key: k.Key, count: k.Count, events: slices.Clone(ev), last: k.Last})
		}
		s.counters[id] = cs
	}
	for _, k := range st.Approvals {
		if len(s.approvals) >= DefaultMaxApprovals {
			break
		}
		s.approvals[k] = true
	}
	return s, nil
}
