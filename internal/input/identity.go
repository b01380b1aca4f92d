package input

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
)

// identity reads a call's call_id (a string) and agent: a string, its
// name, or an object {"name": ..., "ids": {"<host's name>": "<id>", ...}}.
func (r *Reader) identity(call *eval.Call, fields map[string]json.RawMessage, line int) error {
	if raw, ok := present(fields, "call_id"); ok {
		if jsonkind.OfRaw(raw) != "a string" || json.Unmarshal(raw, &call.ID) != nil {
			return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("call_id must be a string, not %s", jsonkind.OfRaw(raw))}
		}
	}
	raw, ok := present(fields, "agent")
	if !ok {
		return nil
	}
	switch jsonkind.OfRaw(raw) {
	case "a string":
		return json.Unmarshal(raw, &call.Agent.Name)
	case "an object":
	default:
		return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf(`agent must be a string (its name) or an object {"name": ..., "ids": {...}}, not %s`, jsonkind.OfRaw(raw))}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return &Error{Name: r.name, Line: line, Msg: "invalid agent: " + err.Error()}
	}
	if err := r.known(m, line, []string{"name", "ids"}, "agent"); err != nil {
		return err
	}
	if v, ok := present(m, "name"); ok {
		if jsonkind.OfRaw(v) != "a string" || json.Unmarshal(v, &call.Agent.Name) != nil {
			return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("agent.name must be a string, not %s", jsonkind.OfRaw(v))}
		}
	}
	if v, ok := present(m, "ids"); ok {
		var ids map[string]json.RawMessage
		if jsonkind.OfRaw(v) != "an object" || json.Unmarshal(v, &ids) != nil {
			return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("agent.ids must be an object of strings, not %s", jsonkind.OfRaw(v))}
		}
		call.Agent.IDs = make(map[string]string, len(ids))
		for _, k := range slices.Sorted(maps.Keys(ids)) {
			var s string
			if jsonkind.OfRaw(ids[k]) != "a string" || json.Unmarshal(ids[k], &s) != nil {
				return &Error{Name: r.name, Line: line, Msg: fmt.Sprintf("agent.ids.%s must be a string, not %s", k, jsonkind.OfRaw(ids[k]))}
			}
			call.Agent.IDs[k] = s
		}
	}
	return nil
}
