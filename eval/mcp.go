package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// ToolDefinition is what the tools phase decides: one tool a client is
// about to be shown (an MCP server's tools/list), and to whom.
type ToolDefinition struct {
	// Tool is the tool's name as the policy sees it (rules read tool and
	// match it), e.g. mcp__fs__write_file.
	Tool string `json:"tool"`
	// Name is the server's own name for the tool (definition.name).
	Name string `json:"name"`
	// Title and Description are the tool's, "" when it has none.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's input JSON Schema (JSON data), nil when it
	// has none.
	InputSchema any `json:"input_schema,omitempty"`
	// Agent is the agent the tool would be shown to.
	Agent Agent `json:"agent,omitzero"`
}

// Resource kinds: what a resource-phase read reads.
const (
	KindResource = "resource"
	KindPrompt   = "prompt"
)

// Resource is what the resource phase decides: a read of an MCP resource
// (resources/read) or prompt (prompts/get), and whose.
type Resource struct {
	// Server is the MCP server's name (resource.server).
	Server string `json:"server"`
	// Kind is KindResource or KindPrompt.
	Kind string `json:"kind"`
	// URI is the resource's URI; "" for a prompt.
	URI string `json:"uri,omitempty"`
	// Name is the prompt's name; "" for a resource.
	Name string `json:"name,omitempty"`
	// Arguments are the prompt's arguments.
	Arguments map[string]string `json:"arguments,omitempty"`
	// Agent is the agent that reads.
	Agent Agent `json:"agent,omitzero"`
}

// Tools decides whether a client is shown one tool, and how: the rules of
// phase tools run with no call (rules read tool, the name the policy sees,
// classes, definition, agent, session, and counters as at turn end, each
// the turn's total). Allow and warn show the tool; block hides it (a host
// must then also refuse its calls: the tool was not offered); modify shows
// it with the description the rule computes, in Decision.Description. No
// rule matching allows (the set's default verdict is for tool calls). No
// counter counts. A halted turn hides every tool.
func (s *Session) Tools(ctx context.Context, t ToolDefinition, opts ...CallOption) (Decision, error) {
	call := Call{Tool: t.Tool, Agent: t.Agent}
	if t.Tool == "" {
		d := refusal(policy.PhaseTools, "", CodeInvalidCall, "the tool has no name", nil)
		return s.finish(ctx, s.eng.set.Load(), d, errors.New("eval: tools phase without a tool name"), call, nil, s.sinkStart())
	}
	schema, err := jsonValue(t.InputSchema)
	if err != nil {
		d := refusal(policy.PhaseTools, t.Tool, CodeInvalidCall, "the tool's input schema is not JSON data: "+err.Error(), nil)
		return s.finish(ctx, s.eng.set.Load(), d, fmt.Errorf("eval: input schema: %w", err), call, nil, s.sinkStart())
	}
	def := t
	def.InputSchema = schema
	return s.decideModel(ctx, policy.PhaseTools, call, &modelIO{tool: &def}, opts)
}

// Resource decides a read of a resource or a prompt before it reaches its
// server: the rules of phase resource run with no call (rules read
// resource, agent, session, and counters as at turn end). Allow and warn
// let the read through; block refuses it; halt refuses it and halts the
// turn; ask is settled as a call's ask is (the approver, a remembered
// approval). A rule that lets it through may add session labels (a read
// of content from outside marks the session). No rule matching allows. No
// counter counts.
func (s *Session) Resource(ctx context.Context, r Resource, opts ...CallOption) (Decision, error) {
	call := Call{Agent: r.Agent}
	rc := r
	rc.Arguments = maps.Clone(r.Arguments)
	if r.Kind != KindResource && r.Kind != KindPrompt {
		d := refusal(policy.PhaseResource, "", CodeInvalidCall, fmt.Sprintf("a read's kind is %q, not %q or %q", r.Kind, KindResource, KindPrompt), nil)
		return s.finish(ctx, s.eng.set.Load(), d, errors.New("eval: resource read of an unknown kind"), call, &modelIO{resource: &rc}, s.sinkStart())
	}
	return s.decideModel(ctx, policy.PhaseResource, call, &modelIO{resource: &rc}, opts)
}

// definitionValue is definition as CEL reads it.
func definitionValue(t *ToolDefinition) map[string]any {
	schema := t.InputSchema
	if schema == nil {
		schema = map[string]any{}
	}
	return map[string]any{"name": t.Name, "title": t.Title, "description": t.Description, "input_schema": schema}
}

// resourceValue is resource as CEL reads it.
func resourceValue(r *Resource) map[string]any {
	args := r.Arguments
	if args == nil {
		args = map[string]string{}
	}
	return map[string]any{"server": r.Server, "kind": r.Kind, "uri": r.URI, "name": r.Name, "arguments": args}
}

// rewriteDescription applies a modify rule of the tools phase.
func (ev *evaluation) rewriteDescription(r *compile.Rule) error {
	if r.Modify.Description == nil || ev.io == nil || ev.io.tool == nil {
		return errors.New("tools-phase modify without description")
	}
	out, err := ev.eval(r.Policy, r.Modify.Description)
	if err != nil {
		return fmt.Errorf("modify.description: %w", err)
	}
	s, ok := out.(types.String)
	if !ok {
		return fmt.Errorf("modify.description returned %s, not a string", out.Type())
	}
	t := *ev.io.tool
	t.Description = string(s)
	ev.io.tool = &t
	return nil
}
