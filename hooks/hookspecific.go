package hooks

import (
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// hookSpecificHost speaks the hook protocol Claude Code defined and Codex
// adopted. Events carry hook_event_name, session_id, cwd, tool_name and
// tool_input (hookSpecificEvents); PreToolUse comes before a call,
// PostToolUse and PostToolUseFailure after it, UserPromptSubmit starts a
// turn. An answer is JSON (hookOutput) whose hookSpecificOutput carries the
// permission decision; exit code 2 with the reason on stderr blocks. The
// hosts differ in which answers they honour, so each has its dialect: how a
// verdict becomes an answer.
type hookSpecificHost struct {
	name    string
	dialect hookSpecificDialect
}

// hookSpecificDialect maps decisions to one host's answers. A nil answer
// says nothing: no output at all, so the host's own rules apply.
type hookSpecificDialect interface {
	// before answers a call about to run.
	before(ev Event, d eval.Decision) *hookOutput
	// after answers a call that ran.
	after(ev Event, d eval.Decision) *hookOutput
}

// hookSpecificEvents are the events of the protocol.
var hookSpecificEvents = eventProtocol{
	kinds: map[string]Kind{
		"PreToolUse":         KindBefore,
		"PostToolUse":        KindAfter,
		"PostToolUseFailure": KindAfter,
		"UserPromptSubmit":   KindTurnStart,
		"Stop":               KindTurnEnd,
		"SessionStart":       KindSessionStart,
		"SessionEnd":         KindSessionEnd,
	},
	failure: "PostToolUseFailure",
	prompt:  "prompt",
	meta:    []string{"permission_mode", "model", "agent_id", "agent_type", "turn_id"},
}

// hookOutput is an answer of the protocol.
type hookOutput struct {
	Continue           *bool               `json:"continue,omitempty"`
	StopReason         string              `json:"stopReason,omitempty"`
	Decision           string              `json:"decision,omitempty"`
	Reason             string              `json:"reason,omitempty"`
	SystemMessage      string              `json:"systemMessage,omitempty"`
	HookSpecificOutput *hookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// hookSpecificOutput is the part of an answer specific to the event.
type hookSpecificOutput struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput,omitempty"`
	AdditionalContext        string         `json:"additionalContext,omitempty"`
	UpdatedToolOutput        any            `json:"updatedToolOutput,omitempty"`
	// UpdatedMCPToolOutput is the older field for MCP tools' output.
	UpdatedMCPToolOutput any `json:"updatedMCPToolOutput,omitempty"`
}

// Name implements Host.
func (h *hookSpecificHost) Name() string { return h.name }

// Decode implements Host.
func (h *hookSpecificHost) Decode(data []byte) (Event, error) {
	return decodeEvent(h.name, data, hookSpecificEvents)
}

// Encode implements Host.
func (h *hookSpecificHost) Encode(ev Event, d eval.Decision) Response {
	var out *hookOutput
	switch ev.Kind {
	case KindBefore:
		out = h.dialect.before(ev, d)
	case KindAfter:
		out = h.dialect.after(ev, d)
	case KindTurnEnd:
		if d.Verdict == policy.Warn {
			// Shown to the user; a decision would keep the agent going.
			out = &hookOutput{SystemMessage: message(d)}
		}
	case KindTurnStart:
		if ev.Messages != nil {
			return h.prompt(d)
		}
	}
	if out == nil {
		return Response{}
	}
	return jsonResponse(*out)
}

// Fail implements Host: exit 2 with the reason on stderr blocks a tool call
// whatever stdout says (Codex: with a non-empty stderr, which it has);
// failing open is exit 1, a non-blocking error.
func (h *hookSpecificHost) Fail(_ Event, reason string, open bool) Response {
	return failExit(reason, open)
}

// withOutput starts an answer about ev with an empty hookSpecificOutput.
func withOutput(ev Event) (hookOutput, *hookSpecificOutput) {
	hso := &hookSpecificOutput{HookEventName: ev.Name}
	return hookOutput{HookSpecificOutput: hso}, hso
}

// decide sets the permission decision (allow, deny or ask) and its reason.
func (o *hookSpecificOutput) decide(decision, reason string) {
	o.PermissionDecision, o.PermissionDecisionReason = decision, reason
}

// rewrite answers a modify before the call: allow with the rewritten
// arguments as updatedInput (applied with allow or ask; allow runs the
// rewritten call, which the host's own deny and ask rules still see), or a
// deny when the rewrite has no arguments.
func (o *hookSpecificOutput) rewrite(d eval.Decision, msg string) {
	if d.Args == nil {
		o.decide("deny", msg+": the rewritten arguments are missing")
		return
	}
	o.decide("allow", msg)
	o.UpdatedInput = d.Args
}
