package hooks

import (
	"fmt"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// The model's input and output (eval.Session.Input and Output): the user's
// prompt where a host sends it with the turn's start (Claude Code's and
// Codex's UserPromptSubmit, Cursor's beforeSubmitPrompt), and Gemini CLI's
// BeforeModel and AfterModel. A host that cannot rewrite what the rules
// rewrite refuses it instead, as for a call.

// decodeModel reads the model's input or output from the event: the prompt
// of a turn start (p.prompt), Gemini's llm_request (BeforeModel) and
// llm_response (AfterModel).
func decodeModel(ev *Event, m map[string]any, p eventProtocol) error {
	var err error
	switch ev.Kind {
	case KindTurnStart:
		if p.prompt != "" {
			ev.Messages, err = promptMessages(m, p.prompt)
		}
	case KindInput:
		ev.Messages, err = geminiMessages(m)
	case KindOutput:
		if p.output != "" {
			if _, ok := m[p.output]; !ok {
				return fmt.Errorf("the %s event has no %s", ev.Name, p.output)
			}
			var text string
			if text, err = str(m, p.output); err == nil {
				ev.Output = &eval.Output{Text: text}
			}
			return err
		}
		ev.response = m["llm_response"]
		var text string
		if text, err = geminiResponseText(ev.response); err == nil {
			ev.Output = &eval.Output{Text: text}
		}
	}
	return err
}

// promptMessages reads the user's prompt under key as one user message;
// nil when the event has none (the turn starts, no input rule runs).
func promptMessages(m map[string]any, key string) ([]eval.Message, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s must be a string, not %T", key, v)
	}
	return []eval.Message{{Role: "user", Content: s}}, nil
}

// geminiMessages reads llm_request.messages: role "user", "model" or
// "system" (the model's own messages read as role "assistant", as other
// hosts name them) and content, a string.
func geminiMessages(m map[string]any) ([]eval.Message, error) {
	req, ok := m["llm_request"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a BeforeModel event needs an llm_request object")
	}
	list, ok := req["messages"].([]any)
	if !ok && req["messages"] != nil {
		return nil, fmt.Errorf("llm_request.messages must be an array")
	}
	out := make([]eval.Message, 0, len(list))
	for i, x := range list {
		msg, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("llm_request.messages[%d] must be an object", i)
		}
		role, err := str(msg, "role")
		if err != nil {
			return nil, fmt.Errorf("llm_request.messages[%d]: %w", i, err)
		}
		content, err := str(msg, "content")
		if err != nil {
			return nil, fmt.Errorf("llm_request.messages[%d]: %w", i, err)
		}
		if role == "" {
			return nil, fmt.Errorf("llm_request.messages[%d] has no role", i)
		}
		if role == "model" {
			role = "assistant"
		}
		out = append(out, eval.Message{Role: role, Content: content})
	}
	return out, nil
}

// geminiResponseText is the text of llm_response: its text, else the text
// parts of its candidates, joined.
func geminiResponseText(v any) (string, error) {
	resp, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("an AfterModel event needs an llm_response object")
	}
	if s, ok := resp["text"].(string); ok {
		return s, nil
	}
	var b strings.Builder
	cands, _ := resp["candidates"].([]any)
	for _, c := range cands {
		cm, _ := c.(map[string]any)
		content, _ := cm["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		for _, p := range parts {
			if s, ok := p.(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String(), nil
}

// modelRefusal is the reason a prompt is refused for: the rule's, and for
// a rewrite the host cannot apply, why.
func modelRefusal(host string, d eval.Decision) string {
	if d.Verdict == policy.Modify {
		return clip(message(d) + ". celguard rewrites this prompt, but " + host + " hooks cannot rewrite a prompt, so it was refused: edit the prompt and send it again")
	}
	return message(d)
}

// prompt answers a user prompt (UserPromptSubmit) in the hook protocol
// Claude Code and Codex share: nothing for allow, a systemMessage for warn;
// a prompt that is refused (block, halt, or a rewrite neither host can
// apply) is exit code 2 with the reason on stderr, which both honour by
// dropping the prompt.
func (h *hookSpecificHost) prompt(d eval.Decision) Response {
	switch d.Verdict {
	case policy.Allow:
		return Response{}
	case policy.Warn:
		return jsonResponse(hookOutput{SystemMessage: message(d)})
	}
	host := "Claude Code"
	if h.name == Codex {
		host = "Codex"
	}
	return Response{Stderr: modelRefusal(host, d) + "\n", Exit: 2}
}

// cursorPrompt answers beforeSubmitPrompt: continue, with user_message for
// a warn; continue false for a refused prompt (block, halt, a rewrite
// Cursor cannot apply).
func cursorPrompt(ev Event, d eval.Decision) cursorContinue {
	switch {
	case d.Verdict == policy.Warn:
		// An input rule's warning, or the policies could not be loaded
		// (CodePoliciesUnavailable): the prompt goes on, the user is told.
		return cursorContinue{Continue: true, UserMessage: message(d)}
	case ev.Messages == nil, d.Verdict == policy.Allow:
		return cursorContinue{Continue: true}
	}
	return cursorContinue{Continue: false, UserMessage: modelRefusal("Cursor", d)}
}

// model answers BeforeModel and AfterModel: decision "deny" aborts the turn
// (the request is not sent, the response is discarded), continue false
// also stops the agent loop (halt); a rewrite of the input overrides
// llm_request.messages (Gemini merges the texts back into the request), a
// rewrite of the output replaces the response chunk with its text.
func (h *gemini) model(ev Event, d eval.Decision) geminiOut {
	msg := message(d)
	if ev.chunk != nil && ev.Output != nil && (d.Verdict == policy.Allow || d.Verdict == policy.Warn || d.Verdict == policy.Modify && d.Output != nil) {
		// Decided across chunks (geministream.go): the chunk's text is
		// replaced with the slice of the decided answer to release.
		out := geminiOut{}
		if d.Verdict == policy.Warn {
			out.SystemMessage = msg
		}
		if release := ev.Output.Text; release != *ev.chunk || d.Verdict == policy.Modify {
			out.HookSpecificOutput = &geminiHSO{LLMResponse: geminiResponse(ev.response, release)}
		}
		return out
	}
	switch d.Verdict {
	case policy.Allow:
		return geminiOut{}
	case policy.Warn:
		return geminiOut{SystemMessage: msg}
	case policy.Modify:
		if ev.Kind == KindInput && d.Messages != nil {
			msgs := make([]any, len(d.Messages))
			for i, m := range d.Messages {
				role := m.Role
				if role == "assistant" {
					role = "model"
				}
				msgs[i] = map[string]any{"role": role, "content": m.Content}
			}
			return geminiOut{HookSpecificOutput: &geminiHSO{LLMRequest: map[string]any{"messages": msgs}}}
		}
		if ev.Kind == KindOutput && d.Output != nil {
			return geminiOut{HookSpecificOutput: &geminiHSO{LLMResponse: geminiResponse(ev.response, d.Output.Text)}}
		}
		return geminiOut{Decision: "deny", Reason: msg + ": the rewrite is missing, so it was refused"}
	case policy.Block:
		return geminiOut{Decision: "deny", Reason: msg}
	case policy.Halt:
		return geminiOut{Decision: "deny", Reason: msg, Continue: stop(), StopReason: msg}
	}
	return geminiOut{Decision: "deny", Reason: "celguard: unknown verdict " + d.Verdict.String(), Continue: stop()}
}

// geminiResponse is a response chunk with text as its only content,
// keeping the first candidate's finishReason and index.
func geminiResponse(orig any, text string) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{text}}}
	if resp, ok := orig.(map[string]any); ok {
		if cands, ok := resp["candidates"].([]any); ok && len(cands) > 0 {
			if c, ok := cands[0].(map[string]any); ok {
				for _, k := range []string{"finishReason", "index"} {
					if v, ok := c[k]; ok {
						cand[k] = v
					}
				}
			}
		}
	}
	return map[string]any{"text": text, "candidates": []any{cand}}
}
