package hooks

import (
	"strconv"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/jsonkind"
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
		"PermissionRequest":  KindPermission,
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
	case KindTurnStart, KindSessionStart:
		if d.Verdict == policy.Warn && d.Code == CodePoliciesUnavailable {
			// Shown to the user, and to the model as context: the prompt
			// goes on.
			msg := message(d)
			o, hso := withOutput(ev)
			o.SystemMessage, hso.AdditionalContext = msg, msg
			out = &o
		} else if ev.Kind == KindTurnStart && ev.Messages != nil {
			return h.prompt(d)
		}
	}
	if out == nil {
		return Response{}
	}
	return hookOutputResponse(out)
}

// hookOutputResponse is jsonResponse(*o), its bytes written by
// appendHookOutput into one slice where it can, by encoding/json where
// it cannot.
func hookOutputResponse(o *hookOutput) Response {
	n := 160 + len(o.StopReason) + len(o.Decision) + len(o.Reason) + len(o.SystemMessage)
	if h := o.HookSpecificOutput; h != nil {
		n += len(h.HookEventName) + len(h.PermissionDecision) + len(h.PermissionDecisionReason) + len(h.AdditionalContext)
	}
	b, ok := appendHookOutput(make([]byte, 0, n), o)
	if !ok {
		return jsonResponse(*o)
	}
	return Response{Stdout: append(b, '\n')}
}

// appendHookOutput appends marshal(o) to b: encoding/json's bytes for o
// (without HTML escaping, which a plain string never needs). ok is false,
// and b is to be dropped, when o has a member it leaves to encoding/json
// (a rewritten input or output) or a string that encoding/json would not
// write as it is (jsonkind.Plain). TestAppendHookOutputDifferential and
// FuzzAppendHookOutput hold it to marshal, byte for byte; a field added to
// hookOutput or hookSpecificOutput fails them until it is written here.
func appendHookOutput(b []byte, o *hookOutput) (_ []byte, ok bool) {
	h := o.HookSpecificOutput
	if h != nil && (h.UpdatedInput != nil || h.UpdatedToolOutput != nil || h.UpdatedMCPToolOutput != nil) {
		return nil, false
	}
	b = append(b, '{')
	first := true
	member := func(name, v string) {
		if v == "" || !ok {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, name...)
		b, ok = appendPlain(b, v)
	}
	ok = true
	if o.Continue != nil {
		first = false
		b = strconv.AppendBool(append(b, `"continue":`...), *o.Continue)
	}
	member(`"stopReason":`, o.StopReason)
	member(`"decision":`, o.Decision)
	member(`"reason":`, o.Reason)
	member(`"systemMessage":`, o.SystemMessage)
	if !ok {
		return nil, false
	}
	if h != nil {
		if !first {
			b = append(b, ',')
		}
		b = append(b, `"hookSpecificOutput":{"hookEventName":`...)
		if b, ok = appendPlain(b, h.HookEventName); !ok {
			return nil, false
		}
		first = false
		member(`"permissionDecision":`, h.PermissionDecision)
		member(`"permissionDecisionReason":`, h.PermissionDecisionReason)
		member(`"additionalContext":`, h.AdditionalContext)
		if !ok {
			return nil, false
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendPlain appends s as a JSON string when encoding/json writes it as
// it is (jsonkind.Plain); ok is false otherwise.
func appendPlain(b []byte, s string) (_ []byte, ok bool) {
	if !jsonkind.Plain(s) {
		return b, false
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
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
