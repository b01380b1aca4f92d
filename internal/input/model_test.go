package input

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzModelEvents feeds arbitrary streams of input and output events to
// the reader: it never panics, it always ends, every input event it
// returns has messages with a role, and every error is an *Error.
func FuzzModelEvents(f *testing.F) {
	for _, s := range []string{
		`{"event": "input", "messages": [{"role": "user", "content": "hi", "name": "ann"}], "call_id": "m1", "agent": "a"}`,
		`{"event": "output", "output": {"text": "x", "content": {"a": [1, null]}}}`,
		`{"event": "input", "messages": [{"content": "x"}]}` + "\n" + `{"event": "output", "output": {"txt": 1}}`,
		`{"event": "input", "messages": "hi"}`,
		`{"event": "output"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader(strings.NewReader(s), "stdin")
		for range 10000 {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var ie *Error
				if !errors.As(err, &ie) {
					t.Fatalf("error %v is not an *Error", err)
				}
				if r.Mode() != ModeStream {
					return
				}
				continue
			}
			if ev.Kind == Input {
				for _, m := range ev.Messages {
					if m.Role == "" {
						t.Fatalf("a message without a role: %+v", ev)
					}
				}
			}
		}
		t.Fatalf("the reader did not end")
	})
}

// TestModelEvents: input and output events, and what is wrong with bad
// ones.
func TestModelEvents(t *testing.T) {
	r := NewReader(strings.NewReader(`{"event": "input", "call_id": "m1", "agent": {"name": "w"}, "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi", "name": "ann"}]}
{"event": "output", "output": {"text": "hello", "content": {"n": 1}}}
{"event": "output", "output": {"text": "x"}, "tool": "Bash"}
{"event": "input", "messages": [{"role": "", "content": "x"}]}
`), "stdin")
	ev, err := r.Next()
	if err != nil || ev.Kind != Input || len(ev.Messages) != 2 || ev.Messages[1].Name != "ann" || ev.Call.ID != "m1" || ev.Call.Agent.Name != "w" {
		t.Errorf("input: %+v, %v", ev, err)
	}
	ev, err = r.Next()
	if err != nil || ev.Kind != Output || ev.Output.Text != "hello" || ev.Output.Content.(map[string]any)["n"] != float64(1) {
		t.Errorf("output: %+v, %v", ev, err)
	}
	if _, err = r.Next(); err == nil || !strings.Contains(err.Error(), `unknown field "tool" in an output event`) {
		t.Errorf("an output with a tool: %v", err)
	}
	if _, err = r.Next(); err == nil || !strings.Contains(err.Error(), "messages[0].role must not be empty") {
		t.Errorf("a message without a role: %v", err)
	}
}
