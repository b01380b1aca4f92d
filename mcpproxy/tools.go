package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// addTool offers t, as up defines it, with the deciding handler.
func (p *Proxy) addTool(up *upstream, t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if t.InputSchema == nil {
		return errors.New("no input schema")
	}
	name := p.clientName(up, t.Name)
	p.mu.Lock()
	et, dup := p.tools[name]
	p.mu.Unlock()
	if dup && et.up != up {
		return fmt.Errorf("another upstream offers a tool named %s", name)
	}
	offered := *t
	offered.Name = name
	p.server.AddTool(&offered, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return p.call(ctx, req, up, t)
	})
	p.mu.Lock()
	p.tools[name] = &exposedTool{up: up, tool: t}
	p.mu.Unlock()
	return nil
}

// visibility is the receiving middleware that applies the tools phase to
// tools/list: each tool is decided for the client's session and agent; a
// hidden one (block), and one whose definition changed since it was
// pinned, is left out, a rewritten one shown with its new description.
func (p *Proxy) visibility(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil {
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		cs := p.session(ss)
		sess, err := p.evalSession(cs)
		if err != nil {
			// No session, no decision: nothing is shown.
			p.log.Warn("tools/list refused", "error", err)
			return nil, fmt.Errorf("celguard: %v (code %s)", err, CodeNoSession)
		}
		// One decision per tool, one record per list (eval's ToolList): a
		// tool no rule decided anything about is counted, not logged.
		tools := make([]*mcp.Tool, 0, len(list.Tools))
		defs := make([]eval.ToolDefinition, 0, len(list.Tools))
		exposed := make([]*exposedTool, 0, len(list.Tools))
		for _, t := range list.Tools {
			p.mu.Lock()
			et := p.tools[t.Name]
			p.mu.Unlock()
			if et == nil || p.pins.isChanged(et.up.name, et.tool.Name) {
				continue
			}
			tools, exposed = append(tools, t), append(exposed, et)
			defs = append(defs, definition(et, cs.agent))
		}
		start := time.Now()
		ds, ld, _ := sess.ToolList(ctx, defs)
		for _, d := range ds {
			if d.RuleID != "" {
				p.decided(d, start)
			}
		}
		p.decided(ld, start)
		if !ld.Allowed() {
			// The list's record could not be written: nothing is shown.
			return nil, fmt.Errorf("%s (code %s)", message(ld), ld.Code)
		}
		shown := make([]*mcp.Tool, 0, len(tools))
		for i, t := range tools {
			d, et := ds[i], exposed[i]
			if !d.Allowed() {
				continue
			}
			rewritable := t.OutputSchema != nil && p.mayRewriteResult(ToolName(et.up.name, et.tool.Name))
			if d.Description != nil || rewritable {
				c := *t
				if d.Description != nil {
					c.Description = *d.Description
				}
				if rewritable {
					// A rewritten result is text alone (the structured copy
					// may hold what was redacted): a client that checks
					// results against the output schema would refuse it.
					c.OutputSchema = nil
				}
				t = &c
			}
			shown = append(shown, t)
		}
		out := *list
		out.Tools = shown
		return &out, nil
	}
}

// mayRewriteResult reports whether a rule of the set in force may rewrite
// the result of tool (an after-phase modify of its content).
func (p *Proxy) mayRewriteResult(tool string) bool {
	set := p.guard.Engine().PolicySet()
	for _, rules := range [][]*compile.Rule{set.Candidates(policy.PhaseAfter, tool), set.UntrustedCandidates(policy.PhaseAfter, tool)} {
		for _, r := range rules {
			if r.Verdict == policy.Modify && r.Modify != nil && r.Modify.Content != nil {
				return true
			}
		}
	}
	return false
}

// definition is et as the tools phase reads it, for agent.
func definition(et *exposedTool, agent eval.Agent) eval.ToolDefinition {
	var schema any
	if raw, err := json.Marshal(et.tool.InputSchema); err == nil {
		_ = json.Unmarshal(raw, &schema)
	}
	return eval.ToolDefinition{
		Tool: ToolName(et.up.name, et.tool.Name), Name: et.tool.Name, Title: et.tool.Title,
		Description: et.tool.Description, InputSchema: schema, Agent: agent,
	}
}

// decideVisibility decides whether sess (of agent) is shown et (the tools
// phase), for a call of it: logged only when a rule decided about it.
func (p *Proxy) decideVisibility(ctx context.Context, sess *eval.Session, agent eval.Agent, et *exposedTool) (eval.Decision, error) {
	return sess.ToolVisible(ctx, definition(et, agent))
}

// call decides one tools/call before and after the upstream runs it.
func (p *Proxy) call(ctx context.Context, req *mcp.CallToolRequest, up *upstream, t *mcp.Tool) (*mcp.CallToolResult, error) {
	tool := t.Name
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return refusal(fmt.Sprintf("celguard: the arguments of %s are not a JSON object (code %s)", tool, CodeInvalidArguments)), nil
		}
	}
	if p.pins.isChanged(up.name, tool) {
		return p.changedRefusal(up, tool), nil
	}
	cs := p.session(req.Session)
	sess, err := p.evalSession(cs)
	if err != nil {
		return refusal(fmt.Sprintf("celguard: %v, so the call was refused (code %s)", err, CodeNoSession)), nil
	}
	vd, err := p.decideVisibility(ctx, sess, cs.agent, &exposedTool{up: up, tool: t})
	if err != nil || !vd.Allowed() {
		return refusal(fmt.Sprintf("celguard: %s is not offered to this session, so celguard refused the call (code %s; %s)", tool, CodeToolHidden, strings.TrimPrefix(message(vd), "celguard: "))), nil
	}
	call := eval.Call{Tool: ToolName(up.name, tool), Args: args, Cwd: p.cfg.Cwd, Agent: cs.agent}
	start := time.Now()
	d, err := sess.Before(ctx, call)
	p.decided(d, start)
	if err != nil {
		return refusal("celguard: " + err.Error()), nil
	}
	switch d.Verdict {
	case policy.Allow, policy.Warn:
	case policy.Modify:
		if d.Args != nil {
			args = d.Args
		}
	case policy.Ask:
		a := p.ask(ctx, req.Session, sess, req.Params.InputResponses, req.Params.RequestState, "call", call.Tool, call.Args, d)
		if a.refused != "" {
			return refusal(a.refused), nil
		}
		if a.requests != nil {
			return &mcp.CallToolResult{InputRequests: a.requests, RequestState: a.state}, nil
		}
	default: // block, halt, and any verdict this proxy does not know
		return refusal(message(d)), nil
	}
	res, err := do(ctx, up, tool, func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: req.Params.Meta})
	})
	if errors.Is(err, errToolChanged) {
		return p.changedRefusal(up, tool), nil
	}
	if err != nil {
		p.log.Warn("upstream call failed", "server", up.name, "tool", tool, "error", err)
		return refusal(fmt.Sprintf("celguard: the %s server failed this call, so it was refused: %v (code %s)", up.name, err, CodeUpstreamFailed)), nil
	}
	content, fields := resultText(res)
	start = time.Now()
	ad, err := sess.After(ctx, call, eval.Result{IsError: res.IsError, Content: content, Fields: fields})
	p.decided(ad, start)
	if err != nil {
		return refusal("celguard: " + err.Error()), nil
	}
	if !ad.Allowed() {
		return refusal(message(ad)), nil
	}
	if ad.Content != nil {
		// A rewritten result replaces every part of the original: the
		// structured copy and any non-text part may hold what was redacted.
		return &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: *ad.Content}}}, nil
	}
	if res.InputRequests != nil || res.RequestState != "" {
		// The upstream's own input requests would make the client answer
		// the upstream through the proxy unseen: refused.
		return refusal(fmt.Sprintf("celguard: the %s server asked the client for input, which the proxy does not forward, so the call was refused (code %s)", up.name, CodeUpstreamFailed)), nil
	}
	return res, nil
}

// resultText is what rules read as result.content (the text parts, or the
// structured result as JSON when there is no text) and result fields.
func resultText(res *mcp.CallToolResult) (string, map[string]any) {
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				b.WriteString(c.Resource.Text)
			}
		}
	}
	fields := map[string]any{}
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			fields["structured_content"] = string(raw)
			if b.Len() == 0 {
				b.Write(raw)
			}
		}
	}
	return b.String(), fields
}

// changedRefusal refuses a call of a tool whose definition changed.
func (p *Proxy) changedRefusal(up *upstream, tool string) *mcp.CallToolResult {
	return refusal(fmt.Sprintf("celguard: the %s server changed the definition of %s since it was pinned, so celguard refused the call (code %s): an operator must accept the new definition (celguard mcp pins accept)", up.name, tool, CodeToolChanged))
}
