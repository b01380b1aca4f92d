package hooks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// claude speaks Claude Code's hook protocol
// (https://code.claude.com/docs/en/hooks).
//
// Before a call (PreToolUse) the answer is hookSpecificOutput with
// permissionDecision allow, deny or ask, its reason, updatedInput (the whole
// replacement input) and additionalContext, and continue: false with
// stopReason for a halt. After a call (PostToolUse, PostToolUseFailure) the
// counters update; warn is additionalContext, block is decision "block" with
// the output withheld through updatedToolOutput, modify is updatedToolOutput.
// UserPromptSubmit starts a turn. Exit code 2 with the reason on stderr
// blocks whatever stdout says, so celguard's own failures use it; any other
// non-zero exit lets the call through.
type claude struct {
	opts Options
}

// Name implements Host.
func (*claude) Name() string { return "claude-code" }

// claudeOut is Claude Code's (and Codex's) hook output.
type claudeOut struct {
	Continue           *bool      `json:"continue,omitempty"`
	StopReason         string     `json:"stopReason,omitempty"`
	Decision           string     `json:"decision,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	SystemMessage      string     `json:"systemMessage,omitempty"`
	HookSpecificOutput *claudeHSO `json:"hookSpecificOutput,omitempty"`
}

type claudeHSO struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput,omitempty"`
	AdditionalContext        string         `json:"additionalContext,omitempty"`
	UpdatedToolOutput        any            `json:"updatedToolOutput,omitempty"`
	// UpdatedMCPToolOutput is the older field for MCP tools' output.
	UpdatedMCPToolOutput any `json:"updatedMCPToolOutput,omitempty"`
}

var stop = func() *bool { f := false; return &f }

// Decode implements Host.
func (h *claude) Decode(data []byte) (Event, error) {
	return decodeClaudeLike(h.Name(), data)
}

// exitCodeLine reads Bash's "Exit code N" first error line.
var exitCodeLine = regexp.MustCompile(`^Exit code (-?\d+)`)

// decodeClaudeLike decodes the event format Claude Code and Codex share.
func decodeClaudeLike(host string, data []byte) (Event, error) {
	m, err := decodeObject(data)
	if err != nil {
		return Event{}, err
	}
	f, err := strs(m, "hook_event_name", "session_id", "cwd", "tool_name")
	if err != nil {
		return Event{}, err
	}
	ev := Event{Host: host, Name: f[0], SessionID: f[1],
		Meta: meta(host, m, "permission_mode", "model", "agent_id", "agent_type", "turn_id")}
	if ev.Name == "" {
		return Event{}, fmt.Errorf("the event has no hook_event_name")
	}
	switch ev.Name {
	case "PreToolUse", "PostToolUse", "PostToolUseFailure":
		if f[3] == "" {
			return Event{}, fmt.Errorf("%s event without a tool_name", ev.Name)
		}
		a, err := args(m, "tool_input")
		if err != nil {
			return Event{}, err
		}
		ev.Call = eval.Call{Tool: f[3], Args: a, Cwd: f[2]}
	}
	switch ev.Name {
	case "PreToolUse":
		ev.Kind = KindBefore
	case "PostToolUse":
		ev.Kind = KindAfter
		ev.response = m["tool_response"]
		ev.Result = responseResult(ev.response)
	case "PostToolUseFailure":
		ev.Kind = KindAfter
		ev.failure = true
		msg, err := str(m, "error")
		if err != nil {
			return Event{}, err
		}
		ev.Result = eval.Result{IsError: true, Content: msg, Fields: map[string]any{}}
		if g := exitCodeLine.FindStringSubmatch(msg); g != nil {
			if n, err := strconv.Atoi(g[1]); err == nil {
				ev.Result.Fields["exit_code"] = float64(n)
			}
		}
		if b, ok := m["is_interrupt"].(bool); ok {
			ev.Result.Fields["is_interrupt"] = b
		}
		if len(ev.Result.Fields) == 0 {
			ev.Result.Fields = nil
		}
	case "UserPromptSubmit":
		ev.Kind = KindTurnStart
	case "SessionStart":
		ev.Kind = KindSessionStart
	case "SessionEnd":
		ev.Kind = KindSessionEnd
	default:
		ev.Kind = KindIgnore
	}
	if ev.Kind != KindIgnore && ev.SessionID == "" {
		return Event{}, fmt.Errorf("%s event without a session_id", ev.Name)
	}
	return ev, nil
}

// Encode implements Host.
func (h *claude) Encode(ev Event, d eval.Decision) Response {
	switch ev.Kind {
	case KindBefore:
		return h.before(ev, d)
	case KindAfter:
		return h.after(ev, d)
	}
	return Response{}
}

func (h *claude) before(ev Event, d eval.Decision) Response {
	msg := message(d)
	hso := &claudeHSO{HookEventName: ev.Name}
	out := claudeOut{HookSpecificOutput: hso}
	switch d.Verdict {
	case policy.Allow:
		if d.RuleID == "" || !h.opts.Approve {
			return Response{}
		}
		hso.PermissionDecision, hso.PermissionDecisionReason = "allow", msg
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Ask:
		hso.PermissionDecision, hso.PermissionDecisionReason = "ask", msg
		// A rewrite before the ask: the user is shown the rewritten input.
		hso.UpdatedInput = d.Args
	case policy.Modify:
		if d.Args == nil {
			hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg+": the rewritten arguments are missing"
			break
		}
		// updatedInput is applied with allow or ask; allow runs the
		// rewritten call, which Claude's own deny and ask rules still see.
		hso.PermissionDecision, hso.PermissionDecisionReason, hso.UpdatedInput = "allow", msg, d.Args
	case policy.Block:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg
	case policy.Halt:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg
		out.Continue, out.StopReason = stop(), msg
	default:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", "celguard: unknown verdict "+d.Verdict.String()
	}
	return jsonResponse(out)
}

func (h *claude) after(ev Event, d eval.Decision) Response {
	msg := message(d)
	hso := &claudeHSO{HookEventName: ev.Name}
	out := claudeOut{HookSpecificOutput: hso}
	verdict := d.Verdict
	if verdict == policy.Modify && (d.Content == nil || ev.failure) {
		// PostToolUseFailure cannot replace what the model sees, and a
		// rewrite without content cannot be applied: withhold instead.
		verdict = policy.Block
	}
	if verdict == policy.Modify {
		if r, ok := rewriteResponse(ev.response, *d.Content); ok {
			h.setOutput(ev, hso, r)
			return jsonResponse(out)
		}
		verdict = policy.Block
	}
	switch verdict {
	case policy.Allow:
		return Response{}
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Block, policy.Halt:
		if ev.failure {
			// The error text reaches the model whatever a hook answers;
			// the strongest answer left is to stop.
			hso.AdditionalContext = msg
			out.Continue, out.StopReason = stop(), msg
			break
		}
		out.Decision, out.Reason = "block", msg
		h.setOutput(ev, hso, withheld(ev.response, msg))
		if verdict == policy.Halt {
			out.Continue, out.StopReason = stop(), msg
		}
	default:
		out.Decision, out.Reason = "block", "celguard: unknown verdict "+d.Verdict.String()
		out.Continue, out.StopReason = stop(), out.Reason
	}
	return jsonResponse(out)
}

// setOutput replaces the tool's output: updatedToolOutput, and for MCP
// tools (mcp__server__tool) also updatedMCPToolOutput, which Claude Code
// versions before updatedToolOutput read.
func (h *claude) setOutput(ev Event, hso *claudeHSO, v any) {
	hso.UpdatedToolOutput = v
	if strings.HasPrefix(ev.Call.Tool, "mcp__") {
		hso.UpdatedMCPToolOutput = v
	}
}

// Fail implements Host: exit 2 with the reason on stderr blocks a tool call
// whatever stdout says; failing open is exit 1, a non-blocking error.
func (h *claude) Fail(_ Event, reason string, open bool) Response {
	return failExit(reason, open)
}

// failExit is the failure answer of hosts where exit 2 with a reason on
// stderr blocks and any other non-zero exit is a non-blocking error.
func failExit(reason string, open bool) Response {
	if reason == "" {
		reason = "celguard failed"
	}
	if open {
		return Response{Stderr: clip("celguard (failing open): "+reason) + "\n", Exit: 1}
	}
	return Response{Stderr: clip("celguard: "+reason) + "\n", Exit: 2}
}
