package hooks

import (
	"encoding/json"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// copilot speaks GitHub Copilot CLI's hook protocol (github/docs
// content/copilot/reference/hooks-reference.md; checked against Copilot CLI
// 1.0.102 by hooks/hostse2e).
//
// celguard registers the PascalCase events (PreToolUse, PostToolUse,
// PostToolUseFailure, UserPromptSubmit, Stop, SessionStart, SessionEnd),
// whose payloads are the "VS Code compatible" format: hook_event_name,
// session_id, cwd, tool_name as Claude Code names the tool (Bash, Read,
// Edit, ...: policies written for Claude Code apply as they are) and
// tool_input, parsed from a JSON string when it is one; after a call
// tool_result {result_type, text_result_for_llm}, after a failed call
// error. (The camelCase events carry no event name, which a command that
// serves every event needs.)
//
// Before a call the answer is permissionDecision allow, deny or ask with
// permissionDecisionReason, and modifiedArgs, the arguments to use instead
// (a rewrite is allow with modifiedArgs). Copilot CLI has its own permission
// prompt, so an ask is its ask. There is no way to stop the agent before a
// call, so a halt is a deny and the session stays halted (every later call
// of the turn is denied). After a call modifiedResult {resultType:
// "success", textResultForLlm} replaces the output the model reads (a
// redaction, exactly; a block withholds it with the reason) and
// additionalContext is appended to it (a warn). UserPromptSubmit's answer
// is dropped by the CLI for command hooks, so a prompt cannot be refused:
// it starts a turn. A Stop answer of decision "block" would force another
// turn, so turn end answers nothing. SessionStart carries the warning of
// policies that do not compile as additionalContext.
//
// A PreToolUse command hook that exits non-zero (2 or any other) denies
// the call, and one that times out lets it through: celguard's failure
// answer is exit 2 with the reason on stderr, and failing open is exit 0
// with no answer.
type copilot struct {
	opts Options
}

// copilotEvents are the PascalCase events of Copilot CLI.
var copilotEvents = eventProtocol{
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
}

type copilotOut struct {
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	ModifiedArgs             map[string]any `json:"modifiedArgs,omitempty"`
	ModifiedResult           *copilotResult `json:"modifiedResult,omitempty"`
	AdditionalContext        string         `json:"additionalContext,omitempty"`
}

type copilotResult struct {
	ResultType       string `json:"resultType"`
	TextResultForLlm string `json:"textResultForLlm"`
}

// Name implements Host.
func (*copilot) Name() string { return Copilot }

// Decode implements Host.
func (h *copilot) Decode(data []byte) (Event, error) {
	m, err := decodeObject(data)
	if err != nil {
		return Event{}, err
	}
	// tool_input arrives parsed "when possible": a string that is a JSON
	// object is that object.
	if s, ok := m["tool_input"].(string); ok {
		var v map[string]any
		if json.Unmarshal([]byte(s), &v) == nil && v != nil {
			m["tool_input"] = v
		}
	}
	if r, ok := m["tool_result"]; ok {
		m["tool_response"] = r
		delete(m, "tool_result")
	}
	data, err = json.Marshal(m)
	if err != nil {
		return Event{}, err
	}
	ev, err := decodeEvent(h.Name(), data, copilotEvents)
	if err != nil {
		return Event{}, err
	}
	if ev.Kind == KindAfter && !ev.failure {
		if r, ok := ev.response.(map[string]any); ok {
			text, _ := r["text_result_for_llm"].(string)
			typ, _ := r["result_type"].(string)
			ev.Result = eval.Result{Content: text, IsError: typ != "" && typ != "success", Fields: map[string]any{"response": r}}
		}
	}
	return ev, nil
}

// Encode implements Host.
func (h *copilot) Encode(ev Event, d eval.Decision) Response {
	msg := message(d)
	switch ev.Kind {
	case KindBefore:
		return jsonResponse(h.before(d, msg))
	case KindAfter:
		out, ok := h.after(ev, d, msg)
		if !ok {
			return Response{}
		}
		return jsonResponse(out)
	case KindSessionStart, KindTurnStart:
		if d.Verdict == policy.Warn && d.Code == CodePoliciesUnavailable {
			// SessionStart's additionalContext reaches the model; the
			// CLI drops UserPromptSubmit's answer.
			return jsonResponse(copilotOut{AdditionalContext: msg})
		}
	}
	return Response{}
}

func (h *copilot) before(d eval.Decision, msg string) copilotOut {
	switch d.Verdict {
	case policy.Allow:
		if d.RuleID == "" || !h.opts.Approve {
			return copilotOut{}
		}
		return copilotOut{PermissionDecision: "allow", PermissionDecisionReason: msg}
	case policy.Warn:
		// No field of PreToolUse shows a message without deciding.
		return copilotOut{}
	case policy.Ask:
		return copilotOut{PermissionDecision: "ask", PermissionDecisionReason: msg, ModifiedArgs: d.Args}
	case policy.Modify:
		if d.Args == nil {
			return copilotOut{PermissionDecision: "deny", PermissionDecisionReason: msg + ": the rewritten arguments are missing"}
		}
		return copilotOut{PermissionDecision: "allow", PermissionDecisionReason: msg, ModifiedArgs: d.Args}
	case policy.Block:
		return copilotOut{PermissionDecision: "deny", PermissionDecisionReason: msg}
	case policy.Halt:
		return copilotOut{PermissionDecision: "deny", PermissionDecisionReason: msg + ". The turn is halted: every further call in it is refused"}
	}
	return copilotOut{PermissionDecision: "deny", PermissionDecisionReason: "celguard: unknown verdict " + d.Verdict.String()}
}

// after answers a call that ran; ok is false for no answer.
func (h *copilot) after(ev Event, d eval.Decision, msg string) (copilotOut, bool) {
	verdict := d.Verdict
	if verdict == policy.Modify && d.Content == nil {
		verdict = policy.Block
	}
	if ev.failure && (verdict == policy.Modify || verdict == policy.Block || verdict == policy.Halt) {
		// PostToolUseFailure cannot replace the error the model reads:
		// the strongest answer left is to say why it must not be used.
		return copilotOut{AdditionalContext: msg + ". celguard withholds this output: do not use it"}, true
	}
	switch verdict {
	case policy.Allow:
		return copilotOut{}, false
	case policy.Warn:
		return copilotOut{AdditionalContext: msg}, true
	case policy.Modify:
		return copilotOut{ModifiedResult: &copilotResult{ResultType: "success", TextResultForLlm: *d.Content}}, true
	case policy.Block:
		return copilotOut{ModifiedResult: &copilotResult{ResultType: "success", TextResultForLlm: msg + ". celguard withheld this output"}}, true
	case policy.Halt:
		return copilotOut{ModifiedResult: &copilotResult{ResultType: "success",
			TextResultForLlm: msg + ". celguard withheld this output; the turn is halted: every further call in it is refused"}}, true
	}
	return copilotOut{ModifiedResult: &copilotResult{ResultType: "success", TextResultForLlm: "celguard: unknown verdict " + d.Verdict.String()}}, true
}

// Fail implements Host: a deny with the reason on stdout and exit 2, which
// Copilot CLI takes as a deny before a call whatever stdout says, merging
// stdout's JSON into it, so that the model reads the reason (stderr alone
// reaches the user, and the model reads "hook errored"); the reason is on
// stderr too. Failing open is exit 0 with no answer (a PreToolUse hook's
// non-zero exit, any, denies).
func (h *copilot) Fail(_ Event, reason string, open bool) Response {
	if open {
		return Response{Stderr: clip("celguard (failing open): "+reason) + "\n"}
	}
	r := failExit(reason, false)
	out := jsonResponse(copilotOut{PermissionDecision: "deny", PermissionDecisionReason: strings.TrimSpace(r.Stderr)})
	r.Stdout = out.Stdout
	return r
}
