package eval

import (
	"container/list"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
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
	// Requests are the pending approval requests (WithApprovalRequests).
	Requests []PendingRequest `json:"requests,omitempty"`
	// Grants are the approvals a person gave (Approve).
	Grants []Grant `json:"grants,omitempty"`
	// Denials are the requests a person denied (Deny).
	Denials []Denial `json:"denials,omitempty"`
	// Judgments are judges' cached answers, oldest first.
	Judgments []Judgment `json:"judgments,omitempty"`
	// Saturated, when set, says the session's counts were lost to a
	// tampered state (Engine.RestoreTampered): counters read at
	// CounterCeiling until they reset.
	Saturated *Saturation `json:"saturated,omitempty"`
	// RefusedCalls are the calls refused before they ran, by call id, that
	// an after-event is matched against (Session.After); oldest first.
	RefusedCalls []RefusedCall `json:"refused_calls,omitempty"`
	// Labels are the labels rules added (session.labels), by label, each
	// with the call that added it first; at most MaxLabels (facts.go).
	Labels []LabelFact `json:"labels,omitempty"`
	// LabelsLost says a label was refused past MaxLabels: reading the
	// session's labels is an error from then on (fail closed).
	LabelsLost bool `json:"labels_lost,omitempty"`
	// Recent are the session's last calls (session.recent), oldest first,
	// at most MaxRecent (recent.go); RecentSeq is the number of the latest.
	Recent    []RecentCall `json:"recent,omitempty"`
	RecentSeq uint64       `json:"recent_seq,omitempty"`
	// Writes are the files the session wrote (session.writes), least
	// recently written first, at most MaxWrites (writes.go);
	// WritesEvicted says an unproven one left or was never kept.
	Writes        []WriteFact `json:"writes,omitempty"`
	WritesEvicted bool        `json:"writes_evicted,omitempty"`
	// Stream is a host's record of the model's answer being streamed,
	// which the host decides across its chunks (the Gemini CLI hook,
	// hooks/geministream.go, whose name it keeps in the state files):
	// opaque to the engine, kept and committed with the session's state
	// (Session.Stream, SetStream).
	Stream json.RawMessage `json:"gemini_stream,omitempty"`
}

// CounterCeiling is what a counter reads while it is saturated: above any
// limit a rule sets, so a rule that fires at a count (`counters.x >= n`)
// fires, and small enough that sums of counters do not overflow and that
// the number is exact in JSON.
const CounterCeiling int64 = 1<<53 - 1

// Saturation records that a session's counts were lost: its stored state
// failed its check, so the counts in it may have been lowered by whoever
// changed it. Until a counter resets as it would have anyway, it reads at
// CounterCeiling (fail closed); events counted since are kept and count
// once the saturation lifts:
//
//   - a turn-scoped counter, at the next turn (Turn is the turn it was
//     found in);
//   - a window counter, once its window has passed since the fault was
//     found (Since): every event counted before then has left the window;
//   - a key a reset_when clears, from then on (Cleared, per counter id);
//   - any other counter (session scope, no window), never in this session.
type Saturation struct {
	Since   time.Time           `json:"since"`
	Turn    uint64              `json:"turn"`
	Cleared map[string][]string `json:"cleared,omitempty"`
}

// saturation is a Saturation in a session.
type saturation struct {
	since   time.Time
	turn    uint64
	cleared map[string]map[string]bool // counter id -> keys reset since
}

// saturated reports whether counter c reads at its ceiling for key; the
// caller holds s.mu.
func (s *Session) saturated(c *compile.Counter, key string, now time.Time) bool {
	sat := s.sat
	switch {
	case sat == nil:
		return false
	case c.Decl.Scope == policy.ScopeTurn && s.turn != sat.turn:
		return false
	case c.Decl.Window > 0 && !now.Before(sat.since.Add(c.Decl.Window)):
		return false
	}
	return !sat.cleared[c.ID][key]
}

// unsaturate records that a reset_when cleared counter c's key; the caller
// holds s.mu. Past the bound on keys, the key stays saturated (stricter).
func (s *Session) unsaturate(c *compile.Counter, key string) {
	sat := s.sat
	if sat == nil {
		return
	}
	keys := sat.cleared[c.ID]
	if keys == nil {
		keys = map[string]bool{}
		sat.cleared[c.ID] = keys
	}
	if len(keys) < s.eng.cfg.maxCounterKeys {
		keys[key] = true
	}
}

// export is the saturation as state.
func (sat *saturation) export() *Saturation {
	out := &Saturation{Since: sat.since, Turn: sat.turn}
	for id, keys := range sat.cleared {
		if len(keys) == 0 {
			continue
		}
		if out.Cleared == nil {
			out.Cleared = map[string][]string{}
		}
		ks := slices.Sorted(maps.Keys(keys))
		out.Cleared[id] = ks
	}
	return out
}

// restoreSaturation is a Saturation of a state, within the engine's bounds.
func (e *Engine) restoreSaturation(st *Saturation) *saturation {
	sat := &saturation{since: st.Since, turn: st.Turn, cleared: map[string]map[string]bool{}}
	for id, ks := range st.Cleared {
		keys := map[string]bool{}
		for _, k := range ks {
			if len(keys) >= e.cfg.maxCounterKeys {
				break
			}
			keys[k] = true
		}
		sat.cleared[id] = keys
	}
	return sat
}

// RestoreTampered starts session id again after its stored state failed
// its check (it was changed outside celguard), failing closed: untrusted is
// what could be read of that state, and only its halt is kept (a halt can
// only make the session stricter; its text is not kept, since whoever
// changed the file wrote it). Its approvals are dropped, its counters are
// dropped and every counter reads at CounterCeiling until it resets (see
// Saturation), its labels read as lost (reading them is an error, facts.go),
// and the metadata is meta. fault says what failed; every
// decision of a call or a result this handle makes is marked with it
// (decide.go, rule 19): a handle restored so is meant for the one event
// that found the fault, as a command hook's is.
func (e *Engine) RestoreTampered(id string, meta map[string]any, untrusted SessionState, fault error) (*Session, error) {
	if id == "" {
		return nil, errors.New("eval.RestoreTampered: no session id")
	}
	if fault == nil {
		return nil, errors.New("eval.RestoreTampered: no fault to report")
	}
	s := e.NewSession(id, meta)
	s.failClosed(&untrusted, fault.Error())
	return s, nil
}

// failClosed makes the session's state, just restored empty, the
// fail-closed state of a stored state that failed its check (fault says
// why; untrusted, when set, is what could be read of it): only its halt is
// kept, every counter saturates, labels read as lost, and the session's
// decisions are marked (rule 19). The caller holds s.mu or owns s alone.
func (s *Session) failClosed(untrusted *SessionState, fault string) {
	s.tampered = fault + "; " + TamperedConsequence
	if untrusted != nil && untrusted.Halted != nil {
		s.halt = &Decision{Verdict: policy.Halt, Code: CodeStateTampered,
			Reason: "the turn was halted, and the session state was changed outside celguard since"}
	}
	s.sat = &saturation{since: s.eng.cfg.now(), turn: s.turn, cleared: map[string]map[string]bool{}}
	// Its labels may have been removed: they read as lost (facts.go); so
	// may the marks of its unproven writes (writes.go).
	s.facts.over = true
	s.facts.writesEvicted = true
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

// metaMemberLocked returns the stored state's meta member: the session's
// metadata without its id, encoded as json.Marshal would as a member of
// SessionState (nothing when the metadata is the id alone), kept from one
// call to the next until meta changes. The caller holds s.mu.
func (s *Session) metaMemberLocked() ([]byte, error) {
	if s.metaKept {
		return s.metaJS, nil
	}
	var b []byte
	if _, id := s.meta["id"]; len(s.meta) > 1 || len(s.meta) == 1 && !id {
		m := maps.Clone(s.meta)
		delete(m, "id")
		var err error
		if b, err = appendMember(nil, `,"meta":`, m); err != nil {
			return nil, err
		}
	}
	s.metaJS, s.metaKept = b, true
	return b, nil
}

// State returns a copy of the session's state.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stateLocked()
	st.Meta = maps.Clone(s.meta)
	delete(st.Meta, "id")
	if st.Halted != nil {
		h := *st.Halted
		st.Halted = &h
	}
	st.Requests, st.Grants, st.Denials = slices.Clone(st.Requests), slices.Clone(st.Grants), slices.Clone(st.Denials)
	st.Labels, st.Writes = slices.Clone(st.Labels), slices.Clone(st.Writes)
	if len(st.Recent) > 0 {
		rs := make([]RecentCall, len(st.Recent))
		for i, r := range st.Recent {
			r.IDs = maps.Clone(r.IDs)
			rs[i] = r
		}
		st.Recent = rs
	}
	return st
}

// stateLocked is the session's state as State returns it, except that it
// shares the session's own halt, approval book, labels, recent calls and
// writes, and has no metadata (State adds a copy; storeOps writes the
// kept encoding, metaMemberLocked): a view to encode at once (storeOps),
// never to keep. The caller holds s.mu.
func (s *Session) stateLocked() SessionState {
	st := SessionState{ID: s.id, Turn: s.turn, Halted: s.halt}
	st.Counters = exportCounters(s.counters)
	if len(s.book.remembered) > 0 {
		st.Approvals = make([]string, 0, len(s.book.remembered))
		for k := range s.book.remembered {
			st.Approvals = append(st.Approvals, k)
		}
		slices.Sort(st.Approvals)
	}
	st.Requests, st.Grants, st.Denials = s.book.requests, s.book.grants, s.book.denials
	for _, k := range s.judgedOrder {
		st.Judgments = append(st.Judgments, s.judged[k])
	}
	if s.sat != nil {
		st.Saturated = s.sat.export()
	}
	st.RefusedCalls = s.refused.export()
	st.Labels, st.LabelsLost = s.facts.labels, s.facts.over
	st.Recent, st.RecentSeq = s.facts.recent, s.facts.seq
	st.Writes, st.WritesEvicted = s.facts.writes, s.facts.writesEvicted
	st.Stream = s.stream
	return st
}

// exportCounters is the state of counts, nil when there are none.
func exportCounters(counters map[string]*counterState) map[string]CounterState {
	if len(counters) == 0 {
		return nil
	}
	out := make(map[string]CounterState, len(counters))
	for id, cs := range counters {
		c := CounterState{Turn: cs.turn}
		for el := cs.order.Front(); el != nil; el = el.Next() {
			ks := el.Value.(*keyState)
			c.Keys = append(c.Keys, KeyCount{Key: ks.key, Count: ks.count, Events: slices.Clone(ks.events), Last: ks.last})
		}
		out[id] = c
	}
	return out
}

// restoreCounters rebuilds counts from their state, within the engine's
// bounds: keys beyond the per-counter bound are dropped, least recently
// touched first.
func (e *Engine) restoreCounters(counters map[string]CounterState) map[string]*counterState {
	out := make(map[string]*counterState, len(counters))
	for id, c := range counters {
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
		out[id] = cs
	}
	return out
}

// RestoreSession rebuilds a session from a state State returned. The
// engine's bounds apply: keys beyond the per-counter bound are dropped,
// least recently touched first.
func (e *Engine) RestoreSession(st SessionState) (*Session, error) {
	if st.ID == "" {
		return nil, errors.New("eval.RestoreSession: the state has no session id")
	}
	s := e.NewSession(st.ID, st.Meta)
	s.restore(st)
	return s, nil
}

// restore replaces the session's state (not its id nor its metadata) with
// st; the caller holds s.mu or owns s alone.
func (s *Session) restore(st SessionState) {
	e := s.eng
	s.turn = 1
	if st.Turn > 0 {
		s.turn = st.Turn
	}
	s.halt = nil
	if st.Halted != nil {
		h := *st.Halted
		s.halt = &h
	}
	s.counters = e.restoreCounters(st.Counters)
	b := st.book()
	b.remembered = make(map[string]bool, len(st.Approvals))
	for _, k := range st.Approvals {
		if len(b.remembered) >= DefaultMaxApprovals {
			break
		}
		b.remembered[k] = true
	}
	if len(b.requests) > MaxRequests {
		b.requests = b.requests[len(b.requests)-MaxRequests:]
	}
	if len(b.grants) > MaxGrants {
		b.grants = b.grants[len(b.grants)-MaxGrants:]
	}
	if len(b.denials) > MaxDenials {
		b.denials = b.denials[len(b.denials)-MaxDenials:]
	}
	s.book = *b
	for _, j := range st.Judgments {
		s.rememberJudgment(j)
	}
	s.sat = nil
	if st.Saturated != nil {
		s.sat = e.restoreSaturation(st.Saturated)
	}
	s.refused = refusedCalls{}
	s.refused.restore(st.RefusedCalls)
	s.facts.restore(st.Labels, st.LabelsLost)
	s.facts.restoreRecent(st.Recent, st.RecentSeq)
	s.facts.restoreWrites(st.Writes, st.WritesEvicted)
	s.stream = st.Stream
	s.view = nil
}
