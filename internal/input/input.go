// Package input reads what `celguard eval` decides: one tool call as a JSON
// object, or a JSONL stream of turn_start, before and after events.
//
// The first JSON value on the input decides the mode. An object with an
// "event" key starts a stream: every value after it must be an event too.
// Any other object is a single call, and must be the only value on the
// input. Values are read one at a time, so a stream is decided as it
// arrives. Every error names the input and the line (and, for JSON syntax
// errors, the column) where it was found.
//
// A stream survives bad values: once the first event has been read, a value
// that is not a valid event is reported and skipped, and a line that is not
// valid JSON is skipped to its end; reading goes on with the next value.
package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
)

// Kind is what an event asks for.
type Kind int

// Event kinds.
const (
	TurnStart Kind = iota // a new turn starts: turn-scoped counters reset
	Before                // decide a call before the tool runs
	After                 // decide a call's result after the tool ran
	TurnEnd               // the turn ends: decide the turn_end rules
	Input                 // decide the messages about to be sent to the model
	Output                // decide the model's output before it is returned
)

// Mode is how the input is laid out.
type Mode int

// Modes.
const (
	ModeUnknown Mode = iota // nothing read yet
	ModeCall                // one call object
	ModeStream              // a stream of events
)

// Event is one thing to do, in input order.
type Event struct {
	Kind Kind
	// Line is the line the event's JSON value starts on, from 1.
	Line int
	// Call is the call to decide (Before and After).
	Call eval.Call
	// Result is the tool's result (After only).
	Result eval.Result
	// Messages are the model's input (Input only); Call carries its
	// call_id and agent.
	Messages []eval.Message
	// Output is the model's output (Output only).
	Output eval.ModelOutput
	// Session is the host's session metadata; only a single call carries it.
	Session map[string]any
}

// CodeInvalidInput is the code of every Error: a value that is not valid
// JSON, or not a valid call or event.
const CodeInvalidInput = "invalid_input"

// Error is a problem with the input, at a line (and column, when known).
type Error struct {
	Name string // the input's name, e.g. "stdin"
	Line int
	Col  int // 0 when unknown
	Msg  string
	// syntax marks a JSON syntax error, found at input offset offset.
	syntax bool
	offset int64
}

// Error renders the error as name:line:col: message, leaving out what is
// unknown.
func (e *Error) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.Name, e.Msg)
	case e.Col == 0:
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Name, e.Line, e.Col, e.Msg)
}

// Reader reads events from a JSON input.
type Reader struct {
	name string
	lt   *lineTracker
	dec  *json.Decoder
	// decBase is the input offset where dec started reading: a stream
	// that skipped a line of invalid JSON reads on with a new decoder.
	decBase int64
	mode    Mode
	done    bool
}

// NewReader reads events from r; name is what errors call the input.
func NewReader(r io.Reader, name string) *Reader {
	lt := &lineTracker{r: r, line: 1}
	return &Reader{name: name, lt: lt, dec: json.NewDecoder(lt)}
}

// Mode reports the input's mode, once the first event has been read.
func (r *Reader) Mode() Mode { return r.mode }

// Next returns the next event, or io.EOF after the last one. Any other error
// is an *Error. In a stream (Mode is ModeStream), the bad value (or, for
// invalid JSON, the rest of its line) is skipped and the next call reads on;
// otherwise the input is not read further: Next then returns io.EOF.
func (r *Reader) Next() (Event, error) {
	if r.done {
		return Event{}, io.EOF
	}
	raw, line, err := r.value()
	if errors.Is(err, io.EOF) {
		r.done = true
		if r.mode == ModeUnknown {
			return Event{}, &Error{Name: r.name, Msg: `no input: expected a call ({"tool": ..., "args": {...}}) or a JSONL stream of events ({"event": "before", ...})`}
		}
		return Event{}, io.EOF
	}
	if err != nil {
		r.done = r.mode != ModeStream || !r.resync(err)
		return Event{}, err
	}
	fields, err := r.object(raw, line)
	if err != nil {
		r.done = r.mode != ModeStream
		return Event{}, err
	}
	if r.mode == ModeUnknown {
		r.mode = ModeCall
		if _, ok := fields["event"]; ok {
			r.mode = ModeStream
		}
	}
	var ev Event
	if r.mode == ModeCall {
		ev, err = r.call(fields, line)
		if err == nil {
			err = r.expectEnd()
		}
	} else {
		ev, err = r.event(fields, line)
	}
	if err != nil {
		r.done = r.mode != ModeStream
		return Event{}, err
	}
	if r.mode == ModeCall {
		r.done = true
	}
	return ev, nil
}

// resync skips the rest of the line where a JSON syntax error was found and
// starts a new decoder after it. It reports false when err is not a syntax
// error, or no line follows.
func (r *Reader) resync(err error) bool {
	var e *Error
	if !errors.As(err, &e) || !e.syntax {
		return false
	}
	nl := r.lt.nextNewline(e.offset)
	if nl < 0 {
		return false
	}
	r.lt.restartAt(nl + 1)
	r.dec = json.NewDecoder(r.lt)
	r.decBase = nl + 1
	return true
}

// value reads the next JSON value and the line it starts on.
func (r *Reader) value() (json.RawMessage, int, error) {
	prevEnd := r.decBase + r.dec.InputOffset()
	var raw json.RawMessage
	err := r.dec.Decode(&raw)
	if errors.Is(err, io.EOF) {
		return nil, 0, io.EOF
	}
	start := r.lt.skipSpace(prevEnd)
	line, _ := r.lt.position(start)
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := r.decBase + se.Offset - 1
			l, c := r.lt.position(off)
			return nil, 0, &Error{Name: r.name, Line: l, Col: c, Msg: "invalid JSON: " + se.Error(), syntax: true, offset: max(off, 0)}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, &Error{Name: r.name, Line: line, Msg: "invalid JSON: the value is cut off at the end of the input"}
		}
		return nil, 0, &Error{Name: r.name, Line: line, Msg: "cannot read: " + err.Error()}
	}
	r.lt.forget(start)
	return raw, line, nil
}

// expectEnd checks that nothing follows a single call.
func (r *Reader) expectEnd() error {
	_, line, err := r.value()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return &Error{Name: r.name, Line: line, Msg: `a single call must be the only value on the input; to decide several calls, send a JSONL stream of events, one {"event": "before", ...} per line`}
}

func (r *Reader) object(raw json.RawMessage, line int) (map[string]json.RawMessage, error) {
	if k := jsonkind.OfRaw(raw); k != "an object" {
		return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("expected a JSON object (a call or an event), found %s", k)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, &Error{Name: r.name, Line: line, Msg: "invalid JSON: " + err.Error()}
	}
	return fields, nil
}

var (
	callFields   = []string{"tool", "args", "cwd", "call_id", "agent", "session", "result"}
	beforeFields = []string{"event", "tool", "args", "cwd", "call_id", "agent"}
	afterFields  = []string{"event", "tool", "args", "cwd", "call_id", "agent", "result"}
)

// call reads a single call: before phase, or after when it has a result.
func (r *Reader) call(fields map[string]json.RawMessage, line int) (Event, error) {
	if err := r.known(fields, line, callFields, "a call"); err != nil {
		return Event{}, err
	}
	ev := Event{Kind: Before, Line: line}
	if err := r.callFields(&ev, fields, line); err != nil {
		return Event{}, err
	}
	if raw, ok := present(fields, "session"); ok {
		if err := r.decodeObject(raw, line, "session", &ev.Session); err != nil {
			return Event{}, err
		}
	}
	if raw, ok := present(fields, "result"); ok {
		ev.Kind = After
		if err := r.result(raw, line, &ev.Result); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

// event reads one event of a stream.
func (r *Reader) event(fields map[string]json.RawMessage, line int) (Event, error) {
	raw, ok := present(fields, "event")
	if !ok {
		return Event{}, &Error{Name: r.name, Line: line, Msg: `missing "event": every value of a stream is an event (turn_start, before, after, turn_end, input or output)`}
	}
	var name string
	if jsonkind.OfRaw(raw) != "a string" || json.Unmarshal(raw, &name) != nil {
		return Event{}, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("event must be a string, not %s", jsonkind.OfRaw(raw))}
	}
	ev := Event{Line: line}
	switch name {
	case "turn_start":
		ev.Kind = TurnStart
		return ev, r.known(fields, line, []string{"event"}, "a turn_start event")
	case "turn_end":
		ev.Kind = TurnEnd
		return ev, r.known(fields, line, []string{"event"}, "a turn_end event")
	case "input", "output":
		return r.modelEvent(name, fields, line)
	case "before":
		ev.Kind = Before
		if _, ok := fields["result"]; ok {
			return Event{}, &Error{Name: r.name, Line: line, Msg: `a before event takes no "result"; send the result in an after event`}
		}
		if err := r.known(fields, line, beforeFields, "a before event"); err != nil {
			return Event{}, err
		}
	case "after":
		ev.Kind = After
		if err := r.known(fields, line, afterFields, "an after event"); err != nil {
			return Event{}, err
		}
		raw, ok := present(fields, "result")
		if !ok {
			return Event{}, &Error{Name: r.name, Line: line, Msg: `an after event needs a "result", e.g. {"is_error": false, "content": "..."}`}
		}
		if err := r.result(raw, line, &ev.Result); err != nil {
			return Event{}, err
		}
	default:
		return Event{}, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("event must be turn_start, before, after, turn_end, input or output, not %q", name)}
	}
	return ev, r.callFields(&ev, fields, line)
}

// callFields reads tool, args, cwd, call_id and agent.
func (r *Reader) callFields(ev *Event, fields map[string]json.RawMessage, line int) error {
	raw, ok := present(fields, "tool")
	if !ok {
		return &Error{Name: r.name, Line: line, Msg: `missing "tool": the name of the tool being called`}
	}
	if jsonkind.OfRaw(raw) != "a string" || json.Unmarshal(raw, &ev.Call.Tool) != nil {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("tool must be a string, not %s", jsonkind.OfRaw(raw))}
	}
	if ev.Call.Tool == "" {
		return &Error{Name: r.name, Line: line, Msg: "tool must not be empty"}
	}
	if raw, ok := present(fields, "args"); ok {
		if err := r.decodeObject(raw, line, "args", &ev.Call.Args); err != nil {
			return err
		}
	}
	if raw, ok := present(fields, "cwd"); ok {
		if jsonkind.OfRaw(raw) != "a string" || json.Unmarshal(raw, &ev.Call.Cwd) != nil {
			return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("cwd must be a string, not %s", jsonkind.OfRaw(raw))}
		}
	}
	return r.identity(&ev.Call, fields, line)
}

func (r *Reader) result(raw json.RawMessage, line int, res *eval.Result) error {
	var m map[string]json.RawMessage
	if jsonkind.OfRaw(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("result must be an object, not %s", jsonkind.OfRaw(raw))}
	}
	if v, ok := m["is_error"]; ok && jsonkind.OfRaw(v) != "a boolean" {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("result.is_error must be a boolean, not %s", jsonkind.OfRaw(v))}
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return &Error{Name: r.name, Line: line, Msg: "invalid result: " + err.Error()}
	}
	return nil
}

func (r *Reader) decodeObject(raw json.RawMessage, line int, field string, dst *map[string]any) error {
	if jsonkind.OfRaw(raw) != "an object" || json.Unmarshal(raw, dst) != nil {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("%s must be an object, not %s", field, jsonkind.OfRaw(raw))}
	}
	return nil
}

// known reports the fields that what does not take.
func (r *Reader) known(fields map[string]json.RawMessage, line int, allowed []string, what string) error {
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	noun := "field"
	if len(unknown) > 1 {
		noun = "fields"
	}
	takes := make([]string, len(allowed))
	for i, a := range allowed {
		takes[i] = fmt.Sprintf("%q", a)
	}
	return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("unknown %s %s in %s (it takes %s)", noun, strings.Join(unknown, ", "), what, strings.Join(takes, ", "))}
}

// present returns a field that is there and not null.
func present(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	raw, ok := fields[name]
	if !ok || jsonkind.OfRaw(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// lineTracker keeps the bytes the decoder has read but not yet accounted
// for, so that offsets map to lines without holding the whole input.
type lineTracker struct {
	r    io.Reader
	buf  []byte // input from offset base on
	base int64
	line int // the line of offset base
	col  int // the 0-based column of offset base
}

func (t *lineTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

// skipSpace returns the offset of the first non-space byte at or after off.
func (t *lineTracker) skipSpace(off int64) int64 {
	for i := off - t.base; i >= 0 && i < int64(len(t.buf)); i++ {
		switch t.buf[i] {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return t.base + i
	}
	return t.base + int64(len(t.buf))
}

// position returns the 1-based line and column of offset off (off >= base).
func (t *lineTracker) position(off int64) (line, col int) {
	line, col = t.line, t.col
	end := min(max(off-t.base, 0), int64(len(t.buf)))
	for _, c := range t.buf[:end] {
		if c == '\n' {
			line, col = line+1, 0
		} else {
			col++
		}
	}
	return line, col + 1
}

// nextNewline returns the offset of the first newline at or after off,
// reading on as needed, or -1 when the input ends first.
func (t *lineTracker) nextNewline(off int64) int64 {
	for i := max(off-t.base, 0); ; i++ {
		for i >= int64(len(t.buf)) {
			var chunk [4096]byte
			n, err := t.Read(chunk[:])
			if n == 0 && err != nil {
				return -1
			}
		}
		if t.buf[i] == '\n' {
			return t.base + i
		}
	}
}

// restartAt drops what was read before off and makes what was read from
// off on the next bytes Read returns again, for a new decoder.
func (t *lineTracker) restartAt(off int64) {
	t.forget(off)
	rest := slices.Clone(t.buf)
	t.buf = t.buf[:0]
	t.r = io.MultiReader(bytes.NewReader(rest), t.r)
}

// forget drops the bytes before off.
func (t *lineTracker) forget(off int64) {
	l, c := t.position(off)
	end := min(max(off-t.base, 0), int64(len(t.buf)))
	t.buf = t.buf[end:]
	t.base += end
	t.line, t.col = l, c-1
}
