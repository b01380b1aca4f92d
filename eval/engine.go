// Package eval decides what happens to an AI-agent tool call.
//
// An Engine wraps a compiled PolicySet and is safe for concurrent use by many
// sessions. Each agent session gets a Session, which holds its counters and
// remembered approvals; StartTurn begins a turn (turn-scoped counters reset)
// and EndTurn runs the rules of phase turn_end when it ends. Before decides a
// call before the tool runs and After decides its result. A Call carries the
// host's call id and the agent that made it (rules read call and agent),
// and every Decision echoes them, with the deciding rule's metadata (over
// its policy's). With WithDecisionMetadata every Decision also carries its
// audit record: a fresh DecisionID, its Time (the engine's clock, WithClock),
// the PolicyDigest of the set that decided and the SessionID.
//
// Input decides the messages about to be sent to the model and Output the
// model's output before it is returned, by the rules of phase input and
// output (which read messages and output, and no call): allow, warn, block,
// halt, or modify, a rewrite carried in Decision.Messages or Decision.Output.
//
// With WithDecisionSink every decision is also handed, as a DecisionEvent,
// to a DecisionSink (package decisionlog masks it into the record the
// decision log writes, one JSON line per decision: docs/decision-log.md)
// before it is returned; a decision the sink cannot record is refused
// unless the host handles the error.
//
// A policy in monitor mode (mode: monitor; every policy but the mandatory
// ones with WithMonitor) is evaluated but decides nothing: the decision is
// made as if it were absent, and Decision.Monitored reports what its first
// matching rule would have decided.
//
// A counter counts after the call (After updates it before the after-phase
// rules run) or, declared with phase before, at the decision before it: the
// rules read the counts of earlier calls, and the call is counted only when
// the decision lets it through, atomically with that decision, so
// concurrent calls on one session never pass a cap together.
//
// Rules are tried in evaluation order (mandatory rules first, then by layer,
// then by priority, ties in file order; docs/layers.md) and the first rule
// whose condition is true decides, with one exception: a
// modify rule rewrites the call (or result) and evaluation starts again from
// the top with the rewritten call, each modify rule applying at most once, so
// a rewrite can never carry a call past a block of any priority. When no rule
// matches before the call, the set's default verdict applies; after the call,
// the result of a call that was let through passes unchanged. The rules of
// an untrusted project decide apart, and the stricter decision stands. Every
// verdict rule is in decide.go.
//
// # State and locks
//
// A session's state (SessionState: its turn, a halt, counters, approval
// requests and grants, judges' answers, refused calls) lives in one of two
// places, chosen once, when the session is made (backend.go): in the
// Session itself, or, with a store (WithStore: a state.Store, which package
// store opens: memory, the signed state directory, Redis and Valkey), in
// the store, the Session being a handle on it. Deciding, approving,
// granting and turn code is the same for both; only the backend differs.
// The command hook, which runs one process per event, decides through a
// store exactly as serve does: the file store of its signed state directory
// (store.NewFileDir), holding the session's lock for the event
// (store.File.Hold) and resuming the session with the event's metadata
// (Engine.ResumeSession, resume.go); a session file changed outside
// celguard is answered by the store's Commit as an entry with a fault, and
// restored fail-closed here (storeadopt.go, rule 19). State and
// RestoreSession remain for embedders that keep a session's state
// themselves.
//
// With a store, engines sharing it share every session's counters, halts
// and approvals, and the counters scoped to an agent, a repository or an
// organisation, which live in one shared entry each, as do fleet halts
// (Engine.Halt). A decision runs on the state its handle last read, then
// commits it with one round trip, compare-and-set on the versions it read;
// when another replica changed them it runs again on the current state
// (storesession.go). One that cannot reach the store is a block with code
// store_unavailable (fleet.go); operations outside a decision return
// ErrStoreUnavailable or ErrStoreConflict.
//
// Locks, always taken in this order, never the other way:
//
//  1. the engine's lock of the session id (with a store): one decision of a
//     session at a time per engine, over all its handles, from its first
//     read to its commit, so that replicas, not handles, contend in the
//     store;
//  2. the shared entries the policy set counts in (with a store), in the
//     order agent, repository, organisation, held to the commit;
//  3. the session's counting lock: reading the before-counters, deciding
//     and counting the call are one step (countereval.go);
//  4. the session's mutex, held briefly around every read or change of its
//     fields (never while a rule is evaluated or an approver asked).
//
// A run-time error in a rule's condition (a missing key, a type error, the
// cost limit) follows the rule's failure policy: closed (the default) blocks
// the call with code policy_error and a reason naming the rule and the error;
// open treats the rule as not matching. Evaluation never panics and never
// allows a call silently: whenever Before or After returns an error, the
// Decision it returns with it is a block (or a halt), so a host that ignores
// the error still fails closed.
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
)

// Engine decides tool calls against a PolicySet. It is safe for concurrent
// use; Swap replaces the set atomically.
type Engine struct {
	cfg config
	set atomic.Pointer[compile.PolicySet]

	// stored is the engine's side of its state store, nil without one
	// (fleet.go): the one place the state backend is chosen.
	stored *storedEngine
}

// New builds an Engine for set.
func New(set *compile.PolicySet, opts ...Option) (*Engine, error) {
	if set == nil {
		return nil, errors.New("eval.New: nil policy set")
	}
	cfg := config{now: time.Now, maxCounterKeys: DefaultMaxCounterKeys, maxWindowEvents: DefaultMaxWindowEvents,
		storeTimeout: DefaultStoreTimeout, storeRetries: DefaultStoreRetries}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	e := &Engine{cfg: cfg}
	if cfg.store != nil {
		_, copies := cfg.store.(state.WriteCopier)
		e.stored = &storedEngine{store: cfg.store, timeout: cfg.storeTimeout, retries: cfg.storeRetries, copies: copies}
	}
	e.set.Store(set)
	return e, nil
}

// PolicySet returns the set in force.
func (e *Engine) PolicySet() *compile.PolicySet { return e.set.Load() }

// Swap replaces the set in force. Calls already being decided finish with the
// set they started with; sessions keep their counters, matched by counter id
// (policy/name), and their remembered approvals.
func (e *Engine) Swap(set *compile.PolicySet) error {
	if set == nil {
		return errors.New("eval.Engine.Swap: nil policy set")
	}
	e.set.Store(set)
	return nil
}

// Session is one agent session: its counters, its turn, its remembered
// approvals. It is safe for concurrent use (hosts may run tools in parallel).
type Session struct {
	eng  *Engine
	id   string
	meta map[string]any

	// counting serializes the before-decisions that read and commit
	// before-counters, so that reading the counts, deciding and counting
	// the call are one step (countereval.go). It is taken before mu, never
	// while holding it.
	counting sync.Mutex

	mu   sync.Mutex
	turn uint64
	// halt is the decision that halted the turn, if one did (decide.go).
	halt     *Decision
	counters map[string]*counterState
	// book holds every approval that outlives its ask: the approver's
	// remembered answers, and the requests and grants of approvals a
	// person gives outside the approver (grants.go).
	book approvalBook
	// judged caches judges' answers by judge, rule and call digest
	// (judge.go); judgedOrder is their order, oldest first.
	judged      map[string]Judgment
	judgedOrder []string
	// refused remembers the calls refused before they ran, by call id
	// (calls.go).
	refused refusedCalls
	// facts are what earlier calls did, for later rules (facts.go); view
	// is the session variable made of meta and facts, nil until it is
	// needed again after a change of either.
	facts sessionFacts
	view  map[string]any
	// metaJS is the stored state's meta member (`,"meta":{…}`, empty when
	// meta holds the id alone), encoded from meta at the first commit
	// after meta changed and kept while metaKept is set: every assignment
	// of meta clears metaKept (metaMemberLocked). Like the session
	// variable, it is made from meta's values as they were then.
	metaJS   []byte
	metaKept bool
	// sat, when set, saturates counters lost to a tampered state (state.go).
	sat *saturation
	// tampered, when set, is why the handle was restored fail-closed
	// (Engine.RestoreTampered): its decisions are marked (markTampered).
	tampered string
	// stream is a host's record of a streamed answer (SessionState.Stream),
	// never changed in place: SetStream replaces it.
	stream json.RawMessage
	// be is where the session's state lives (backend.go), chosen when
	// the session is made; st is the same backend with a store, nil
	// without one (storesession.go).
	be backend
	st *storeSession
}

// NewSession starts a session. meta is the host's metadata (agent, user,
// mode, ...), visible to rules as `session`, with id added under "id".
func (e *Engine) NewSession(id string, meta map[string]any) *Session {
	m := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		m[k] = v
	}
	m["id"] = id
	s := &Session{eng: e, id: id, meta: m, turn: 1, counters: map[string]*counterState{}, book: approvalBook{remembered: map[string]bool{}}, be: localBackend{}}
	if e.stored != nil {
		s.st = &storeSession{}
		s.be = s.st
		s.bindEntries()
	}
	return s
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// StartTurn begins a new turn: turn-scoped counters reset and a halt of the
// previous turn is lifted. It is NextTurn without a deadline and with its
// error dropped (with a store, the turn then stays as it was).
func (s *Session) StartTurn() {
	_, _ = s.be.nextTurn(context.Background(), s)
}

// NextTurn begins a new turn, as StartTurn does, and with a store commits
// it: its error says the store could not be reached (the turn did not
// change, and a halt of the turn stays in force) or kept changing.
func (s *Session) NextTurn(ctx context.Context) (uint64, error) {
	return s.be.nextTurn(ctx, s)
}

// Sync reads the session's state from the store (a handle opened on a
// session another replica started; a handle opened without metadata takes
// the session's); without a store it does nothing.
func (s *Session) Sync(ctx context.Context) error { return s.be.sync(ctx, s) }

// Open starts the session in the store, or resumes it: a handle on a
// session another replica started takes its state (and, opened without
// metadata, its metadata), and a new session's state, its metadata with
// it, is written, so that every replica's handle on it counts its agent,
// repository and organisation alike from the first call. Without a store
// it does nothing.
func (s *Session) Open(ctx context.Context) error { return s.be.open(ctx, s) }

// Turn returns the number of the current turn, from 1.
func (s *Session) Turn() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// CallOption changes how one call is decided.
type CallOption func(*callConfig)

type callConfig struct {
	trace   bool
	explain *Explanation
}

// WithTrace records every rule considered in Decision.Trace.
func WithTrace() CallOption { return func(c *callConfig) { c.trace = true } }

// counterFor returns the state of a counter, resetting turn-scoped counts of
// an earlier turn. The caller holds s.mu.
func (s *Session) counterFor(c *compile.Counter) *counterState {
	if c.Decl.Scope.Shared() {
		// With a store, kept in the shared entry, which the decision holds
		// locked; without one, the session counts it as a session counter.
		if cs := s.be.sharedCounts(s, c); cs != nil {
			return cs
		}
	}
	cs, ok := s.counters[c.ID]
	if !ok {
		cs = newCounterState()
		cs.turn = s.turn
		s.counters[c.ID] = cs
	}
	if c.Decl.Scope == policy.ScopeTurn && cs.turn != s.turn {
		cs.clear()
		cs.turn = s.turn
	}
	return cs
}

func (s *Session) counterValue(c *compile.Counter, key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.counterFor(c)
	now := s.eng.cfg.now()
	if s.saturated(c, key, now) {
		return CounterCeiling
	}
	return cs.value(key, c.Decl.Window, now)
}

// Before decides a call before the tool runs.
func (s *Session) Before(ctx context.Context, call Call, opts ...CallOption) (Decision, error) {
	return s.decide(ctx, policy.PhaseBefore, call, nil, opts)
}

// After decides a call's result: counters update first, then after-phase
// rules run. An after-event whose call id (Call.ID) names a call that this
// session refused before it ran (block or halt, among the last
// MaxRefusedCalls refusals) is itself refused with code call_refused, naming
// the rule that refused the call: the tool should not have run, so its
// result is withheld and not counted. An ask is not a refusal (the host may
// have let the user approve it).
func (s *Session) After(ctx context.Context, call Call, res Result, opts ...CallOption) (Decision, error) {
	return s.decide(ctx, policy.PhaseAfter, call, &res, opts)
}

// decide decides one call and echoes its identity in the decision.
// EndTurn decides the end of the current turn: the rules with phase
// turn_end run with no call (tool, args, cwd and call.id are empty, there is
// no result) and read the turn's counters, each the sum of its counts over
// every key (counterTotal): a counter counting every call reads the calls
// of the turn (session-scoped ones, of the session). They report: allow or
// warn, allow when none matches; a halted turn's end is decided too, and no
// counter changes. The turn goes on until StartTurn.
func (s *Session) EndTurn(ctx context.Context, opts ...CallOption) (Decision, error) {
	return s.decide(ctx, policy.PhaseTurnEnd, Call{}, nil, opts)
}

func (s *Session) decide(ctx context.Context, phase policy.Phase, call Call, res *Result, opts []CallOption) (Decision, error) {
	start := s.sinkStart()
	ctx, _ = s.withNotes(ctx)
	set := s.eng.set.Load()
	d, err := s.be.decide(ctx, s, set, phase, call, res, nil, opts)
	d, err = s.finish(ctx, set, d, err, call, nil, start)
	if phase == policy.PhaseBefore {
		s.be.decided(s, call, d)
	}
	s.mu.Lock()
	note := s.tampered
	if note != "" && s.st != nil && !s.st.overwrite && !s.st.oneEvent {
		// A stored session's state that failed the store's check was
		// written over: its later decisions are not made on it (a handle
		// for one event, Engine.ResumeSession, marks all of its own).
		s.tampered = ""
	}
	s.mu.Unlock()
	if note != "" && phase != policy.PhaseTurnEnd {
		d = markTampered(d, note) // rule 19
	}
	return d, err
}

// decideLocal decides one event on the state the session holds.
func (s *Session) decideLocal(ctx context.Context, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, io *modelIO, opts []CallOption) (Decision, error) {
	// Options are rare on the hot path; without them nothing is allocated.
	var cc callConfig
	if len(opts) > 0 {
		c := new(callConfig)
		for _, o := range opts {
			o(c)
		}
		cc = *c
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if call.Tool == "" && phase.HasCall() {
		return refusal(phase, "", CodeInvalidCall, "the call has no tool name", nil), errors.New("eval: call without a tool name")
	}
	if h := s.be.fleetHalt(s); h != nil && phase != policy.PhaseTurnEnd {
		d := Decision{Phase: phase, Tool: call.Tool, Verdict: policy.Halt, Code: h.Code, Reason: h.Reason}
		explainHalted(cc.explain, d)
		return d, nil
	}
	if d, ok := s.halted(phase, call.Tool); ok && phase != policy.PhaseTurnEnd {
		explainHalted(cc.explain, d)
		return d, nil
	}
	if phase == policy.PhaseAfter {
		if d, ok := s.refusedBefore(call); ok {
			explainHalted(cc.explain, d)
			return d, nil
		}
	}
	// The verdict rules are in decide.go.
	ev := newEvaluation(ctx, s, set, phase, call, res)
	ev.io = io
	if ev.notes = notesOf(ctx); ev.notes != nil {
		ev.notes.restart()
	}
	defer ev.release()
	ev.obs = newObserver(ev, cc.trace, cc.explain)
	d, err := ev.run()
	s.haltTurn(d)
	s.noteLabels(ev.labelled, phase, call, d)
	ev.noteWrites(d)
	s.noteCall(phase, call, res, d)
	return d, err
}
