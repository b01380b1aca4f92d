package hooks

import (
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// codex is Codex's dialect of the hook protocol it shares with Claude Code
// (hookSpecificHost; openai/codex codex-rs/hooks;
// https://developers.openai.com/codex/hooks), with differences that decide
// whether a call runs.
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
type codex struct{ opts Options }

func (c codex) before(ev Event, d eval.Decision) *hookOutput {
	msg := message(d)
	out, hso := withOutput(ev)
	switch d.Verdict {
	case policy.Allow:
		return nil
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Ask:
		hso.decide("deny", approvalMessage("Codex", c.opts.ApproveCommand, d))
	case policy.Modify:
		hso.rewrite(d, msg)
	case policy.Block:
		hso.decide("deny", msg)
	case policy.Halt:
		hso.decide("deny", msg+". The turn is halted: every further call in it is refused")
		out.SystemMessage = msg
	default:
		hso.decide("deny", "celguard: unknown verdict "+d.Verdict.String())
	}
	return &out
}

func (codex) after(ev Event, d eval.Decision) *hookOutput {
	msg := message(d)
	out := hookOutput{}
	switch d.Verdict {
	case policy.Allow:
		return nil
	case policy.Warn:
		out.HookSpecificOutput = &hookSpecificOutput{HookEventName: ev.Name, AdditionalContext: msg}
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
	return &out
}
