package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxRecord bounds one line of a record file, in bytes. A longer line is
// an *Error (CodeRecordTooLong) and is skipped to its end, never held in
// memory whole.
var MaxRecord = 64 << 20

// lines reads a file one line at a time, each at most MaxRecord bytes.
type lines struct {
	name string
	br   *bufio.Reader
	line int    // the number of the last line returned
	buf  []byte // the last line, reused
	// pushed is a line given back by unread, returned again by next.
	pushed bool
}

func newLines(name string, r io.Reader) *lines {
	return &lines{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its newline (and carriage return),
// the number of that line, io.EOF at the end, or an *Error for a line over
// MaxRecord (skipped). Blank lines are skipped.
func (l *lines) next() ([]byte, int, error) {
	if l.pushed {
		l.pushed = false
		return l.buf, l.line, nil
	}
	for {
		l.buf = l.buf[:0]
		long := false
		var err error
		for {
			var chunk []byte
			chunk, err = l.br.ReadSlice('\n')
			if !long {
				if len(l.buf)+len(chunk) > MaxRecord {
					long = true
					l.buf = l.buf[:0]
				} else {
					l.buf = append(l.buf, chunk...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		if len(l.buf) == 0 && !long && errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		l.line++
		if long {
			return nil, l.line, &Error{Pos: Pos{l.name, l.line}, Code: CodeRecordTooLong, Msg: fmt.Sprintf("the line is longer than %d bytes; skipped", MaxRecord)}
		}
		b := bytes.TrimRight(l.buf, "\r\n")
		if len(bytes.TrimSpace(b)) == 0 {
			if errors.Is(err, io.EOF) {
				return nil, 0, io.EOF
			}
			continue
		}
		return b, l.line, nil
	}
}

// unread gives the last line back to the next call of next.
func (l *lines) unread() { l.pushed = true }

// errorf is an *Error at a line of the file.
func (l *lines) errorf(line int, code, format string, args ...any) *Error {
	return &Error{Pos: Pos{l.name, line}, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// object decodes a line as one JSON object into v; a line that is not one
// is a CodeInvalidJSON error.
func (l *lines) object(b []byte, line int, v any) *Error {
	if len(b) == 0 || b[0] != '{' {
		return l.errorf(line, CodeInvalidJSON, "expected a JSON object on the line")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return l.errorf(line, CodeInvalidJSON, "invalid JSON at byte %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return l.errorf(line, CodeInvalidRecord, "%s must be %s, not a JSON %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
		default:
			return l.errorf(line, CodeInvalidRecord, "%v", err)
		}
	}
	return nil
}

// jsonType names a Go kind as a JSON type.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "float64", "int", "int64":
		return "a number"
	}
	return kind
}

// queue holds the events a record gave that Next has not returned yet: a
// record may hold several calls (Claude Code's assistant message with
// several tool_use blocks).
type queue struct {
	evs  []Event
	head int
}

func (q *queue) push(ev Event) { q.evs = append(q.evs, ev) }

func (q *queue) pop() (Event, bool) {
	if q.head >= len(q.evs) {
		q.evs, q.head = q.evs[:0], 0
		return Event{}, false
	}
	ev := q.evs[q.head]
	q.evs[q.head] = Event{}
	q.head++
	return ev, true
}

// lineReader is a Reader over lines: decode turns each line into the
// events it holds (pushed on q), or an error.
type lineReader struct {
	l      *lines
	q      queue
	decode func(b []byte, line int) error
	// atEOF, when set, is called once at the end of the file, to push the
	// events the end implies (a turn still open).
	atEOF func()
	eof   bool
}

// Next implements Reader.
func (r *lineReader) Next() (Event, error) {
	for {
		if ev, ok := r.q.pop(); ok {
			return ev, nil
		}
		if r.eof {
			return Event{}, io.EOF
		}
		b, line, err := r.l.next()
		if errors.Is(err, io.EOF) {
			r.eof = true
			if r.atEOF != nil {
				r.atEOF()
			}
			continue
		}
		if err != nil {
			return Event{}, err
		}
		if err := r.decode(b, line); err != nil {
			return Event{}, err
		}
	}
}
