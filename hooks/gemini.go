package hooks

import (
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// gemini speaks Gemini CLI's hook protocol (google-gemini/gemini-cli
// docs/hooks/reference.md).
//
// BeforeTool answers with decision "allow" or "deny" and reason (sent to the
// agent as the tool's error), hookSpecificOutput.tool_input, which is merged
// into the model's arguments (Object.assign: it adds and overrides top-level
// keys but cannot remove one), and continue: false with stopReason to stop
// the agent loop. There is no ask. AfterTool answers with decision "deny",
// whose reason replaces the output the model sees, and
// hookSpecificOutput.additionalContext, appended to it. BeforeAgent (a user
// prompt) starts a turn. BeforeModel (the request about to be sent to the
// model) is decided by the input rules and AfterModel (each response chunk)
// by the output rules (model.go). Exit code 2 blocks with stderr as the reason. Gemini
// expects JSON on stdout, so every answer is a JSON object, {} when there is
// nothing to say.
type gemini struct {
	opts Options
}

// Name implements Host.
func (*gemini) Name() string { return "gemini" }

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
		return geminiOut{Decision: "deny", Reason: approvalMessage("Gemini CLI", d)}
	case policy.Modify:
		if d.Args == nil {
			return geminiOut{Decision: "deny", Reason: msg + ": the rewritten arguments are missing"}
		}
		if gone := removedKeys(ev.Call.Args, d.Args); len(gone) > 0 {
			why := "Gemini CLI merges a hook's tool_input into the arguments and cannot remove " + strings.Join(gone, ", ")
			return geminiOut{Decision: "deny", Reason: rewriteMessage("Gemini CLI", d, why)}
		}
		// The whole rewritten arguments: merged over the original ones they
		// give exactly the rewrite, since no key was removed.
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
		return geminiOut{Decision: "deny", Reason: *d.Content}
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
