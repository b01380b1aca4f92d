package hooks

import (
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// gemini speaks Gemini CLI's hook protocol (google-gemini/gemini-cli
// docs/hooks/reference.md; checked against Gemini CLI 0.61.0 by
// hooks/hostse2e).
//
// BeforeTool answers with decision "allow", "deny" or "ask" and reason
// (sent to the agent as the tool's error), hookSpecificOutput.tool_input,
// which replaces the model's arguments (the tool is built again from it),
// and continue: false with stopReason to stop the agent loop. An ask makes
// the CLI prompt the user, but a headless run (-p) waits on that prompt until
// it is killed, and the hook's event does not say whether anyone is there to
// answer: an ask is a deny saying approval is needed. AfterTool answers with
// decision "deny", whose reason replaces the output the model sees (as a
// tool error: "Tool result blocked: REASON"), and
// hookSpecificOutput.additionalContext, appended to the output. There is no
// way to replace a result as a success, so a redaction is a deny whose
// reason says the call ran and gives the rewritten output. BeforeAgent (a
// user prompt) starts a turn. Exit code 2 blocks with stderr as the reason.
// Gemini expects JSON on stdout, so every answer is a JSON object, {} when
// there is nothing to say. Hooks run under bash (sh on systems without it).
// BeforeModel (the request about to be sent to the model) is decided by the
// input rules and AfterModel (each response chunk) by the output rules
// (model.go).
type gemini struct {
	opts Options
}

// Name implements Host.
func (*gemini) Name() string { return Gemini }

type geminiOut struct {
	Decision           string     `json:"decision,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Continue           *bool      `json:"continue,omitempty"`
	StopReason         string     `json:"stopReason,omitempty"`
	SystemMessage      string     `json:"systemMessage,omitempty"`
	HookSpecificOutput *geminiHSO `json:"hookSpecificOutput,omitempty"`
}

type geminiHSO struct {
	ToolInput         map[string]any `json:"tool_input,omitempty"`
	AdditionalContext string         `json:"additionalContext,omitempty"`
	// LLMRequest overrides parts of the request to the model (BeforeModel);
	// LLMResponse replaces the model's response chunk (AfterModel).
	LLMRequest  map[string]any `json:"llm_request,omitempty"`
	LLMResponse map[string]any `json:"llm_response,omitempty"`
}

// geminiEvents are Gemini CLI's events.
var geminiEvents = eventProtocol{kinds: map[string]Kind{
	"BeforeTool":   KindBefore,
	"AfterTool":    KindAfter,
	"BeforeAgent":  KindTurnStart,
	"AfterAgent":   KindTurnEnd,
	"BeforeModel":  KindInput,
	"AfterModel":   KindOutput,
	"SessionStart": KindSessionStart,
	"SessionEnd":   KindSessionEnd,
}}

// Decode implements Host.
func (h *gemini) Decode(data []byte) (Event, error) {
	return decodeEvent(h.Name(), data, geminiEvents)
}

// Encode implements Host.
func (h *gemini) Encode(ev Event, d eval.Decision) Response {
	switch ev.Kind {
	case KindBefore:
		return jsonResponse(h.before(ev, d))
	case KindAfter:
		return jsonResponse(h.after(d))
	case KindTurnEnd:
		if d.Verdict == policy.Warn {
			return jsonResponse(geminiOut{SystemMessage: message(d)})
		}
	case KindInput, KindOutput:
		return jsonResponse(h.model(ev, d))
	case KindTurnStart, KindSessionStart:
		if d.Verdict == policy.Warn {
			// Shown to the user, and added to the prompt for the model.
			msg := message(d)
			return jsonResponse(geminiOut{SystemMessage: msg, HookSpecificOutput: &geminiHSO{AdditionalContext: msg}})
		}
	}
	return jsonResponse(struct{}{})
}

func (h *gemini) before(ev Event, d eval.Decision) geminiOut {
	msg := message(d)
	switch d.Verdict {
	case policy.Allow:
		if d.RuleID != "" && h.opts.Approve {
			return geminiOut{Decision: "allow"}
		}
		return geminiOut{}
	case policy.Warn:
		return geminiOut{SystemMessage: msg}
	case policy.Ask:
		return geminiOut{Decision: "deny", Reason: approvalMessage("Gemini CLI", h.opts, ev.SessionID, d)}
	case policy.Modify:
		if d.Args == nil {
			return geminiOut{Decision: "deny", Reason: msg + ": the rewritten arguments are missing"}
		}
		// The whole rewritten arguments: Gemini CLI builds the call again
		// from them, so a key the rewrite removed is gone.
		out := geminiOut{HookSpecificOutput: &geminiHSO{ToolInput: d.Args}}
		if h.opts.Approve {
			out.Decision = "allow"
		}
		return out
	case policy.Block:
		return geminiOut{Decision: "deny", Reason: msg}
	case policy.Halt:
		return geminiOut{Decision: "deny", Reason: msg, Continue: stop(), StopReason: msg}
	}
	return geminiOut{Decision: "deny", Reason: "celguard: unknown verdict " + d.Verdict.String()}
}

// RedactedNote precedes a rewritten output where a host can deliver it only
// as an error (Gemini CLI): the model must not take the call for failed.
const RedactedNote = "The call ran; celguard rewrote its output, which follows.\n"

func (h *gemini) after(d eval.Decision) geminiOut {
	msg := message(d)
	switch d.Verdict {
	case policy.Allow:
		return geminiOut{}
	case policy.Warn:
		return geminiOut{SystemMessage: msg, HookSpecificOutput: &geminiHSO{AdditionalContext: msg}}
	case policy.Modify:
		if d.Content == nil {
			return geminiOut{Decision: "deny", Reason: msg + ": the rewritten output is missing, so it is withheld"}
		}
		// deny's reason replaces the output the model sees.
		if *d.Content == "" {
			return geminiOut{Decision: "deny", Reason: msg + ": the output was rewritten to nothing"}
		}
		return geminiOut{Decision: "deny", Reason: RedactedNote + *d.Content}
	case policy.Block:
		return geminiOut{Decision: "deny", Reason: msg}
	case policy.Halt:
		return geminiOut{Decision: "deny", Reason: msg, Continue: stop(), StopReason: msg}
	}
	return geminiOut{Decision: "deny", Reason: "celguard: unknown verdict " + d.Verdict.String(), Continue: stop()}
}

// Fail implements Host: exit 2 blocks with stderr as the reason; any other
// non-zero exit is a warning and the CLI carries on.
func (h *gemini) Fail(_ Event, reason string, open bool) Response {
	return failExit(reason, open)
}
