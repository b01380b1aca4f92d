// Package mcpproxy is celguard's Model Context Protocol proxy: an MCP
// server that fronts an upstream MCP server and decides every tools/call
// with the same policies, sessions, counters, store and decision log as
// the hooks and `celguard serve`.
//
// The client sees the upstream's tools as the upstream lists them; the
// policy sees each one as mcp__SERVER__TOOL, the name Claude Code and
// Codex give an MCP tool, so mcp.server and mcp.tool read the same and one
// policy decides a call alike through a hook and through the proxy. Before
// the call a rule may block it, ask, rewrite its arguments or halt; after
// it, redact (modify) or withhold the result. An upstream that dies, hangs
// or answers garbage fails that call closed, and the proxy keeps serving:
// the next call starts the upstream again.
//
// The protocol is the official MCP Go SDK's
// (github.com/modelcontextprotocol/go-sdk): the proxy is an mcp.Server to
// its client and an mcp.Client to its upstream, and negotiates the
// protocol versions the SDK supports (mcp.SupportedProtocolVersions).
//
// Why a top-level package: the proxy is a front end of its own, beside
// hooks (which answer a host's hook events) and serve (which answers
// HTTP); it speaks neither of their wire formats, and it composes an
// engine through the composition root (celguard.Config) as they do. It
// sits beside serve in internal/layering's table: above the root package,
// below cmd/celguard.
package mcpproxy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Codes of the refusals the proxy makes itself, beside the decisions'
// codes.
const (
	// CodeUpstreamFailed: the upstream could not be reached, died, hung
	// past Config.CallTimeout or answered something that is not a tool
	// result. The call is refused (fail closed); the next call starts the
	// upstream again.
	CodeUpstreamFailed = "upstream_failed"
	// CodeInvalidArguments: the call's arguments are not a JSON object.
	CodeInvalidArguments = "invalid_arguments"
)

// SessionMetaKey is the _meta key of the initialize request by which a
// client names its celguard session; without it each client connection
// is a session of its own.
const SessionMetaKey = "celguard.dev/session"

// DefaultCallTimeout bounds one upstream tools/call without
// Config.CallTimeout.
const DefaultCallTimeout = 2 * time.Minute

// Config is a proxy's settings.
type Config struct {
	// Name is the upstream server's name in mcp__NAME__TOOL. It must be
	// non-empty and hold no "__".
	Name string
	// Upstream makes a transport to the upstream server, once at the start
	// and again after the upstream failed (an exec.Cmd runs once, so each
	// call of Upstream must make a new one).
	Upstream func() mcp.Transport
	// Engine is the engine the proxy decides with, built by the
	// composition root. The proxy sets DecisionMetadata, and DeferAsks
	// when Engine names no Approver: the proxy settles asks itself.
	Engine celguard.Config
	// Cwd is what rules read as cwd; the proxy's working directory when
	// empty.
	Cwd string
	// CallTimeout bounds one upstream call; DefaultCallTimeout when zero.
	CallTimeout time.Duration
	// Version is the proxy's version in its MCP implementation info.
	Version string
	// Logger receives the proxy's own events; none when nil.
	Logger *slog.Logger
	// Pins, when set, is the pins file: the digest of each upstream tool's
	// definition is recorded there on first use, and a tool whose
	// definition changed since (checked at start and whenever the upstream
	// is started again) is not offered and its calls are refused
	// (CodeToolChanged) until an operator removes its pin.
	Pins string
}

// Proxy is an MCP server that decides its upstream's tool calls.
type Proxy struct {
	cfg    Config
	guard  *celguard.Guard
	server *mcp.Server
	log    *slog.Logger

	mu       sync.Mutex
	upstream *mcp.ClientSession // nil after a failure, until the next call

	sessions sync.Map // *mcp.ServerSession -> *eval.Session

	key  [32]byte // signs approval request states (bind)
	pins *pins    // nil without Config.Pins
}

// New builds the engine, connects to the upstream, lists its tools and
// offers them to the proxy's clients.
func New(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Name == "" || strings.Contains(cfg.Name, "__") {
		return nil, fmt.Errorf("mcpproxy: server name %q must be non-empty and hold no \"__\" (the policy sees its tools as mcp__NAME__TOOL)", cfg.Name)
	}
	if cfg.Upstream == nil {
		return nil, errors.New("mcpproxy: no upstream")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ecfg := cfg.Engine
	ecfg.DecisionMetadata = true
	if ecfg.Approver == nil {
		ecfg.Approver = celguard.DeferAsks
	}
	guard, err := ecfg.Load(ctx)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, guard: guard, log: log}
	if _, err := rand.Read(p.key[:]); err != nil {
		guard.Close()
		return nil, err
	}
	up, err := p.connect(ctx)
	if err != nil {
		guard.Close()
		return nil, err
	}
	p.upstream = up
	if cfg.Pins != "" {
		if p.pins, err = loadPins(cfg.Pins, cfg.Name); err != nil {
			p.Close()
			return nil, err
		}
	}
	p.server = mcp.NewServer(&mcp.Implementation{Name: "celguard-mcp-proxy", Version: cfg.Version}, nil)
	var tools []*mcp.Tool
	for t, err := range up.Tools(ctx, nil) {
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("mcpproxy: listing %s's tools: %w", cfg.Name, err)
		}
		tools = append(tools, t)
	}
	changed := map[string]bool{}
	if p.pins != nil {
		if changed, err = p.pins.check(tools); err != nil {
			p.Close()
			return nil, err
		}
	}
	for _, t := range tools {
		if changed[t.Name] {
			log.Warn("tool definition changed since it was pinned: not offered", "server", cfg.Name, "tool", t.Name, "code", CodeToolChanged)
			continue
		}
		if err := p.addTool(t); err != nil {
			// A tool the SDK cannot offer is not offered: it cannot be
			// called through the proxy either.
			log.Warn("tool not offered", "server", cfg.Name, "tool", t.Name, "error", err)
		}
	}
	return p, nil
}

// addTool offers t, as the upstream defines it, with the deciding handler.
func (p *Proxy) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if t.InputSchema == nil {
		return errors.New("no input schema")
	}
	name := t.Name
	p.server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return p.call(ctx, req, name)
	})
	return nil
}

// Server is the proxy's MCP server, to run on any transport.
func (p *Proxy) Server() *mcp.Server { return p.server }

// Guard is what the composition root built for the proxy.
func (p *Proxy) Guard() *celguard.Guard { return p.guard }

// Run serves one client over t (mcp.StdioTransport for a client's
// mcpServers entry) until the client goes away or ctx ends.
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error {
	return p.server.Run(ctx, t)
}

// Close stops the upstream and the engine.
func (p *Proxy) Close() error {
	p.mu.Lock()
	up := p.upstream
	p.upstream = nil
	p.mu.Unlock()
	var err error
	if up != nil {
		err = up.Close()
	}
	return errors.Join(err, p.guard.Close())
}

// ToolName is the name the policy sees for tool of server: mcp__SERVER__TOOL.
func ToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

func (p *Proxy) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "celguard-mcp-proxy", Version: p.cfg.Version}, nil)
	cs, err := c.Connect(ctx, p.cfg.Upstream(), nil)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: connecting to %s: %w", p.cfg.Name, err)
	}
	return cs, nil
}

// live returns the upstream session, starting the upstream again after a
// failure.
func (p *Proxy) live(ctx context.Context) (*mcp.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.upstream != nil {
		return p.upstream, nil
	}
	cs, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	if p.pins != nil {
		// A server started again may define its tools anew: check them
		// before any call reaches it.
		var tools []*mcp.Tool
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				go cs.Close()
				return nil, fmt.Errorf("listing the tools of the restarted server: %w", err)
			}
			tools = append(tools, t)
		}
		if _, err := p.pins.check(tools); err != nil {
			go cs.Close()
			return nil, err
		}
	}
	p.upstream = cs
	return cs, nil
}

// drop forgets a failed upstream session (unless another call already
// replaced it) and stops it.
func (p *Proxy) drop(cs *mcp.ClientSession) {
	p.mu.Lock()
	if p.upstream == cs {
		p.upstream = nil
	}
	p.mu.Unlock()
	go cs.Close()
}

// session is the eval session of a client connection: the one its
// initialize _meta names, else one of its own.
func (p *Proxy) session(ss *mcp.ServerSession) *eval.Session {
	if ss == nil {
		return p.guard.NewSession("mcp-"+randomID(), nil)
	}
	if s, ok := p.sessions.Load(ss); ok {
		return s.(*eval.Session)
	}
	id := ""
	meta := map[string]any{"server": p.cfg.Name, "frontend": "mcp"}
	if ip := ss.InitializeParams(); ip != nil {
		if v, ok := ip.Meta[SessionMetaKey].(string); ok && v != "" {
			id = v
		}
		if ip.ClientInfo != nil {
			meta["client"] = ip.ClientInfo.Name
		}
	}
	if id == "" {
		id = "mcp-" + randomID()
	}
	s, _ := p.sessions.LoadOrStore(ss, p.guard.NewSession(id, meta))
	go func() {
		ss.Wait()
		p.sessions.Delete(ss)
	}()
	return s.(*eval.Session)
}

// call decides one tools/call before and after the upstream runs it.
func (p *Proxy) call(ctx context.Context, req *mcp.CallToolRequest, tool string) (*mcp.CallToolResult, error) {
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return refusal(fmt.Sprintf("celguard: the arguments of %s are not a JSON object (code %s)", tool, CodeInvalidArguments)), nil
		}
	}
	if p.pins.isChanged(tool) {
		return p.changedRefusal(tool), nil
	}
	sess := p.session(req.Session)
	call := eval.Call{Tool: ToolName(p.cfg.Name, tool), Args: args, Cwd: p.cfg.Cwd}
	d, err := sess.Before(ctx, call)
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
		if res := p.ask(req, call, d); res != nil {
			return res, nil
		}
	default: // block, halt, and any verdict this proxy does not know
		return refusal(message(d)), nil
	}
	res, err := p.forward(ctx, tool, args, req.Params.Meta)
	if errors.Is(err, errToolChanged) {
		return p.changedRefusal(tool), nil
	}
	if err != nil {
		p.log.Warn("upstream call failed", "server", p.cfg.Name, "tool", tool, "error", err)
		return refusal(fmt.Sprintf("celguard: the %s server failed this call, so it was refused: %v (code %s)", p.cfg.Name, err, CodeUpstreamFailed)), nil
	}
	content, fields := resultText(res)
	ad, err := sess.After(ctx, call, eval.Result{IsError: res.IsError, Content: content, Fields: fields})
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
	return res, nil
}

// forward runs the call upstream within CallTimeout; any failure drops the
// upstream session so the next call starts a new one.
func (p *Proxy) forward(ctx context.Context, tool string, args map[string]any, meta mcp.Meta) (*mcp.CallToolResult, error) {
	cs, err := p.live(ctx)
	if err != nil {
		return nil, err
	}
	if p.pins.isChanged(tool) {
		return nil, errToolChanged
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	if err == nil && res == nil {
		err = errors.New("no result")
	}
	if err != nil {
		if ctx.Err() == nil {
			p.drop(cs)
		}
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %s", p.cfg.CallTimeout)
		}
		return nil, err
	}
	return res, nil
}

// approvalInput is the id of the proxy's elicitation in a tools/call's
// input requests (MCP multi round-trip requests, SEP-2322).
const approvalInput = "celguard-approval"

// ask settles an ask verdict. When the client declares elicitation, the
// proxy answers the call with an input request (an elicitation the SDK
// turns into a separate elicitation/create for clients on protocol
// versions before 2026-07-28) whose request state binds it to this call;
// the client's retry carries the user's answer, and the call runs only if
// the user accepted and the state matches the call decided again. Without
// elicitation the call is refused. It returns the result to send instead
// of running the call, or nil to run it.
func (p *Proxy) ask(req *mcp.CallToolRequest, call eval.Call, d eval.Decision) *mcp.CallToolResult {
	ss := req.Session
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.Elicitation == nil {
		why := message(d) + ". This call needs a person's approval and this MCP client cannot be asked (it declares no elicitation), so celguard refused it"
		if d.Approval != nil && d.Approval.Request != "" {
			why += " as approval request " + d.Approval.Request
		}
		return refusal(why)
	}
	state := p.bind(ss, call, d)
	if resp, ok := req.Params.InputResponses[approvalInput]; ok {
		if req.Params.RequestState != state {
			return refusal(message(d) + ". The approval answered was for another call, so celguard refused this one")
		}
		if er, ok := resp.(*mcp.ElicitResult); ok && er.Action == "accept" && er.Content["approve"] == true {
			return nil
		}
		return refusal(message(d) + ". The user did not approve this call")
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
			Message: message(d) + ". Allow this call?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "description": "allow this one call"}}, "required": []string{"approve"}},
		}},
		RequestState: state,
	}
}

// bind is the request state of an approval: an HMAC, under the proxy's
// own key, of the client connection, the call and the rule that asked.
func (p *Proxy) bind(ss *mcp.ServerSession, call eval.Call, d eval.Decision) string {
	args, _ := json.Marshal(call.Args) // map keys sorted: canonical
	m := hmac.New(sha256.New, p.key[:])
	fmt.Fprintf(m, "%p\x00%s\x00%s\x00", ss, call.Tool, d.RuleID)
	m.Write(args)
	return hex.EncodeToString(m.Sum(nil))
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

// refusal is a tool result the model reads as the call's failure.
func refusal(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// message is the text of a refusal: the rule's reason, the rule and code.
func message(d eval.Decision) string {
	reason := strings.TrimSpace(d.Reason)
	if reason == "" {
		reason = "policy " + d.Verdict.String()
	}
	var tag []string
	if d.RuleID != "" {
		tag = append(tag, "rule "+d.RuleID)
	}
	if d.Code != "" {
		tag = append(tag, "code "+d.Code)
	}
	msg := "celguard: " + reason
	if len(tag) > 0 {
		msg += " (" + strings.Join(tag, ", ") + ")"
	}
	if d.Verdict == policy.Halt {
		msg += "; the session is halted: stop and tell the user"
	}
	return msg
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errToolChanged: the restarted upstream changed the called tool.
var errToolChanged = errors.New(CodeToolChanged)

// changedRefusal refuses a call of a tool whose definition changed.
func (p *Proxy) changedRefusal(tool string) *mcp.CallToolResult {
	return refusal(fmt.Sprintf("celguard: the %s server changed the definition of %s since it was pinned, so celguard refused the call (code %s): an operator must accept the new definition by removing its pin from the pins file", p.cfg.Name, tool, CodeToolChanged))
}
