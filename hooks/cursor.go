package hooks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
	"github.com/celguard/celguard/policy"
)

// cursor speaks Cursor's hook protocol (https://cursor.com/docs/agent/hooks;
// field reference in eqtylab/cupcake docs/docs/reference/harnesses/cursor.md).
//
// beforeShellExecution (tool "Shell", args {command}), beforeMCPExecution
// (tool_input arrives as a JSON string), beforeReadFile (tool "Read", args
// {file_path}) and preToolUse answer in snake_case: permission "allow",
// "deny" or "ask", user_message, agent_message, question; beforeReadFile
// takes permission alone. Cursor cannot rewrite a call, so a modify is a deny
// whose agent_message gives the rewritten arguments to use instead.
// afterShellExecution, afterMCPExecution and postToolUse feed the counters
// and answer {} (Cursor ignores what after hooks say); beforeSubmitPrompt
// starts a turn, its prompt is decided by the input rules, and it answers
// {"continue": true}, or false with user_message when the prompt is refused. Exit code 2 blocks, and so
// does JSON Cursor cannot read; celguard's failures use both.
type cursor struct {
	opts Options
}

// Name implements Host.
func (*cursor) Name() string { return Cursor }

type cursorOut struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
	Question     string `json:"question,omitempty"`
}

type cursorContinue struct {
	Continue    bool   `json:"continue"`
	UserMessage string `json:"user_message,omitempty"`
}

// Decode implements Host.
func (h *cursor) Decode(data []byte) (Event, error) {
	m, err := decodeObject(data)
	if err != nil {
		return Event{}, err
	}
	f, err := strs(m, "hook_event_name", "conversation_id", "session_id", "cwd", "tool_name")
	if err != nil {
		return Event{}, err
	}
	ev := Event{Host: h.Name(), Name: f[0], SessionID: f[1], Meta: meta(h.Name(), m, "model", "cursor_version", "user_email")}
	if ev.SessionID == "" {
		ev.SessionID = f[2]
	}
	if ev.Name == "" {
		return Event{}, fmt.Errorf("the event has no hook_event_name")
	}
	cwd := f[3]
	if cwd == "" {
		if roots, ok := m["workspace_roots"].([]any); ok && len(roots) > 0 {
			cwd, _ = roots[0].(string)
		}
	}
	ev.Cwd = cwd
	switch ev.Name {
	case "beforeShellExecution", "afterShellExecution":
		cmd, err := str(m, "command")
		if err != nil {
			return Event{}, err
		}
		ev.Call = eval.Call{Tool: "Shell", Args: map[string]any{"command": cmd}, Cwd: cwd}
		if ev.Name == "beforeShellExecution" {
			ev.Kind = KindBefore
		} else {
			ev.Kind = KindAfter
			out, err := str(m, "output")
			if err != nil {
				return Event{}, err
			}
			resp := map[string]any{"output": out}
			for _, k := range []string{"exit_code", "exitCode"} {
				if n, ok := m[k].(float64); ok {
					resp["exit_code"] = n
				}
			}
			ev.response = resp
			ev.Result = responseResult(resp)
		}
	case "beforeMCPExecution", "afterMCPExecution", "preToolUse", "postToolUse":
		if f[4] == "" {
			return Event{}, fmt.Errorf("%s event without a tool_name", ev.Name)
		}
		a, err := cursorArgs(m)
		if err != nil {
			return Event{}, err
		}
		tool := f[4]
		if (ev.Name == "beforeMCPExecution" || ev.Name == "afterMCPExecution") && !strings.HasPrefix(tool, "MCP:") &&
			!strings.HasPrefix(tool, "mcp_") {
			// Cursor names an MCP tool alone; its preToolUse names the
			// same tool "MCP:<tool>", which the mcp class matches.
			tool = "MCP:" + tool
		}
		ev.Call = eval.Call{Tool: tool, Args: a, Cwd: cwd}
		if ev.Name == "beforeMCPExecution" || ev.Name == "preToolUse" {
			ev.Kind = KindBefore
			break
		}
		ev.Kind = KindAfter
		ev.response = m["tool_output"]
		if s, ok := m["result_json"].(string); ok {
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				v = s
			}
			ev.response = v
		}
		ev.Result = responseResult(ev.response)
	case "beforeReadFile":
		p, err := str(m, "file_path")
		if err != nil {
			return Event{}, err
		}
		ev.Call = eval.Call{Tool: "Read", Args: map[string]any{"file_path": p}, Cwd: cwd}
		ev.Kind = KindBefore
	case "beforeSubmitPrompt":
		ev.Kind = KindTurnStart
		if ev.Messages, err = promptMessages(m, "prompt"); err != nil {
			return Event{}, err
		}
	case "stop":
		// Answered {}: a followup_message would keep the agent going.
		ev.Kind = KindTurnEnd
	case "sessionStart":
		ev.Kind = KindSessionStart
	case "sessionEnd":
		ev.Kind = KindSessionEnd
	default:
		ev.Kind = KindIgnore
	}
	if ev.Kind == KindBefore || ev.Kind == KindAfter {
		if err := callIdentity(&ev.Call, m, ""); err != nil {
			return Event{}, err
		}
	}
	if err := requireSession(ev, "conversation_id"); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// cursorArgs reads tool_input: an object, or (beforeMCPExecution) a JSON
// string holding one.
func cursorArgs(m map[string]any) (map[string]any, error) {
	s, ok := m["tool_input"].(string)
	if !ok {
		return args(m, "tool_input")
	}
	if s == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("tool_input is a string but not JSON: %w", err)
	}
	switch a := v.(type) {
	case map[string]any:
		return a, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("tool_input must hold a JSON object, not %s", jsonkind.Of(v))
}

// Encode implements Host.
func (h *cursor) Encode(ev Event, d eval.Decision) Response {
	switch ev.Kind {
	case KindBefore:
		out := h.before(d)
		if ev.Name == "beforeReadFile" {
			// beforeReadFile takes permission alone, and no ask.
			if out.Permission == "ask" {
				out = cursorOut{Permission: "deny"}
			}
			out = cursorOut{Permission: out.Permission}
		}
		return jsonResponse(out)
	case KindTurnStart:
		return jsonResponse(cursorPrompt(ev, d))
	}
	return jsonResponse(struct{}{})
}

func (h *cursor) before(d eval.Decision) cursorOut {
	msg := message(d)
	switch d.Verdict {
	case policy.Allow:
		return cursorOut{Permission: "allow"}
	case policy.Warn:
		return cursorOut{Permission: "allow", UserMessage: msg, AgentMessage: msg}
	case policy.Ask:
		if d.Args != nil {
			// Cursor would run the original call once approved.
			m := rewriteMessage("Cursor", d, "Cursor hooks cannot rewrite a call")
			return cursorOut{Permission: "deny", UserMessage: m, AgentMessage: m}
		}
		return cursorOut{Permission: "ask", Question: msg, UserMessage: msg}
	case policy.Modify:
		m := rewriteMessage("Cursor", d, "Cursor hooks cannot rewrite a call")
		return cursorOut{Permission: "deny", UserMessage: m, AgentMessage: m}
	case policy.Block:
		return cursorOut{Permission: "deny", UserMessage: msg, AgentMessage: msg}
	case policy.Halt:
		m := msg + ". The turn is halted: every further call in it is refused"
		return cursorOut{Permission: "deny", UserMessage: m, AgentMessage: m}
	}
	m := "celguard: unknown verdict " + d.Verdict.String()
	return cursorOut{Permission: "deny", UserMessage: m, AgentMessage: m}
}

// Fail implements Host: a deny on stdout and exit 2, both of which Cursor
// honours as a block; failing open is an allow with the reason on stderr.
func (h *cursor) Fail(ev Event, reason string, open bool) Response {
	if reason == "" {
		reason = "celguard failed"
	}
	if open {
		r := Response{Stderr: clip("celguard (failing open): "+reason) + "\n"}
		switch ev.Kind {
		case KindBefore:
			r.Stdout = []byte(`{"permission":"allow"}` + "\n")
		case KindTurnStart:
			r.Stdout = []byte(`{"continue":true}` + "\n")
		default:
			r.Stdout = []byte("{}\n")
		}
		return r
	}
	m := clip("celguard: " + reason)
	var r Response
	if ev.Kind == KindTurnStart {
		r = jsonResponse(cursorContinue{Continue: false, UserMessage: m})
	} else {
		r = jsonResponse(cursorOut{Permission: "deny", UserMessage: m, AgentMessage: m})
	}
	r.Stderr, r.Exit = m+"\n", 2
	return r
}
