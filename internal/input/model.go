package input

import (
	"encoding/json"
	"fmt"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
)

// modelEvent reads an input event ({"event": "input", "messages": [{"role",
// "content", "name"}, ...]}) or an output event ({"event": "output",
// "output": {"text": ..., "content": ...}}), each with an optional call_id
// and agent.
func (r *Reader) modelEvent(name string, fields map[string]json.RawMessage, line int) (Event, error) {
	ev := Event{Line: line, Kind: Input}
	field := "messages"
	if name == "output" {
		ev.Kind, field = Output, "output"
	}
	if err := r.known(fields, line, []string{"event", field, "call_id", "agent"}, "an "+name+" event"); err != nil {
		return Event{}, err
	}
	raw, ok := present(fields, field)
	if !ok && name == "input" {
		return Event{}, &Error{Name: r.name, Line: line, Msg: `an input event needs "messages", e.g. [{"role": "user", "content": "..."}]`}
	}
	if !ok {
		return Event{}, &Error{Name: r.name, Line: line, Msg: `an output event needs "output", e.g. {"text": "..."}`}
	}
	var err error
	if name == "input" {
		ev.Messages, err = r.messages(raw, line)
	} else {
		err = r.output(raw, line, &ev.Output)
	}
	if err != nil {
		return Event{}, err
	}
	return ev, r.identity(&ev.Call, fields, line)
}

// messages reads a list of {"role", "content", "name"} objects; role and
// content are required strings, name an optional one.
func (r *Reader) messages(raw json.RawMessage, line int) ([]eval.Message, error) {
	var list []json.RawMessage
	if jsonkind.OfRaw(raw) != "an array" || json.Unmarshal(raw, &list) != nil {
		return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("messages must be an array, not %s", jsonkind.OfRaw(raw))}
	}
	out := make([]eval.Message, len(list))
	for i, item := range list {
		var m map[string]json.RawMessage
		if jsonkind.OfRaw(item) != "an object" || json.Unmarshal(item, &m) != nil {
			return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("messages[%d] must be an object, not %s", i, jsonkind.OfRaw(item))}
		}
		if err := r.known(m, line, []string{"role", "content", "name"}, fmt.Sprintf("messages[%d]", i)); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			key      string
			dst      *string
			required bool
		}{{"role", &out[i].Role, true}, {"content", &out[i].Content, true}, {"name", &out[i].Name, false}} {
			v, ok := present(m, f.key)
			if !ok {
				if f.required {
					return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("messages[%d] needs %q, a string", i, f.key)}
				}
				continue
			}
			if jsonkind.OfRaw(v) != "a string" || json.Unmarshal(v, f.dst) != nil {
				return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("messages[%d].%s must be a string, not %s", i, f.key, jsonkind.OfRaw(v))}
			}
		}
		if out[i].Role == "" {
			return nil, &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("messages[%d].role must not be empty", i)}
		}
	}
	return out, nil
}

// output reads {"text": ..., "content": ...}: text a required string,
// content any JSON value.
func (r *Reader) output(raw json.RawMessage, line int, out *eval.ModelOutput) error {
	var m map[string]json.RawMessage
	if jsonkind.OfRaw(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("output must be an object, not %s", jsonkind.OfRaw(raw))}
	}
	if err := r.known(m, line, []string{"text", "content"}, "output"); err != nil {
		return err
	}
	v, ok := present(m, "text")
	if !ok {
		return &Error{Name: r.name, Line: line, Msg: `output needs "text", a string`}
	}
	if jsonkind.OfRaw(v) != "a string" || json.Unmarshal(v, &out.Text) != nil {
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("output.text must be a string, not %s", jsonkind.OfRaw(v))}
	}
	if v, ok := present(m, "content"); ok {
		if err := json.Unmarshal(v, &out.Content); err != nil {
			return &Error{Name: r.name, Line: line, Msg: "invalid output.content: " + err.Error()}
		}
	}
	return nil
}
