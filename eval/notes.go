package eval

import (
	"context"
	"time"

	"github.com/celguard/celguard/compile"
)

// This file is what a decision notes on its way for its DecisionEvent
// (decisionlog.go), beside the Decision itself: the counters its rules
// read, its commits to the state store, when its judge was asked. Only an
// engine with a decision sink notes anything; the notes travel in the
// decision's context (withNotes), so that the backends (the session, the
// store) need no new parameter and concurrent decisions of one session
// never share them.

// CounterRead is a counter a decision's rules read, with the value they
// read (DecisionEvent.Counters).
type CounterRead struct {
	// ID is the counter's "policy/name" (compile.Counter.ID).
	ID string `json:"id"`
	// Key is the counter's key for the call (AllCallsKey, "", for a
	// counter without a key, and at a turn's end and for the model's
	// input and output, where the value is the total over every key).
	// It is computed from the call, so the decision log masks it.
	Key string `json:"key,omitempty"`
	// Value is the count the rules read (CounterCeiling for a saturated
	// counter).
	Value int64 `json:"value"`
}

// MaxCountersRead bounds DecisionEvent.Counters: past it the counters read
// are counted in DecisionEvent.CountersOmitted, not listed.
const MaxCountersRead = 16

// Outcomes of a StoreCommit.
const (
	// StoreCommitted: every entry still had the version the decision
	// read, and its writes are in the store.
	StoreCommitted = "committed"
	// StoreConflict: another replica (or hook process) changed an entry
	// since; nothing was written, and the decision runs again on the
	// current state (or is refused with store_conflict after the last
	// try).
	StoreConflict = "conflict"
	// StoreUnavailable: the store could not be reached or did not answer
	// in time (store_unavailable, unless every counter the decision used
	// falls back to local counting).
	StoreUnavailable = "unavailable"
)

// StoreCommit is one commit of a decision's state to the engine's state
// store (WithStore): the decision's run, then its commit, and a run and a
// commit again after a conflict.
type StoreCommit struct {
	// Start and End are when the commit was sent and answered.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Outcome is StoreCommitted, StoreConflict or StoreUnavailable.
	Outcome string `json:"outcome"`
	// Entries is how many entries it checked (the session's, and the
	// shared entries of the agent, repository or organisation the set
	// counts in); Writes how many of them it wrote.
	Entries int `json:"entries"`
	Writes  int `json:"writes"`
}

// decisionNotes are a decision's notes (see the file's comment).
type decisionNotes struct {
	counters        []CounterRead
	countersOmitted int
	commits         []StoreCommit
	// commitsBuf holds commits' first: a decision commits once unless
	// another replica changed the state meanwhile.
	commitsBuf [1]StoreCommit
	judgeStart time.Time
	judgeEnd   time.Time
}

type notesKey struct{}

// withNotes is ctx carrying fresh notes for one decision, when the engine
// has a sink (otherwise ctx, and nil: nothing is noted).
func (s *Session) withNotes(ctx context.Context) (context.Context, *decisionNotes) {
	if s.eng.cfg.sink == nil {
		return ctx, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	c := &notesContext{Context: ctx}
	c.notes.commits = c.notes.commitsBuf[:0]
	return c, &c.notes
}

// notesContext is a context carrying a decision's notes under notesKey:
// context.WithValue(ctx, notesKey{}, &notes), in one allocation instead
// of two (the notes and the context that carries them are made together).
type notesContext struct {
	context.Context
	notes decisionNotes
}

// Value is the notes for notesKey, and the parent's value for any other
// key.
func (c *notesContext) Value(key any) any {
	if key == (notesKey{}) {
		return &c.notes
	}
	return c.Context.Value(key)
}

// notesOf is the notes ctx carries, nil when none.
func notesOf(ctx context.Context) *decisionNotes {
	if ctx == nil {
		return nil
	}
	n, _ := ctx.Value(notesKey{}).(*decisionNotes)
	return n
}

// restart forgets what an earlier run of the decision read (a decision
// that runs again after a store conflict reads anew).
func (n *decisionNotes) restart() {
	if n == nil {
		return
	}
	n.counters, n.countersOmitted = n.counters[:0], 0
	n.judgeStart, n.judgeEnd = time.Time{}, time.Time{}
}

// readCounter notes that the rules read counter c at key, with value v;
// a counter read again (after a rewrite) keeps its last value.
func (n *decisionNotes) readCounter(c *compile.Counter, key string, v int64) {
	if n == nil {
		return
	}
	for i := range n.counters {
		if n.counters[i].ID == c.ID {
			n.counters[i].Key, n.counters[i].Value = key, v
			return
		}
	}
	if len(n.counters) >= MaxCountersRead {
		n.countersOmitted++
		return
	}
	n.counters = append(n.counters, CounterRead{ID: c.ID, Key: key, Value: v})
}

// commit notes one commit of the decision's state.
func (n *decisionNotes) commit(start time.Time, outcome string, entries, writes int) {
	if n == nil {
		return
	}
	n.commits = append(n.commits, StoreCommit{Start: start, End: time.Now(), Outcome: outcome, Entries: entries, Writes: writes})
}

// judged notes when the judge was asked.
func (n *decisionNotes) judged(start time.Time) {
	if n == nil {
		return
	}
	n.judgeStart, n.judgeEnd = start, time.Now()
}

// fill copies the notes into the decision's event.
func (n *decisionNotes) fill(ev *DecisionEvent) {
	if n == nil {
		return
	}
	if len(n.counters) > 0 {
		ev.Counters = append([]CounterRead(nil), n.counters...)
	}
	ev.CountersOmitted = n.countersOmitted
	if len(n.commits) > 0 {
		ev.Commits = n.commits // nil when there was none, as without notes
	}
	ev.JudgeStart, ev.JudgeEnd = n.judgeStart, n.judgeEnd
}
