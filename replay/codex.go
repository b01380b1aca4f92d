package replay

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
)

// Codex's session rollout, derived from the records Codex 0.169.0 writes
// (testdata/hosts/codex): one {"timestamp", "type", "payload"} object a
// line. session_meta names the session and its working directory,
// turn_context the turn's working directory; event_msg task_started and
// task_complete start and end a turn; a response_item function_call is a
// call (its arguments a JSON string) and function_call_output its result,
// matched by call_id. Codex's hooks see its shell tools as Bash with a
// "command" (codexCall), so the rollout's exec_command {"cmd"} replays as
// the PreToolUse event the hook got. A call a PreToolUse hook refused has
// the output "Command blocked by PreToolUse hook: ...". Other known types
// and payloads are bookkeeping; an unknown one is an error.

// codexIgnoredTypes are the top-level record types that hold no call,
// turn or result.
var codexIgnoredTypes = []string{"world_state", "token_usage_record", "compacted"}

// codexIgnoredItems are the response_item payloads that are not calls.
var codexIgnoredItems = []string{"message", "reasoning", "web_search_call", "compaction", "ghost_snapshot", "tool_search_call", "image_generation_call"}

type codexRecord struct {
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     *string         `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    *struct {
		Command []string `json:"command"`
	} `json:"action"`
}

// codexBlocked starts the output Codex records for a call a PreToolUse
// hook refused.
const codexBlocked = "Command blocked by PreToolUse hook:"

func newCodexReader(l *lines) *lineReader {
	r := &lineReader{l: l}
	var session, cwd string
	calls := map[string]eval.Call{}
	r.decode = func(b []byte, line int) error {
		var rec codexRecord
		if e := l.object(b, line, &rec); e != nil {
			return e
		}
		var p codexPayload
		if len(rec.Payload) == 0 || json.Unmarshal(rec.Payload, &p) != nil {
			return l.errorf(line, CodeInvalidRecord, "a %q record without a payload object", rec.Type)
		}
		base := Event{Pos: Pos{l.name, line}, Host: hooks.Codex, Session: session, Time: rec.Timestamp}
		switch rec.Type {
		case "session_meta":
			session = p.ID
			if session == "" {
				session = p.SessionID
			}
			cwd = p.Cwd
			return nil
		case "turn_context":
			if p.Cwd != "" {
				cwd = p.Cwd
			}
			return nil
		case "event_msg":
			switch p.Type {
			case "task_started":
				base.Kind = TurnStart
				r.q.push(base)
			case "task_complete":
				base.Kind = TurnEnd
				r.q.push(base)
			}
			return nil
		case "response_item":
		default:
			for _, t := range codexIgnoredTypes {
				if rec.Type == t {
					return nil
				}
			}
			return l.errorf(line, CodeUnknownRecord, "unknown record type %q", rec.Type)
		}
		if session == "" {
			return l.errorf(line, CodeInvalidRecord, "a call before the session_meta record that names the session")
		}
		switch p.Type {
		case "function_call", "custom_tool_call", "local_shell_call":
			call, err := codexCall(p)
			if err != nil {
				return l.errorf(line, CodeInvalidRecord, "%s", err)
			}
			call.Cwd = cwd
			calls[p.CallID] = call
			base.Kind, base.Call = Before, call
			r.q.push(base)
		case "function_call_output", "custom_tool_call_output":
			call, ok := calls[p.CallID]
			if !ok {
				return l.errorf(line, CodeInvalidRecord, "an output for call %q, which no earlier record holds", p.CallID)
			}
			delete(calls, p.CallID)
			var out any
			_ = json.Unmarshal(p.Output, &out)
			base.Kind, base.Call, base.Result = After, call, hooks.ResultOf(out)
			if s, ok := out.(string); ok && strings.HasPrefix(s, codexBlocked) {
				base.NotRun = s
			}
			r.q.push(base)
		default:
			for _, t := range codexIgnoredItems {
				if p.Type == t {
					return nil
				}
			}
			return l.errorf(line, CodeUnknownRecord, "unknown response_item type %q", p.Type)
		}
		return nil
	}
	return r
}

// codexCall is the call a rollout's function call records, as Codex's
// PreToolUse hook sends it: its shell tools (exec_command's "cmd",
// shell_command's "command", shell's and local_shell_call's argv) as Bash
// with the command line as "command"; any other tool by its name, with its
// arguments (a custom tool's free-form input as "input").
func codexCall(p codexPayload) (eval.Call, error) {
	if p.CallID == "" {
		return eval.Call{}, errString("a call without a call_id")
	}
	call := eval.Call{Tool: p.Name, ID: p.CallID}
	if p.Type == "local_shell_call" {
		if p.Action == nil {
			return eval.Call{}, errString("a local_shell_call without an action")
		}
		call.Tool, call.Args = "Bash", map[string]any{"command": argvCommand(p.Action.Command)}
		return call, nil
	}
	if p.Name == "" {
		return eval.Call{}, errString("a call without a name")
	}
	if p.Type == "custom_tool_call" {
		in := ""
		if p.Input != nil {
			in = *p.Input
		}
		call.Args = map[string]any{"input": in}
		return call, nil
	}
	var argText string
	if json.Unmarshal(p.Arguments, &argText) != nil {
		return eval.Call{}, errString("arguments must be a JSON string")
	}
	var args map[string]any
	if argText != "" {
		if err := json.Unmarshal([]byte(argText), &args); err != nil {
			return eval.Call{}, errString("the arguments are not a JSON object: " + err.Error())
		}
	}
	switch p.Name {
	case "exec_command":
		call.Tool, call.Args = "Bash", map[string]any{"command": args["cmd"]}
	case "shell_command":
		call.Tool, call.Args = "Bash", map[string]any{"command": args["command"]}
	case "shell":
		var argv []string
		if list, ok := args["command"].([]any); ok {
			for _, a := range list {
				s, _ := a.(string)
				argv = append(argv, s)
			}
		}
		call.Tool, call.Args = "Bash", map[string]any{"command": argvCommand(argv)}
	default:
		call.Args = args
	}
	return call, nil
}

// argvCommand is the command line of an argv: the script of bash -lc
// SCRIPT (or sh -c), else the words joined by spaces.
func argvCommand(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

type errString string

func (e errString) Error() string { return string(e) }
