package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
)

// Engine decides recorded events: a policy set's engine built by the
// composition root for replay. Its clock is the record's (each event's
// Time; the last one's when an event has none; 1970-01-01 before the
// first) and its decision ids are derived from the record's file:line, so
// the same records and policies give the same decisions, byte for byte.
// An Engine replays one file at a time: Replay is not safe for
// concurrent use.
type Engine struct {
	guard *celguard.Guard
	now   time.Time
	pos   Pos
	seq   int // decisions made at pos
}

// NewEngine builds cfg's engine for replay with cfg.Load. Whatever cfg
// says, the engine keeps its state in memory (a fresh session per recorded
// session), writes no decision log and no telemetry, asks no judge, leaves
// every ask as an ask (celguard.DeferAsks) and records no approval
// request: a replay changes nothing outside itself. cfg's policies,
// Monitor, compile and engine options are kept.
func NewEngine(ctx context.Context, cfg celguard.Config) (*Engine, error) {
	e := &Engine{now: time.Unix(0, 0).UTC()}
	cfg.DecisionLog, cfg.DecisionSink, cfg.Telemetry, cfg.Store = nil, nil, nil, nil
	cfg.JudgeFiles = []string{}
	cfg.Approver, cfg.ApprovalRequests, cfg.HostFS = celguard.DeferAsks, false, false
	cfg.DecisionMetadata = true
	cfg.EngineOptions = append(slices.Clone(cfg.EngineOptions),
		eval.WithClock(func() time.Time { return e.now }),
		eval.WithDecisionIDs(e.nextID))
	g, err := cfg.Load(ctx)
	if err != nil {
		return nil, err
	}
	e.guard = g
	return e, nil
}

// Close releases the engine.
func (e *Engine) Close() error { return e.guard.Close() }

// PolicySet is the set the engine decides with.
func (e *Engine) PolicySet() *compile.PolicySet { return e.guard.Engine().PolicySet() }

// Guard is the engine's guard, as the composition root built it.
func (e *Engine) Guard() *celguard.Guard { return e.guard }

// nextID is the decision id of the next decision at e.pos: the first 32
// hex digits of the SHA-256 of file:line#n.
func (e *Engine) nextID() string {
	e.seq++
	sum := sha256.Sum256([]byte(e.pos.String() + "#" + strconv.Itoa(e.seq)))
	return hex.EncodeToString(sum[:16])
}

// Outcome is one event of a file, decided.
type Outcome struct {
	// Event is the event as the reader read it.
	Event Event
	// Decided says the engine decided it: false for a turn start and for
	// an after event whose call did not run (Event.NotRun), and when Err
	// or ReadErr is set.
	Decided bool
	// Decision is the engine's decision, when Decided.
	Decision eval.Decision
	// Err is the engine's error deciding the event (the decision is then
	// the engine's fail-closed one, and Decided is true).
	Err error
	// ReadErr is a record the reader could not read; Event is then empty
	// but for its Pos.
	ReadErr *Error
}

// Record is what the decision log would write of o's decision: the
// call's arguments (or the messages, or the output) masked by the
// engine's trusted policies' decision_log.mask entries and the secret
// patterns, as decisionlog.NewRecord masks them. Every output of replay
// shows calls through it.
func (e *Engine) Record(o *Outcome) *decisionlog.Record {
	ev := &eval.DecisionEvent{Decision: o.Decision, Call: o.Event.Call, Messages: o.Event.Messages, Output: o.Event.Output, Resource: o.Event.Resource,
		LogMasks: e.PolicySet().LogMasks()}
	if !o.Decided {
		ev.Decision.Tool, ev.Decision.CallID, ev.Decision.SessionID = o.Event.Call.Tool, o.Event.Call.ID, o.Event.Session
	}
	return decisionlog.NewRecord(ev)
}

// Replay decides the events of r in order, every recorded session in a
// fresh session of its own, and calls fn with each outcome (a record r
// could not read included, as ReadErr). It stops at fn's first error, at
// an error of r that is not an *Error, or when ctx ends, and returns that
// error; at the end of r it returns nil.
func (e *Engine) Replay(ctx context.Context, r Reader, fn func(*Outcome) error) error {
	sessions := map[string]*eval.Session{}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var re *Error
			if !errors.As(err, &re) {
				return err
			}
			if err := fn(&Outcome{Event: Event{Pos: re.Pos}, ReadErr: re}); err != nil {
				return err
			}
			continue
		}
		o, err := e.decide(ctx, sessions, ev)
		if err != nil {
			return err
		}
		if err := fn(&o); err != nil {
			return err
		}
	}
}

// decide decides one event in its recorded session's session (a fresh
// one the first time the session appears in sessions).
func (e *Engine) decide(ctx context.Context, sessions map[string]*eval.Session, ev Event) (Outcome, error) {
	o := Outcome{Event: ev}
	sess := sessions[ev.Session]
	if sess == nil {
		var meta map[string]any
		if ev.Host != "" {
			meta = map[string]any{"host": ev.Host}
		}
		sess = e.guard.NewSession(ev.Session, meta)
		sessions[ev.Session] = sess
	}
	if !ev.Time.IsZero() {
		e.now = ev.Time.UTC()
	}
	if ev.Pos != e.pos {
		e.pos, e.seq = ev.Pos, 0
	}
	switch ev.Kind {
	case TurnStart:
		sess.StartTurn()
		if len(ev.Messages) > 0 {
			// As the hooks decide a prompt: the input rules, on it.
			o.Decision, o.Err = sess.Input(ctx, eval.Input{Messages: ev.Messages})
			o.Decided = true
		}
	case Before:
		o.Decision, o.Err = sess.Before(ctx, ev.Call)
		o.Decided = true
	case After:
		if ev.NotRun == "" {
			o.Decision, o.Err = sess.After(ctx, ev.Call, ev.Result)
			o.Decided = true
		}
	case TurnEnd:
		o.Decision, o.Err = sess.EndTurn(ctx)
		o.Decided = true
	case Input:
		o.Decision, o.Err = sess.Input(ctx, eval.Input{Messages: ev.Messages, ID: ev.Call.ID, Agent: ev.Call.Agent})
		o.Decided = true
	case Output:
		out := eval.Output{ID: ev.Call.ID, Agent: ev.Call.Agent}
		if ev.Output != nil {
			out.Text, out.Content = ev.Output.Text, ev.Output.Content
		}
		o.Decision, o.Err = sess.Output(ctx, out)
		o.Decided = true
	case Tools:
		o.Decision, o.Err = sess.Tools(ctx, eval.ToolDefinition{Tool: ev.Call.Tool, Name: ev.Call.Tool, Agent: ev.Call.Agent})
		o.Decided = true
	case Resource:
		res := eval.Resource{}
		if ev.Resource != nil {
			res = *ev.Resource
		}
		o.Decision, o.Err = sess.Resource(ctx, res)
		o.Decided = true
	default:
		return o, fmt.Errorf("%s: an event of unknown kind %v", ev.Pos, ev.Kind)
	}
	return o, nil
}
