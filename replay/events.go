package replay

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/celguard/celguard/internal/input"
)

// eventsReader reads the JSONL event stream `celguard eval` reads
// (internal/input, the same parser): turn_start, before, after, turn_end,
// input and output events, one per line. The stream is one session, named
// after the file, as eval decides a stream in one session; it records no
// time.
type eventsReader struct {
	l   *lines
	eof bool
}

func newEventsReader(l *lines) *eventsReader { return &eventsReader{l: l} }

// Next implements Reader.
func (r *eventsReader) Next() (Event, error) {
	if r.eof {
		return Event{}, io.EOF
	}
	b, line, err := r.l.next()
	if errors.Is(err, io.EOF) {
		r.eof = true
		return Event{}, io.EOF
	}
	if err != nil {
		return Event{}, err
	}
	if bytes.TrimSpace(b)[0] != '{' || !bytes.Contains(b, []byte(`"event"`)) {
		return Event{}, r.l.errorf(line, CodeUnknownRecord, `expected an event ({"event": "before", ...}): a stream holds one event per line`)
	}
	in := input.NewReader(bytes.NewReader(b), r.l.name)
	iev, err := in.Next()
	if err != nil {
		var ie *input.Error
		if errors.As(err, &ie) {
			code := CodeInvalidRecord
			if strings.HasPrefix(ie.Msg, "invalid JSON") {
				code = CodeInvalidJSON
			}
			return Event{}, r.l.errorf(line, code, "%s", ie.Msg)
		}
		return Event{}, r.l.errorf(line, CodeInvalidRecord, "%v", err)
	}
	if _, err := in.Next(); !errors.Is(err, io.EOF) {
		return Event{}, r.l.errorf(line, CodeInvalidRecord, "more than one event on the line")
	}
	ev := Event{Pos: Pos{r.l.name, line}, Session: r.l.name, Call: iev.Call, Result: iev.Result, Messages: iev.Messages}
	switch iev.Kind {
	case input.TurnStart:
		ev.Kind = TurnStart
	case input.Before:
		ev.Kind = Before
	case input.After:
		ev.Kind = After
	case input.TurnEnd:
		ev.Kind = TurnEnd
	case input.Input:
		ev.Kind = Input
	case input.Output:
		ev.Kind = Output
		out := iev.Output
		ev.Output = &out
	}
	return ev, nil
}
