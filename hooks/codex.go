package hooks

import (
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// codex speaks Codex's hook protocol (openai/codex codex-rs/hooks;
// https://developers.openai.com/codex/hooks): Claude Code's wire format with
// differences that decide whether a call runs.
//
//   - permissionDecision "ask" is rejected as unsupported and the call runs,
//     so an ask is a deny whose reason says approval is needed.
//   - "allow" without updatedInput is rejected too (it approves nothing), so
//     an allow is no output at all; a rewrite is allow with updatedInput.
//   - continue: false and stopReason are unsupported before a call (the
//     whole answer is ignored and the call runs), so a halt is a deny; the
//     session stays halted, so every later call of the turn is denied too.
//   - After a call, the output cannot be withheld or replaced, so block and
//     modify stop the turn (continue: false) with the reason as feedback.
//   - Exit code 2 blocks only with a non-empty stderr.
//
// Codex runs matching hooks concurrently; the session state's lock makes
// that safe.
type codex struct {
	claude
}

// Name implements Host.
func (*codex) Name() string { return "codex" }

// Decode implements Host.
func (h *codex) Decode(data []byte) (Event, error) {
	return decodeClaudeLike(h.Name(), data)
}

// Encode implements Host.
func (h *codex) Encode(ev Event, d eval.Decision) Response {
	switch ev.Kind {
	case KindBefore:
		return h.before(ev, d)
	case KindAfter:
		return h.after(ev, d)
	}
	return Response{}
}

func (h *codex) before(ev Event, d eval.Decision) Response {
	msg := message(d)
	hso := &claudeHSO{HookEventName: ev.Name}
	out := claudeOut{HookSpecificOutput: hso}
	switch d.Verdict {
	case policy.Allow:
		return Response{}
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Ask:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", approvalMessage("Codex", d)
	case policy.Modify:
		if d.Args == nil {
			hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg+": the rewritten arguments are missing"
			break
		}
		hso.PermissionDecision, hso.PermissionDecisionReason, hso.UpdatedInput = "allow", msg, d.Args
	case policy.Block:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg
	case policy.Halt:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", msg+". The turn is halted: every further call in it is refused"
		out.SystemMessage = msg
	default:
		hso.PermissionDecision, hso.PermissionDecisionReason = "deny", "celguard: unknown verdict "+d.Verdict.String()
	}
	return jsonResponse(out)
}

func (h *codex) after(ev Event, d eval.Decision) Response {
	msg := message(d)
	out := claudeOut{}
	switch d.Verdict {
	case policy.Allow:
		return Response{}
	case policy.Warn:
		out.HookSpecificOutput = &claudeHSO{HookEventName: ev.Name, AdditionalContext: msg}
		out.SystemMessage = msg
	case policy.Modify:
		reason := clip(msg + ". celguard rewrites this output, but Codex hooks cannot replace a tool's output, so the turn stops")
		out.Decision, out.Reason = "block", reason
		out.Continue, out.StopReason = stop(), reason
	case policy.Block:
		reason := clip(msg + ". celguard withholds this output, but Codex hooks cannot withhold a tool's output, so the turn stops")
		out.Decision, out.Reason = "block", reason
		out.Continue, out.StopReason = stop(), reason
	case policy.Halt:
		out.Decision, out.Reason = "block", msg
		out.Continue, out.StopReason = stop(), msg
	default:
		out.Decision, out.Reason = "block", "celguard: unknown verdict "+d.Verdict.String()
		out.Continue, out.StopReason = stop(), out.Reason
	}
	return jsonResponse(out)
}

// Fail implements Host: exit 2 with a non-empty stderr blocks.
func (h *codex) Fail(_ Event, reason string, open bool) Response {
	return failExit(reason, open)
}
