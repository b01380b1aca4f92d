package hooks

import (
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// claude is Claude Code's dialect of the hook protocol it shares with
// Codex (hookSpecificHost; https://code.claude.com/docs/en/hooks).
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

func (h *claude) before(ev Event, d eval.Decision) *hookOutput {
	if d.Verdict == policy.Allow && (d.RuleID == "" || !h.opts.Approve) {
		return nil
	}
	msg := message(d)
	out, hso := withOutput(ev)
	switch d.Verdict {
	case policy.Allow:
		hso.decide("allow", msg)
	case policy.Warn:
		hso.AdditionalContext, out.SystemMessage = msg, msg
	case policy.Ask:
		hso.decide("ask", msg)
		// A rewrite before the ask: the user is shown the rewritten input.
		hso.UpdatedInput = d.Args
	case policy.Modify:
		hso.rewrite(d, msg)
	case policy.Block:
		hso.decide("deny", msg)
	case policy.Halt:
		hso.decide("deny", msg)
		out.Continue, out.StopReason = stop(), msg
	default:
		hso.decide("deny", "celguard: unknown verdict "+d.Verdict.String())
	}
	return &out
}

func (h *claude) after(ev Event, d eval.Decision) *hookOutput {
	if d.Verdict == policy.Allow {
		return nil
	}
	msg := message(d)
	out, hso := withOutput(ev)
	verdict := d.Verdict
	if verdict == policy.Modify && (d.Content == nil || ev.failure) {
		// PostToolUseFailure cannot replace what the model sees, and a
		// rewrite without content cannot be applied: withhold instead.
		verdict = policy.Block
	}
	if verdict == policy.Modify {
		if r, ok := rewriteResponse(ev.response, *d.Content); ok {
			h.setOutput(ev, hso, r)
			return &out
		}
		verdict = policy.Block
	}
	switch verdict {
	case policy.Allow:
		return nil
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
	return &out
}

// setOutput replaces the tool's output: updatedToolOutput, and for MCP
// tools (mcp__server__tool) also updatedMCPToolOutput, which Claude Code
// versions before updatedToolOutput read.
func (h *claude) setOutput(ev Event, hso *hookSpecificOutput, v any) {
	hso.UpdatedToolOutput = v
	if strings.HasPrefix(ev.Call.Tool, "mcp__") {
		hso.UpdatedMCPToolOutput = v
	}
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
