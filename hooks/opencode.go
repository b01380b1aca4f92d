package hooks

import (
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// opencode speaks the protocol of celguard's OpenCode plugin. OpenCode
// (opencode-ai on npm) has no command hooks: it runs plugins, JavaScript
// modules loaded by the binary from .opencode/plugins/ of the project and
// ~/.config/opencode/plugins/ (@opencode-ai/plugin's Hooks interface,
// checked against OpenCode 1.18.33 by hooks/hostse2e). `celguard hook
// install opencode` writes the plugin (setup.OpencodePlugin), which runs the
// installed command for each event with one JSON object on stdin, as the
// other hosts' command hooks do:
//
//   - "tool.execute.before" (input {tool, sessionID, callID}, output
//     {args}): tool_name, tool_input, tool_use_id. The answer
//     {"decision":"deny","reason"} makes the plugin throw, which OpenCode
//     reports to the model as the tool's error, the call not run;
//     {"decision":"allow","args"} rewrites the arguments in place (a
//     modify). OpenCode's own permission prompt is not reachable from a
//     plugin's hook, so an ask is a deny naming an approval request, as on
//     Codex.
//   - "tool.execute.after" (output {title, output, metadata}): tool_response
//     {output, title}. The answer {"output"} replaces the text the model
//     reads (a redaction, exactly; a block withholds it), {"context"} is
//     appended to it (a warn).
//   - "chat.message": prompt, the user's message; a new turn. The answer
//     {"context"} is appended to the message (the warning of policies that
//     do not compile); a prompt cannot be refused.
//   - "experimental.text.complete" (input {sessionID, messageID, partID},
//     output {text}): text, the model's whole answer once its text part
//     has streamed (the output phase). The answer {"text"} replaces it
//     before OpenCode stores it and before opencode run prints it (a
//     redaction, exactly; a block withholds it). OpenCode's interactive
//     view draws the streamed text as it arrives, before this hook runs.
//   - the event hook's session.created, session.idle and session.deleted:
//     a session starting, the turn ending, the session ending.
//
// celguard's failure answer is exit 2 with the reason on stderr, on which
// the plugin throws (the call refused with the reason) or withholds the
// output; failing open is exit 1, on which it carries on. A command that
// cannot start, or no answer within its timeout, is a failure the plugin
// treats as exit 2: OpenCode refuses the call.
type opencode struct {
	opts Options
}

// opencodeEvents are the events celguard's OpenCode plugin sends.
var opencodeEvents = eventProtocol{
	kinds: map[string]Kind{
		"tool.execute.before":        KindBefore,
		"tool.execute.after":         KindAfter,
		"chat.message":               KindTurnStart,
		"experimental.text.complete": KindOutput,
		"session.created":            KindSessionStart,
		"session.idle":               KindTurnEnd,
		"session.deleted":            KindSessionEnd,
	},
	prompt: "prompt",
	output: "text",
}

// OpencodeEvents are the events the plugin sends, the plugin's hooks and
// session events, for install and doctor.
var OpencodeEvents = []string{"tool.execute.before", "tool.execute.after", "chat.message", "experimental.text.complete", "session.created", "session.idle", "session.deleted"}

type opencodeOut struct {
	Decision string         `json:"decision,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Args     map[string]any `json:"args,omitempty"`
	// Output replaces the tool's output; Context is appended to it.
	Output  *string `json:"output,omitempty"`
	Context string  `json:"context,omitempty"`
	// Text replaces the model's answer (experimental.text.complete).
	Text *string `json:"text,omitempty"`
}

// Name implements Host.
func (*opencode) Name() string { return OpenCode }

// Decode implements Host.
func (h *opencode) Decode(data []byte) (Event, error) {
	return decodeEvent(h.Name(), data, opencodeEvents)
}

// Encode implements Host.
func (h *opencode) Encode(ev Event, d eval.Decision) Response {
	msg := message(d)
	switch ev.Kind {
	case KindBefore:
		return jsonResponse(h.before(ev, d, msg))
	case KindAfter:
		return jsonResponse(h.after(d, msg))
	case KindOutput:
		return jsonResponse(h.output(d, msg))
	case KindTurnStart, KindSessionStart:
		if d.Verdict == policy.Warn && d.Code == CodePoliciesUnavailable {
			// The plugin appends it to the user's message: the model
			// reads it.
			return jsonResponse(opencodeOut{Context: msg})
		}
	}
	return jsonResponse(opencodeOut{})
}

func (h *opencode) before(ev Event, d eval.Decision, msg string) opencodeOut {
	switch d.Verdict {
	case policy.Allow, policy.Warn:
		return opencodeOut{Decision: "allow"}
	case policy.Ask:
		return opencodeOut{Decision: "deny", Reason: approvalMessage("OpenCode", h.opts, ev.SessionID, d)}
	case policy.Modify:
		if d.Args == nil {
			return opencodeOut{Decision: "deny", Reason: msg + ": the rewritten arguments are missing"}
		}
		return opencodeOut{Decision: "allow", Args: d.Args}
	case policy.Block:
		return opencodeOut{Decision: "deny", Reason: msg}
	case policy.Halt:
		return opencodeOut{Decision: "deny", Reason: msg + ". The turn is halted: every further call in it is refused"}
	}
	return opencodeOut{Decision: "deny", Reason: "celguard: unknown verdict " + d.Verdict.String()}
}

func (h *opencode) after(d eval.Decision, msg string) opencodeOut {
	text := func(s string) *string { return &s }
	switch d.Verdict {
	case policy.Allow:
		return opencodeOut{}
	case policy.Warn:
		return opencodeOut{Context: msg}
	case policy.Modify:
		if d.Content == nil {
			return opencodeOut{Output: text(msg + ": the rewritten output is missing, so it is withheld")}
		}
		return opencodeOut{Output: text(*d.Content)}
	case policy.Block:
		return opencodeOut{Output: text(msg + ". celguard withheld this output")}
	case policy.Halt:
		return opencodeOut{Output: text(msg + ". celguard withheld this output; the turn is halted: every further call in it is refused")}
	}
	return opencodeOut{Output: text("celguard: unknown verdict " + d.Verdict.String())}
}

// output answers the model's whole answer: a rewrite replaces it, a
// block or a halt withholds it; a warn has no channel there (OpenCode
// shows nothing beside the answer), so it is an allow.
func (h *opencode) output(d eval.Decision, msg string) opencodeOut {
	text := func(s string) *string { return &s }
	switch d.Verdict {
	case policy.Allow, policy.Warn:
		return opencodeOut{}
	case policy.Modify:
		if d.Output == nil {
			return opencodeOut{Text: text(msg + ": the rewritten answer is missing, so it is withheld")}
		}
		return opencodeOut{Text: text(d.Output.Text)}
	case policy.Block:
		return opencodeOut{Text: text(msg + ". celguard withheld this answer")}
	case policy.Halt:
		return opencodeOut{Text: text(msg + ". celguard withheld this answer; the turn is halted: every further call in it is refused")}
	}
	return opencodeOut{Text: text("celguard: unknown verdict " + d.Verdict.String())}
}

// Fail implements Host: exit 2 with the reason on stderr, on which the
// plugin refuses the call (or withholds the output); failing open is exit
// 1, on which it carries on.
func (h *opencode) Fail(_ Event, reason string, open bool) Response {
	return failExit(reason, open)
}
