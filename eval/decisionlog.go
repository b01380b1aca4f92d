package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/celguard/celguard/compile"
)

// DecisionEvent is one decision as the engine made it, with what it
// decided on, as a DecisionSink receives it. Nothing in it is masked:
// package decisionlog makes the masked record the decision log writes
// (decisionlog.NewRecord), and a sink that keeps or sends anything should
// do the same.
type DecisionEvent struct {
	// Decision is the decision, its audit record filled.
	Decision Decision
	// Call is the call decided, as the agent asked for it; empty at a
	// turn's end and for the model's input and output.
	Call Call
	// Messages and Output are the model's input or output, in those
	// phases.
	Messages []Message
	Output   *ModelOutput
	// Resource is the read, in the resource phase.
	Resource *Resource
	// LogMasks are the decision_log.mask entries of the trusted policies
	// of the set that decided.
	LogMasks []compile.LogMask
	// Layer is the layer of the deciding rule's policy (policy.Layer's
	// name: builtin, user, project, explicit, registered, admin); "" when
	// no rule decided (the default verdict, a code the engine made).
	Layer string
	// Start is when the engine began deciding (the sink's clock, not the
	// engine's WithClock); the decision took Now - Start. Zero when
	// unknown.
	Start time.Time
	// Counters are the counters the decision's rules read and the values
	// they read, in the order first read: every counter of each policy
	// whose rules read counters (a rule reads its policy's counters as
	// one map), at most MaxCountersRead; CountersOmitted counts the
	// others. Nil when no rule read a counter. Keys are unmasked (the
	// decision log masks them).
	Counters        []CounterRead
	CountersOmitted int
	// Commits are the decision's commits to the state store (WithStore),
	// in order: one, or more when another replica changed the state
	// (conflict) and the decision ran again. Nil without a store.
	Commits []StoreCommit
	// JudgeStart and JudgeEnd are when the deciding rule's judge was
	// asked and answered (Decision.Judge); zero when it was not asked
	// (no judge, or its answer was cached in the session).
	JudgeStart, JudgeEnd time.Time
}

// DecisionSink receives every decision of an engine built with
// WithDecisionSink, once the decision is made (decisionlog.FileSink is the
// decision log's). It is called
// from every session at once, so it must be safe for concurrent use. An
// error is never dropped: the engine hands it to the option's onError, or
// refuses the decision (decision_log_failed).
type DecisionSink interface {
	WriteDecision(ctx context.Context, ev *DecisionEvent) error
}

// TransientSink is a DecisionSink that keeps nothing of the event it is
// given once WriteDecision returns (it copies what it keeps, as a metric
// counts): the engine then writes every decision's event into memory it
// reuses, instead of a new event per decision. A sink that keeps an event
// (a console's feed, a log written later) is not transient.
type TransientSink interface {
	DecisionSink
	// Transient reports whether the sink keeps nothing of an event after
	// WriteDecision returns; a sink made of others (a tee) is transient
	// when every one of them is.
	Transient() bool
}

// Tee is a DecisionSink that writes each decision to every sink in turn;
// the first failure fails the write (and so refuses the decision). It is
// a TransientSink, transient when every one of its sinks is.
type Tee []DecisionSink

// WriteDecision implements DecisionSink.
func (t Tee) WriteDecision(ctx context.Context, ev *DecisionEvent) error {
	for _, s := range t {
		if err := s.WriteDecision(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// Transient implements TransientSink: the tee keeps nothing of an event
// when none of its sinks does.
func (t Tee) Transient() bool {
	for _, s := range t {
		if ts, ok := s.(TransientSink); !ok || !ts.Transient() {
			return false
		}
	}
	return true
}

// transientEvents are events free for reuse by sinks that keep none.
var transientEvents = sync.Pool{New: func() any { return new(DecisionEvent) }}

// CodeDecisionLogFailed is the code of a decision refused because the
// decision log could not record it (WithDecisionSink without onError).
const CodeDecisionLogFailed = "decision_log_failed"

// WithDecisionSink writes every decision to sink as a DecisionEvent, and
// implies WithDecisionMetadata (a record always has its id, time, digest
// and session). When the sink fails, onError is called with the error and
// the decision stands; with a nil onError the decision fails closed: it
// becomes a block with code decision_log_failed, and Before (After,
// EndTurn, Input, Output) returns the error with it. Records are written
// before the decision is returned, so a host never acts on a decision the
// log lacks.
func WithDecisionSink(sink DecisionSink, onError func(error)) Option {
	return func(c *config) error {
		if sink == nil {
			return errors.New("eval.WithDecisionSink: nil sink")
		}
		c.sink, c.sinkError = sink, onError
		if c.auditIDs == nil {
			c.auditIDs = randomID
		}
		return nil
	}
}

// logDecision writes d to the engine's sink, if any: the decision of event
// (call, and io in the input and output phases) by set.
func (s *Session) logDecision(ctx context.Context, set *compile.PolicySet, d Decision, call Call, io *modelIO, start time.Time) (Decision, error) {
	sink := s.eng.cfg.sink
	if sink == nil || quietInListing(ctx, d) {
		return d, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var ev *DecisionEvent
	if ts, ok := sink.(TransientSink); ok && ts.Transient() {
		ev = transientEvents.Get().(*DecisionEvent)
		defer func() {
			*ev = DecisionEvent{} // nothing of this decision is kept
			transientEvents.Put(ev)
		}()
	} else {
		ev = new(DecisionEvent)
	}
	ev.Decision, ev.Call, ev.Start = d, call, start
	notesOf(ctx).fill(ev)
	if io != nil {
		ev.Messages, ev.Output, ev.Resource = io.messages, io.output, io.resource
	}
	if set != nil {
		ev.LogMasks = set.LogMasks()
		if r, ok := set.Rule(d.RuleID); ok && d.RuleID != "" {
			ev.Layer = r.Policy.Layer.String()
		}
	}
	err := sink.WriteDecision(ctx, ev)
	if err == nil {
		return d, nil
	}
	if s.eng.cfg.sinkError != nil {
		s.eng.cfg.sinkError(err)
		return d, nil
	}
	r := refusal(d.Phase, d.Tool, CodeDecisionLogFailed, "the decision could not be written to the decision log: "+err.Error(), nil)
	r.CallID, r.Agent, r.Error = d.CallID, d.Agent, err.Error()
	r.DecisionID, r.Time, r.PolicyDigest, r.SessionID = d.DecisionID, d.Time, d.PolicyDigest, d.SessionID
	return r, fmt.Errorf("eval: decision log: %w", err)
}

// finish completes decision d (and its error err) of call (and io, in the
// input and output phases) by set: it echoes the call's identity, fills the
// audit record and writes the decision log. start is when deciding began
// (zero when the engine has no sink: see sinkStart).
func (s *Session) finish(ctx context.Context, set *compile.PolicySet, d Decision, err error, call Call, io *modelIO, start time.Time) (Decision, error) {
	d.CallID, d.Agent = call.ID, call.Agent
	d = s.auditWith(d, set)
	d, lerr := s.logDecision(ctx, set, d, call, io, start)
	if err == nil {
		err = lerr
	}
	return d, err
}

// auditWith fills d's audit record (WithDecisionMetadata), set having
// decided.
func (s *Session) auditWith(d Decision, set *compile.PolicySet) Decision {
	if next := s.eng.cfg.auditIDs; next != nil {
		d.DecisionID, d.Time, d.PolicyDigest, d.SessionID = next(), s.eng.cfg.now().UTC(), set.Digest(), s.id
		d.Bundles = set.Bundles()
	}
	return d
}

// sinkStart is when a decision begins, for its DecisionEvent: read only
// when the engine has a sink, so that an engine without one reads no clock.
func (s *Session) sinkStart() time.Time {
	if s.eng.cfg.sink == nil {
		return time.Time{}
	}
	return time.Now()
}
