package replay

import (
	"fmt"
	"time"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
)

// Kind is what an Event asks the engine to decide.
type Kind uint8

// Event kinds, in the order a turn goes through them.
const (
	// TurnStart starts a turn: a user's prompt (Messages, when recorded).
	// Turn-scoped counters reset and a halt of the previous turn is lifted.
	TurnStart Kind = iota + 1
	// Before is a call about to run (Call).
	Before
	// After is a call that ran, with its result (Call, Result), or, with
	// NotRun set, a call the record shows did not run.
	After
	// TurnEnd is the agent's turn ending: the turn_end rules decide.
	TurnEnd
	// Input is a request about to be sent to the model (Messages).
	Input
	// Output is the model's output (Output).
	Output
	// Tools is a tool shown to a client (the MCP proxy's tools/list):
	// Call.Tool names it.
	Tools
	// Resource is a read of an MCP resource or prompt (Resource).
	Resource
)

var kindNames = [...]string{"", "turn_start", "before", "after", "turn_end", "input", "output", "tools", "resource"}

// String names the kind as the event stream does.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Event is one thing a record says happened, in record order.
type Event struct {
	Kind Kind
	// Pos is the record's file and line.
	Pos Pos
	// Host is who recorded it: claude-code, codex, gemini (the hosts'
	// names in hooks' host table), or the host a decision log names; ""
	// when the record does not say (the eval event stream).
	Host string
	// Session is the recorded session's id; every session is decided in a
	// fresh eval.Session of its own.
	Session string
	// Time is when the record says it happened; zero when it does not
	// (the replay clock then stays where it was).
	Time time.Time
	// Call is the call (Before and After), as the host's hook would have
	// sent it: the tool's name and arguments, the working directory and
	// the call id.
	Call eval.Call
	// Result is the tool's result (After).
	Result eval.Result
	// Messages are the user's prompt (TurnStart) or the model's input
	// (Input).
	Messages []eval.Message
	// Output is the model's output (Output).
	Output *eval.ModelOutput
	// Resource is the resource or prompt read (Resource).
	Resource *eval.Resource
	// NotRun, on an After event, is set when the record shows the call
	// did not run (a hook or the user refused it): the refusal's text.
	// The engine does not decide it (there is no result), and the report
	// counts the call as refused live.
	NotRun string
	// Live is the decision the decision log recorded for this event (the
	// decision log reader only): what celguard decided when it happened.
	Live *decisionlog.Record
}

// Pos is where a record is: its file and line (from 1).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// String renders the position as file:line.
func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Stable codes of the errors readers return.
const (
	// CodeInvalidJSON: the line is not valid JSON (a truncated or
	// interleaved record).
	CodeInvalidJSON = "replay_invalid_json"
	// CodeUnknownRecord: the line is JSON, but not a record the reader
	// knows (a new record type of a new host version).
	CodeUnknownRecord = "replay_unknown_record"
	// CodeInvalidRecord: a known record whose fields are not what the
	// reader expects (a string where an object should be, a call with no
	// name).
	CodeInvalidRecord = "replay_invalid_record"
	// CodeRecordTooLong: the line is longer than MaxRecord; it is skipped
	// to its end.
	CodeRecordTooLong = "replay_record_too_long"
	// CodeUnknownFormat: the file is in none of the formats replay reads.
	CodeUnknownFormat = "replay_unknown_format"
	// CodeUnreadable: the file cannot be read.
	CodeUnreadable = "replay_unreadable"
)

// Error is a record a reader cannot read, at its file:line, with a stable
// code. Reading goes on with the next record.
type Error struct {
	Pos
	Code string `json:"code"`
	Msg  string `json:"message"`
}

// Error renders the error as file:line: code: message.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %s", e.Pos, e.Code, e.Msg) }

// Reader reads one file's events in record order.
type Reader interface {
	// Next returns the next event, or io.EOF after the last one. An *Error
	// is a record it could not read; the next call reads on after it. Any
	// other error ends the file.
	Next() (Event, error)
}
