package input

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every event, or stops at the first error.
func readAll(r io.Reader) ([]Event, error) {
	rd := NewReader(r, "stdin")
	var evs []Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestStreamLines(t *testing.T) {
	in := "{\"event\": \"turn_start\"}\n\n" +
		"{\"event\": \"before\", \"tool\": \"Bash\", \"args\": {\"command\": \"ls\"}, \"cwd\": \"/r\"}\n" +
		"  {\"event\": \"after\",\n   \"tool\": \"Bash\", \"result\": {\"is_error\": true, \"content\": \"no\", \"exit_code\": 2}}\n" +
		"{\"event\": \"before\", \"tool\": \"Read\"}\n{\"event\": \"turn_end\"}"
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
	} {
		t.Run(name, func(t *testing.T) {
			evs, err := readAll(r())
			if err != nil {
				t.Fatalf("readAll() error = %v", err)
			}
			wantKinds := []Kind{TurnStart, Before, After, Before, TurnEnd}
			wantLines := []int{1, 3, 4, 6, 7}
			if len(evs) != len(wantKinds) {
				t.Fatalf("readAll() = %d events, want %d", len(evs), len(wantKinds))
			}
			for i, ev := range evs {
				if ev.Kind != wantKinds[i] || ev.Line != wantLines[i] {
					t.Errorf("event %d = kind %d line %d, want kind %d line %d", i, ev.Kind, ev.Line, wantKinds[i], wantLines[i])
				}
			}
			if got := evs[1].Call; got.Tool != "Bash" || got.Cwd != "/r" || got.Args["command"] != "ls" {
				t.Errorf("before call = %+v", got)
			}
			if got := evs[2].Result; !got.IsError || got.Content != "no" || got.Fields["exit_code"] != float64(2) {
				t.Errorf("after result = %+v", got)
			}
		})
	}
}

func TestSingleCall(t *testing.T) {
	evs, err := readAll(strings.NewReader(`{"tool": "Bash", "args": {"command": "ls"}, "session": {"id": "s1", "mode": "ci"}, "result": {"is_error": false}}` + "\n\n"))
	if err != nil {
		t.Fatalf("readAll() error = %v", err)
	}
	if len(evs) != 1 || evs[0].Kind != After || evs[0].Session["mode"] != "ci" {
		t.Fatalf("readAll() = %+v, want one after call with session metadata", evs)
	}
}

// TestIdentity: a call's call_id and agent (a name, or an object with a
// name and ids) reach the call.
func TestIdentity(t *testing.T) {
	in := `{"event": "before", "tool": "Bash", "call_id": "c1", "agent": "coder"}` + "\n" +
		`{"event": "after", "tool": "Bash", "call_id": "c1", "agent": {"name": "rev", "ids": {"org": "acme"}}, "result": {}}`
	evs, err := readAll(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if c := evs[0].Call; c.ID != "c1" || c.Agent.Name != "coder" || c.Agent.IDs != nil {
		t.Errorf("before call = %+v", c)
	}
	if c := evs[1].Call; c.ID != "c1" || c.Agent.Name != "rev" || c.Agent.IDs["org"] != "acme" {
		t.Errorf("after call = %+v", c)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `stdin: no input: expected a call`},
		{"  \n ", `stdin: no input`},
		{`"Bash"`, `stdin:1: expected a JSON object (a call or an event), found a string`},
		{"{\"event\": \"turn_start\"}\n{\"event\": \"before\", \"tool\": 1}", `stdin:2: tool must be a string, not a number`},
		{"{\"event\": \"turn_start\"}\n\n {\"event\": \"befor\"}", `stdin:3: event must be turn_start, before, after, turn_end, input or output, not "befor"`},
		{`{"event": "turn_start", "tool": "x"}`, `stdin:1: unknown field "tool" in a turn_start event`},
		{`{"event": "turn_end", "tool": "x"}`, `stdin:1: unknown field "tool" in a turn_end event`},
		{`{"event": "before", "tool": "x", "result": {}}`, `stdin:1: a before event takes no "result"`},
		{`{"event": "after", "tool": "x"}`, `stdin:1: an after event needs a "result"`},
		{`{"tool": ""}`, `stdin:1: tool must not be empty`},
		{`{"tool": "x", "cwd": 3}`, `stdin:1: cwd must be a string, not a number`},
		{`{"tool": "x", "session": []}`, `stdin:1: session must be an object, not an array`},
		{`{"tool": "x", "result": "ok"}`, `stdin:1: result must be an object, not a string`},
		{"{\"tool\": \"x\"}\n\n  junk", `stdin:3:3: invalid JSON: invalid character 'j' looking for beginning of value`},
		{"{\"tool\": \"x\",\n \"args\": {\n", `stdin:1: invalid JSON: the value is cut off at the end of the input`},
		{`{"tool": "x", "call_id": 7}`, `stdin:1: call_id must be a string, not a number`},
		{`{"tool": "x", "agent": []}`, `stdin:1: agent must be a string (its name) or an object`},
		{`{"tool": "x", "agent": {"nom": "a"}}`, `stdin:1: unknown field "nom" in agent`},
		{`{"tool": "x", "agent": {"name": 1}}`, `stdin:1: agent.name must be a string, not a number`},
		{`{"tool": "x", "agent": {"ids": {"a": 1}}}`, `stdin:1: agent.ids.a must be a string, not a number`},
	}
	for _, tt := range tests {
		for _, one := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tt.in)
			if one {
				r = iotest.OneByteReader(r)
			}
			_, err := readAll(r)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("readAll(%q) error = %v, want prefix %q", tt.in, err, tt.want)
			}
		}
	}
}

// TestStreamSurvivesBadValues: once a stream has started, a value that is
// not a valid event, and a line that is not valid JSON, are reported at
// their line and skipped; the events after them are read.
func TestStreamSurvivesBadValues(t *testing.T) {
	in := `{"event": "turn_start"}
{"event": "before", "tool": "Bash", args: {}}
{"event": "before", "tool": "Bash", "args": {"command": "ls"}}
{"event": "before", "tool": "Bash", "working_dir": "/r"}
{"event": "before", "args": {}}
[1, 2]
{"tool": "Read"}
{"event": "after", "tool": "Bash", "result": {"is_error": true}}
{"event": "before", "tool": "Bash", "args": {"command": "make"}
{"event": "turn_start"}`
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
	} {
		t.Run(name, func(t *testing.T) {
			rd := NewReader(r(), "stdin")
			var lines, errLines []int
			var errs []string
			for {
				ev, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("Next() error %T %v, want *Error", err, err)
					}
					errLines = append(errLines, e.Line)
					errs = append(errs, err.Error())
					continue
				}
				lines = append(lines, ev.Line)
			}
			if want := []int{1, 3, 8}; !slices.Equal(lines, want) {
				t.Errorf("events on lines %v, want %v", lines, want)
			}
			// line 9 lacks its closing brace: the decoder reads on into
			// line 10 and fails there; line 10 is skipped with it.
			if want := []int{2, 4, 5, 6, 7, 10}; !slices.Equal(errLines, want) {
				t.Errorf("errors on lines %v, want %v:\n%s", errLines, want, strings.Join(errs, "\n"))
			}
		})
	}
}

// TestSingleCallStopsAtError: a single call's error ends the input.
func TestSingleCallStopsAtError(t *testing.T) {
	rd := NewReader(strings.NewReader("{\"tool\": \"Bash\", \"x\": 1}\n{\"tool\": \"Bash\"}"), "stdin")
	if _, err := rd.Next(); err == nil {
		t.Fatal("Next() = nil error, want unknown field")
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next() after the error = %v, want io.EOF", err)
	}
}
