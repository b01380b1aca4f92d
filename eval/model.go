package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// Message is one message about to be sent to the model (the input phase).
// Rules read the list as messages: each a map with role, content and name.
type Message struct {
	// Role is the sender's role as the host names it: "system", "user",
	// "assistant", "tool", ...
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
	// Name is the sender's name where the host gives one, "" otherwise.
	Name string `json:"name,omitempty"`
}

// Input is what the input phase decides: the messages about to be sent to
// the model, and who sends them.
type Input struct {
	// Messages are the messages, in order.
	Messages []Message `json:"messages"`
	// Agent is the agent about to call the model (rules read agent).
	Agent Agent `json:"agent,omitzero"`
	// ID is the host's id of the model call, "" when it has none (rules
	// read call.id; the Decision echoes it).
	ID string `json:"call_id,omitempty"`
}

// Output is what the output phase decides: the model's output before it is
// returned, and whose it is.
type Output struct {
	// Text is the output's text.
	Text string `json:"text"`
	// Content is its structured content (JSON data), nil when there is none.
	Content any `json:"content,omitempty"`
	// Agent is the agent whose model call it is.
	Agent Agent `json:"agent,omitzero"`
	// ID is the host's id of the model call, "" when it has none.
	ID string `json:"call_id,omitempty"`
}

// ModelOutput is a model's output as rules read it (output.text,
// output.content) and as a modify rule rewrites it (Decision.Output).
type ModelOutput struct {
	Text    string `json:"text"`
	Content any    `json:"content"`
}

// Input decides the messages about to be sent to the model: the rules with
// phase input run with no call (tool, args and cwd are empty; rules read
// messages, call.id, agent, session, and counters as at turn end, each the
// turn's total). They may allow, warn, block (the model call does not
// happen; as Prompty's denial, the turn fails), halt, or modify: a modify
// Decision carries the whole rewritten list in Messages. No rule matching
// allows (the set's default verdict is for tool calls). No counter counts.
// A halted turn refuses its input too.
func (s *Session) Input(ctx context.Context, in Input, opts ...CallOption) (Decision, error) {
	for i, m := range in.Messages {
		if m.Role == "" {
			d := refusal(policy.PhaseInput, "", CodeInvalidCall, fmt.Sprintf("message %d has no role", i), nil)
			return s.finish(ctx, s.eng.set.Load(), d, fmt.Errorf("eval: input message %d without a role", i), Call{ID: in.ID, Agent: in.Agent}, &modelIO{messages: in.Messages}, s.sinkStart())
		}
	}
	return s.decideModel(ctx, policy.PhaseInput, Call{ID: in.ID, Agent: in.Agent}, &modelIO{messages: slices.Clone(in.Messages)}, opts)
}

// Output decides the model's output before it is returned, as Input
// decides its input: the rules with phase output read output (text and
// content); a modify Decision carries the rewritten output in Output.
func (s *Session) Output(ctx context.Context, out Output, opts ...CallOption) (Decision, error) {
	content, err := jsonValue(out.Content)
	if err != nil {
		d := refusal(policy.PhaseOutput, "", CodeInvalidCall, "the output's content is not JSON data: "+err.Error(), nil)
		return s.finish(ctx, s.eng.set.Load(), d, fmt.Errorf("eval: output content: %w", err), Call{ID: out.ID, Agent: out.Agent}, &modelIO{output: &ModelOutput{Text: out.Text}}, s.sinkStart())
	}
	return s.decideModel(ctx, policy.PhaseOutput, Call{ID: out.ID, Agent: out.Agent}, &modelIO{output: &ModelOutput{Text: out.Text, Content: content}}, opts)
}

// modelIO is what a phase without a call decides on: messages (input),
// output (output), a tool's definition (tools) or a read (resource).
type modelIO struct {
	messages []Message
	output   *ModelOutput
	tool     *ToolDefinition
	resource *Resource
}

// clone copies what a rewrite may replace, so that comparing before and
// after a rewrite is sound.
func (m *modelIO) clone() modelIO {
	c := modelIO{messages: slices.Clone(m.messages)}
	if m.output != nil {
		o := *m.output
		c.output = &o
	}
	if m.tool != nil {
		t := *m.tool
		c.tool = &t
	}
	c.resource = m.resource // never rewritten
	return c
}

// decideModel decides an input or output.
func (s *Session) decideModel(ctx context.Context, phase policy.Phase, call Call, io *modelIO, opts []CallOption) (Decision, error) {
	start := s.sinkStart()
	ctx, _ = s.withNotes(ctx)
	set := s.eng.set.Load()
	orig := io.clone()
	d, err := s.be.decide(ctx, s, set, phase, call, nil, io, opts)
	return s.finish(ctx, set, d, err, call, &orig, start)
}

// jsonValue checks that v is JSON data (what encoding/json decodes into:
// nil, bool, float64, string, []any, map[string]any, and the numbers and
// typed slices and maps a Go host may hand) and returns it as such.
func jsonValue(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	val := types.DefaultTypeAdapter.NativeToValue(v)
	if types.IsError(val) || types.IsUnknown(val) {
		return nil, fmt.Errorf("%v", val)
	}
	return toNative(val, 0)
}

// messagesValue is messages as CEL reads them: maps of role, content and
// name.
func messagesValue(ms []Message) []map[string]string {
	out := make([]map[string]string, len(ms))
	for i, m := range ms {
		out[i] = map[string]string{"role": m.Role, "content": m.Content, "name": m.Name}
	}
	return out
}

// outputValue is output as CEL reads it: text and content.
func outputValue(o *ModelOutput) map[string]any {
	return map[string]any{"text": o.Text, "content": o.Content}
}

// rewriteModel applies a modify rule of the input or output phase.
func (ev *evaluation) rewriteModel(r *compile.Rule) error {
	m := r.Modify
	switch ev.phase {
	case policy.PhaseTools:
		return ev.rewriteDescription(r)
	case policy.PhaseInput:
		if m.Messages == nil {
			return errors.New("input-phase modify without messages")
		}
		out, err := ev.eval(r.Policy, m.Messages)
		if err != nil {
			return fmt.Errorf("modify.messages: %w", err)
		}
		native, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.messages: %w", err)
		}
		msgs, err := messagesOf(native)
		if err != nil {
			return fmt.Errorf("modify.messages: %w", err)
		}
		ev.io.messages = msgs
	case policy.PhaseOutput:
		if m.Output == nil {
			return errors.New("output-phase modify without output")
		}
		out, err := ev.eval(r.Policy, m.Output)
		if err != nil {
			return fmt.Errorf("modify.output: %w", err)
		}
		native, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.output: %w", err)
		}
		o, err := outputOf(native)
		if err != nil {
			return fmt.Errorf("modify.output: %w", err)
		}
		ev.io.output = o
	default:
		return fmt.Errorf("no model rewrite in the %s phase", ev.phase)
	}
	return nil
}

// messagesOf reads a rewritten message list: maps with a role and a content
// (strings) and optionally a name (a string). Any other key is an error, so
// that a typo cannot drop what it meant to set.
func messagesOf(v any) ([]Message, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of messages, got %T", v)
	}
	out := make([]Message, 0, len(list))
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("message %d: want a map with role and content, got %T", i, x)
		}
		var msg Message
		for k, val := range m {
			s, isStr := val.(string)
			if !isStr {
				return nil, fmt.Errorf("message %d: %s must be a string, not %T", i, k, val)
			}
			switch k {
			case "role":
				msg.Role = s
			case "content":
				msg.Content = s
			case "name":
				msg.Name = s
			default:
				return nil, fmt.Errorf("message %d: unknown key %q (want role, content, name)", i, k)
			}
		}
		if msg.Role == "" {
			return nil, fmt.Errorf("message %d has no role", i)
		}
		out = append(out, msg)
	}
	return out, nil
}

// outputOf reads a rewritten output: a string (the text, with no structured
// content left) or a map with text (a string) and optionally content.
func outputOf(v any) (*ModelOutput, error) {
	switch x := v.(type) {
	case string:
		return &ModelOutput{Text: x}, nil
	case map[string]any:
		o := &ModelOutput{}
		for k, val := range x {
			switch k {
			case "text":
				s, ok := val.(string)
				if !ok {
					return nil, fmt.Errorf("text must be a string, not %T", val)
				}
				o.Text = s
			case "content":
				o.Content = val
			default:
				return nil, fmt.Errorf("unknown key %q (want text, content)", k)
			}
		}
		if _, ok := x["text"]; !ok {
			return nil, errors.New("the output map has no text")
		}
		return o, nil
	}
	return nil, fmt.Errorf("want a string or a map with text and content, got %T", v)
}
