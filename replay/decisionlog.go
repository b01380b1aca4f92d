package replay

import (
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// newDecisionLogReader reads celguard's decision log (decisionlog.Record,
// one per line; docs/decision-log.md): each record is the event it
// decided, with the record as Live. The log keeps what it needs for an
// audit, not a replay: the arguments are masked as they were logged (a
// rule that reads a masked argument sees "[MASKED]"), an after record
// carries no result (the engine decides it with an empty one), there is
// no working directory, and turn starts are not logged: a session's turn
// ends at its turn_end record and the next record of the session starts
// a new one. A tools record (the MCP proxy's tools/list) keeps the
// tool's name, not its description or schema. Records of many sessions
// may interleave.
func newDecisionLogReader(l *lines) *lineReader {
	r := &lineReader{l: l}
	ended := map[string]bool{} // sessions whose turn ended
	r.decode = func(b []byte, line int) error {
		var rec decisionlog.Record
		if e := l.object(b, line, &rec); e != nil {
			return e
		}
		if rec.DecisionID == "" && rec.SessionID == "" {
			return l.errorf(line, CodeUnknownRecord, "not a decision record: no decision_id or session_id")
		}
		ev := Event{Pos: Pos{l.name, line}, Session: rec.SessionID, Time: rec.Time, Live: &rec,
			Call: eval.Call{Tool: rec.Tool, Args: rec.Args, ID: rec.CallID, Agent: rec.Agent}}
		if rec.Who != nil {
			ev.Host = rec.Who.AgentHost
		}
		switch rec.Phase {
		case policy.PhaseBefore:
			ev.Kind = Before
		case policy.PhaseAfter:
			ev.Kind = After
		case policy.PhaseTurnEnd:
			ev.Kind = TurnEnd
		case policy.PhaseInput:
			ev.Kind, ev.Messages = Input, rec.Messages
		case policy.PhaseOutput:
			ev.Kind, ev.Output = Output, rec.Output
			if ev.Output == nil {
				ev.Output = &eval.ModelOutput{}
			}
		case policy.PhaseTools:
			// The log keeps the tool's name, not its description or schema.
			ev.Kind = Tools
		case policy.PhaseResource:
			if rec.Resource == nil {
				return l.errorf(line, CodeInvalidRecord, "a resource record without a resource")
			}
			ev.Kind, ev.Resource = Resource, rec.Resource
		default:
			return l.errorf(line, CodeInvalidRecord, "unknown phase %q", rec.Phase)
		}
		if (ev.Kind == Before || ev.Kind == After) && rec.Tool == "" {
			return l.errorf(line, CodeInvalidRecord, "a %s record without a tool", rec.Phase)
		}
		if ended[rec.SessionID] {
			delete(ended, rec.SessionID)
			r.q.push(Event{Kind: TurnStart, Pos: ev.Pos, Host: ev.Host, Session: ev.Session, Time: ev.Time})
		}
		if ev.Kind == TurnEnd {
			ended[rec.SessionID] = true
		}
		r.q.push(ev)
		return nil
	}
	return r
}
