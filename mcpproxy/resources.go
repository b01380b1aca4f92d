package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// CodeReadRefused: a resources/read or prompts/get the policy refused
// (the decision's own code, when it has one, comes first in the message).
const CodeReadRefused = "read_refused"

// safely runs add, logging instead of failing when the SDK refuses what an
// upstream offers (it panics on an invalid URI or template): what is not
// offered cannot be read through the proxy.
func (p *Proxy) safely(up *upstream, what string, add func()) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Warn("not offered", "server", up.name, "what", what, "error", r)
		}
	}()
	add()
}

// readResource is the handler of up's resources and templates.
func (p *Proxy) readResource(up *upstream) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		r := eval.Resource{Server: up.name, Kind: eval.KindResource, URI: req.Params.URI}
		a, sess, err := p.decideRead(ctx, req.Session, req.Params.InputResponses, req.Params.RequestState, &r, true)
		if err != nil {
			return nil, err
		}
		if a.requests != nil {
			return &mcp.ReadResourceResult{InputRequests: a.requests, RequestState: a.state}, nil
		}
		res, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI, Meta: req.Params.Meta})
		})
		if err != nil {
			p.log.Warn("upstream read failed", "server", up.name, "uri", req.Params.URI, "error", err)
			return nil, fmt.Errorf("celguard: the %s server failed this read, so it was refused: %v (code %s)", up.name, err, CodeUpstreamFailed)
		}
		if res.InputRequests != nil || res.RequestState != "" {
			return nil, fmt.Errorf("celguard: the %s server asked the client for input, which the proxy does not forward, so the read was refused (code %s)", up.name, CodeUpstreamFailed)
		}
		rewritten, err := p.afterRead(ctx, sess, r, resourceText(res))
		if err != nil || rewritten == nil {
			return res, err
		}
		// A rewritten read replaces every part of the original: a blob,
		// or another part, may hold what was redacted.
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: *rewritten}}}, nil
	}
}

// getPrompt is the handler of up's prompt name.
func (p *Proxy) getPrompt(up *upstream, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		r := eval.Resource{Server: up.name, Kind: eval.KindPrompt, Name: name, Arguments: req.Params.Arguments}
		a, sess, err := p.decideRead(ctx, req.Session, req.Params.InputResponses, req.Params.RequestState, &r, true)
		if err != nil {
			return nil, err
		}
		if a.requests != nil {
			return &mcp.GetPromptResult{InputRequests: a.requests, RequestState: a.state}, nil
		}
		res, err := do(ctx, up, "", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
			return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
		})
		if err != nil {
			p.log.Warn("upstream prompt failed", "server", up.name, "prompt", name, "error", err)
			return nil, fmt.Errorf("celguard: the %s server failed this prompt, so it was refused: %v (code %s)", up.name, err, CodeUpstreamFailed)
		}
		if res.InputRequests != nil || res.RequestState != "" {
			return nil, fmt.Errorf("celguard: the %s server asked the client for input, which the proxy does not forward, so the prompt was refused (code %s)", up.name, CodeUpstreamFailed)
		}
		rewritten, err := p.afterRead(ctx, sess, r, promptText(res))
		if err != nil || rewritten == nil {
			return res, err
		}
		// A rewritten prompt is one message of the rewritten text, in the
		// role of the first: every part of the original may hold what was
		// redacted.
		role := mcp.Role("user")
		if len(res.Messages) > 0 && res.Messages[0] != nil && res.Messages[0].Role != "" {
			role = res.Messages[0].Role
		}
		return &mcp.GetPromptResult{Description: res.Description, Messages: []*mcp.PromptMessage{{Role: role, Content: &mcp.TextContent{Text: *rewritten}}}}, nil
	}
}

// decideRead decides a read (phase resource): nil error and a zero
// approval let it through; input requests put an ask to the user; an
// error refuses it (a JSON-RPC error: a read has no error result). It
// returns the client's session, and sets r's agent. Without elicit (a
// request that cannot carry the question) an ask is refused with its
// approval request, whatever the client declares.
func (p *Proxy) decideRead(ctx context.Context, ss *mcp.ServerSession, responses mcp.InputResponseMap, state string, r *eval.Resource, elicit bool) (approval, *eval.Session, error) {
	cs := p.session(ss)
	sess, err := p.evalSession(cs)
	if err != nil {
		return approval{}, nil, fmt.Errorf("celguard: %v, so the %s was refused (code %s)", err, r.Kind, CodeNoSession)
	}
	r.Agent = cs.agent
	start := time.Now()
	d, err := sess.Resource(ctx, *r)
	p.decided(d, start)
	if err != nil {
		return approval{}, nil, errors.New("celguard: " + err.Error())
	}
	what, subject := "read", r.URI
	if r.Kind == eval.KindPrompt {
		what, subject = "prompt", r.Name
	}
	switch d.Verdict {
	case policy.Allow, policy.Warn:
		return approval{}, sess, nil
	case policy.Ask:
		asker := ss
		if !elicit {
			asker = nil
		}
		a := p.ask(ctx, asker, sess, responses, state, what, r.Server+"\x00"+subject, r.Arguments, d)
		if a.refused != "" {
			return approval{}, nil, fmt.Errorf("%s (code %s)", a.refused, CodeReadRefused)
		}
		return a, sess, nil
	}
	return approval{}, nil, fmt.Errorf("%s (code %s)", message(d), CodeReadRefused)
}

// afterRead decides what a read returned, as a tool's result is decided:
// the rules of phase after whose tools match the read's call
// (eval.ReadCall: mcp__SERVER__resources/read with args.uri,
// mcp__SERVER__prompts/get with args.name and args.arguments) read its text
// as result.content, and may let it through (nil), rewrite it (modify
// content: the text the client gets instead) or withhold it (an error).
func (p *Proxy) afterRead(ctx context.Context, sess *eval.Session, r eval.Resource, content string) (*string, error) {
	call := eval.ReadCall(r)
	call.Cwd = p.cfg.Cwd
	start := time.Now()
	d, err := sess.After(ctx, call, eval.Result{Content: content})
	p.decided(d, start)
	if err != nil {
		return nil, errors.New("celguard: " + err.Error())
	}
	if !d.Allowed() {
		return nil, fmt.Errorf("%s (code %s)", message(d), CodeReadRefused)
	}
	return d.Content, nil
}

// resourceText is what rules read as result.content of a resource read:
// its text parts, one after the other (blobs are not text).
func resourceText(res *mcp.ReadResourceResult) string {
	var b strings.Builder
	for _, c := range res.Contents {
		if c != nil {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// promptText is what rules read as result.content of a prompt: the text
// of its messages (and of the resources they embed), a blank line apart.
func promptText(res *mcp.GetPromptResult) string {
	var parts []string
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				parts = append(parts, c.Resource.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}
