package hooks

import (
	"strconv"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/celguard/celguard/eval"
)

// eventFields are the members of the shared event format (decodeEvent)
// that decodeEventFast reads, each with the Go type it takes. A member of
// any other JSON type than its field's makes the first pass fail, and the
// event then goes the map's way (decodeEventMap), which says what is wrong
// with it or reads it as it reads any event; so does a member name not
// spelled exactly as here (case variants are other names, as map keys),
// and every member not named here goes to Other, decoded as encoding/json
// decodes a value into an any, so that the first pass refuses what
// decodeObject's refuses.
type eventFields struct {
	HookEventName         string         `json:"hook_event_name,case:strict"`
	SessionID             string         `json:"session_id,case:strict"`
	Cwd                   string         `json:"cwd,case:strict"`
	ToolName              string         `json:"tool_name,case:strict"`
	ToolInput             map[string]any `json:"tool_input,case:strict"`
	ToolUseID             string         `json:"tool_use_id,case:strict"`
	AgentType             string         `json:"agent_type,case:strict"`
	AgentID               string         `json:"agent_id,case:strict"`
	PermissionMode        string         `json:"permission_mode,case:strict"`
	Model                 string         `json:"model,case:strict"`
	TurnID                string         `json:"turn_id,case:strict"`
	Prompt                *string        `json:"prompt,case:strict"`
	Error                 string         `json:"error,case:strict"`
	IsInterrupt           any            `json:"is_interrupt,case:strict"`
	ToolResponse          any            `json:"tool_response,case:strict"`
	PermissionSuggestions any            `json:"permission_suggestions,case:strict"`
	Other                 map[string]any `json:",unknown"`
}

// eventFieldsFree are the zero eventFields free for reuse.
var eventFieldsFree = sync.Pool{New: func() any { return new(eventFields) }}

// metaField is the member of f named key, one of an eventProtocol's meta
// names; ok is false for a name eventFields does not have.
func (f *eventFields) metaField(key string) (_ string, ok bool) {
	switch key {
	case "permission_mode":
		return f.PermissionMode, true
	case "model":
		return f.Model, true
	case "agent_id":
		return f.AgentID, true
	case "agent_type":
		return f.AgentType, true
	case "turn_id":
		return f.TurnID, true
	}
	return "", false
}

// decodeEventFast decodes an event of the shared format (decodeEvent) the
// way decodeEventMap does, without the event as a map: the members it
// reads go straight into eventFields by the strict first pass
// (github.com/go-json-experiment/json, as decodeObject's). ok is false,
// and nothing is decided, for every event it does not take: one the first
// pass refuses (a duplicate name at any depth, invalid UTF-8, a number
// past float64, a member of another type than its field's, anything that
// is not one JSON object), one decodeEventMap fails (its error is the
// answer), and a protocol or kind that reads members it does not have
// (Gemini CLI's model events, OpenCode's output text). Where it takes an
// event it decodes the same Event as decodeEventMap
// (TestDecodeEventFastDifferential, FuzzDecodeEventFast).
func decodeEventFast(host string, data []byte, p eventProtocol) (ev Event, ok bool) {
	if p.output != "" || p.prompt != "" && p.prompt != "prompt" {
		return Event{}, false
	}
	f := eventFieldsFree.Get().(*eventFields)
	defer func() {
		*f = eventFields{} // the first pass merges into what it finds
		eventFieldsFree.Put(f)
	}()
	if jsonv2.Unmarshal(data, f) != nil || f.HookEventName == "" {
		return Event{}, false
	}
	ev = Event{Host: host, Name: f.HookEventName, SessionID: f.SessionID, Cwd: f.Cwd}
	ev.Kind = p.kinds[ev.Name] // KindIgnore when absent
	switch {
	case ev.Kind != KindIgnore && f.SessionID == "": // requireSession's error
		return Event{}, false
	case ev.Kind == KindInput || ev.Kind == KindOutput:
		return Event{}, false
	}
	ev.Meta = map[string]any{"host": host}
	for _, k := range p.meta {
		s, known := f.metaField(k)
		if !known {
			return Event{}, false
		}
		if s != "" {
			ev.Meta[k] = s
		}
	}
	if ev.Kind == KindBefore || ev.Kind == KindAfter || ev.Kind == KindPermission {
		if f.ToolName == "" {
			return Event{}, false
		}
		a := f.ToolInput
		if a == nil {
			a = map[string]any{}
		}
		ev.Call = eval.Call{Tool: f.ToolName, Args: a, Cwd: f.Cwd, ID: f.ToolUseID}
		ev.Call.Agent.Name = f.AgentType
		if f.AgentID != "" {
			ev.Call.Agent.IDs = map[string]string{"agent_id": f.AgentID}
		}
	}
	if ev.Kind == KindTurnStart && p.prompt != "" && f.Prompt != nil {
		ev.Messages = []eval.Message{{Role: "user", Content: *f.Prompt}}
	}
	if ev.Kind == KindPermission {
		ev.suggestions, _ = f.PermissionSuggestions.([]any)
	}
	switch {
	case ev.Kind == KindAfter && ev.Name == p.failure:
		ev.failure = true
		ev.Result = eval.Result{IsError: true, Content: f.Error, Fields: map[string]any{}}
		if g := exitCodeLine().FindStringSubmatch(f.Error); g != nil {
			if n, err := strconv.Atoi(g[1]); err == nil {
				ev.Result.Fields["exit_code"] = float64(n)
			}
		}
		if b, ok := f.IsInterrupt.(bool); ok {
			ev.Result.Fields["is_interrupt"] = b
		}
		if len(ev.Result.Fields) == 0 {
			ev.Result.Fields = nil
		}
	case ev.Kind == KindAfter:
		ev.response = f.ToolResponse
		ev.Result = responseResult(ev.response)
	}
	return ev, true
}
