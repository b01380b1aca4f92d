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
//   - After a call, decision "block" replaces the output the model reads
//     with the reason (Codex 0.169), so a rewrite (a redaction) is block
//     with the rewritten output as the reason, and a block withholds the
//     output with celguard's reason. continue: false is ignored there: the
//     turn goes on, so a halt is a withheld output and the session stays
//     halted, every later call of the turn denied.
//   - Exit code 2 blocks only with a non-empty stderr.
//
// Codex runs matching hooks concurrently; the session state's lock makes
// that safe.
type codex struct{ opts Options }

func (c codex) before(ev Event, d eval.Decision) *hookOutput {
	if d.Verdict == policy.Allow {
		return nil
	}
	msg := message(d)
	out, hso := withOutput(ev)
	switch d.Verdict {
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Ask:
		hso.decide("deny", approvalMessage("Codex", c.opts, ev.SessionID, d))
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
	if d.Verdict == policy.Allow {
		return nil
	}
	msg := message(d)
	out := hookOutput{}
	switch d.Verdict {
	case policy.Warn:
		out.HookSpecificOutput = &hookSpecificOutput{HookEventName: ev.Name, AdditionalContext: msg}
		out.SystemMessage = msg
	case policy.Modify:
		// The reason is what the model reads instead of the output.
		out.Decision = "block"
		switch {
		case d.Content == nil:
			out.Reason = msg + ": the rewritten output is missing, so it is withheld"
		case *d.Content == "":
			out.Reason = msg + ": the output was rewritten to nothing"
		default:
			out.Reason = *d.Content
		}
	case policy.Block:
		out.Decision, out.Reason = "block", msg+". celguard withheld this output"
	case policy.Halt:
		// Codex ignores continue: false after a call; the session stays
		// halted, so every later call of the turn is denied.
		out.Decision, out.Reason = "block", msg+". celguard withheld this output; the turn is halted: every further call in it is refused"
		out.Continue, out.StopReason = stop(), msg
	default:
		out.Decision, out.Reason = "block", "celguard: unknown verdict "+d.Verdict.String()
	}
	return &out
}
