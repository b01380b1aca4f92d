// Package mcpproxy is celguard's Model Context Protocol proxy: an MCP
// server that fronts one or more upstream MCP servers and decides every
// tools/call, every tool a client is shown and every read of a resource
// or prompt with the same policies, sessions, counters, store and decision
// log as the hooks and `celguard serve`.
//
// The policy sees each upstream tool as mcp__SERVER__TOOL, the name Claude
// Code and Codex give an MCP tool, so mcp.server and mcp.tool read the
// same and one policy decides a call alike through a hook and through the
// proxy. Before the call a rule may block it, ask, rewrite its arguments
// or halt; after it, redact (modify) or withhold the result. Rules of
// phase tools decide, per session and agent, which tools tools/list shows
// (a hidden tool is refused if called) and may rewrite a description;
// rules of phase resource decide resources/read and prompts/get. An
// upstream that dies, hangs or answers garbage fails that call closed, and
// the proxy keeps serving: the next call starts the upstream again. What an
// upstream changes while the proxy runs (its list_changed notifications)
// is offered again, tools checked against the pins (sync.go); resource
// subscriptions and completions pass through decided as reads
// (subscribe.go).
//
// The proxy is served over stdio (Run, for a client's mcpServers entry)
// or streamable HTTP (Handler: alone, or inside `celguard serve` with its
// agent token); upstreams are reached over stdio or streamable HTTP, any
// mcp.Transport.
//
// The protocol is the official MCP Go SDK's
// (github.com/modelcontextprotocol/go-sdk): the proxy is an mcp.Server to
// its clients and an mcp.Client to each upstream, and negotiates the
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
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
	// CodeToolHidden: a rule of phase tools hides the tool from this
	// session; a client that calls it anyway is refused.
	CodeToolHidden = "tool_hidden"
	// CodeNoSession: the client connection's session could not be had
	// (Config.Sessions refused it: an id it does not accept, or as many
	// sessions as it may keep), so nothing was decided and the request is
	// refused.
	CodeNoSession = "no_session"
)

// Keys of the initialize request's _meta a client may send.
const (
	// SessionMetaKey names the client's celguard session; without it each
	// client connection is a session of its own.
	SessionMetaKey = "celguard.dev/session"
	// AgentMetaKey names the agent (rules read agent.name); without it the
	// agent is the client's name (its clientInfo.name).
	AgentMetaKey = "celguard.dev/agent"
)

// DefaultCallTimeout bounds one upstream request without
// Config.CallTimeout.
const DefaultCallTimeout = 2 * time.Minute

// Upstream is one MCP server behind the proxy.
type Upstream struct {
	// Name is the server's name in mcp__NAME__TOOL. It must be non-empty,
	// hold no "__" and be unique among the upstreams.
	Name string
	// Transport makes a transport to the server, once at the start and
	// again after the server failed (an exec.Cmd runs once, so each call
	// must make a new one): mcp.CommandTransport over stdio,
	// mcp.StreamableClientTransport over streamable HTTP.
	Transport func() mcp.Transport
}

// Config is a proxy's settings.
type Config struct {
	// Upstreams are the servers behind the proxy. With one, the client
	// sees its tools and prompts under their own names; with several,
	// under SERVER__NAME, so that two servers' names cannot collide.
	Upstreams []Upstream
	// Name and Upstream are a shorthand for one more upstream.
	Name     string
	Upstream func() mcp.Transport
	// Engine is the engine the proxy decides with, built by the
	// composition root. The proxy sets DecisionMetadata, and DeferAsks
	// when Engine names no Approver: the proxy settles asks itself.
	Engine celguard.Config
	// Guard, when set, is an engine already built (by serve, for its
	// gateway route): the proxy decides with it instead of loading Engine,
	// and does not close it.
	Guard *celguard.Guard
	// Cwd is what rules read as cwd; "" when empty.
	Cwd string
	// CallTimeout bounds one upstream request; DefaultCallTimeout when
	// zero.
	CallTimeout time.Duration
	// Version is the proxy's version in its MCP implementation info.
	Version string
	// Logger receives the proxy's own events; none when nil.
	Logger *slog.Logger
	// Sessions, when set, gives the proxy the celguard session of each
	// client connection instead of sessions of the proxy's own: `celguard
	// serve` passes its session table, so that a gateway's client is one of
	// its sessions (its status, console, approval routes). It is asked on
	// every request, so that a session the table forgot is made again.
	Sessions Sessions
	// ApproveCommand is the command a person runs to answer an approval
	// request of session, named (with the request's id after it) in the
	// refusal of an ask the client cannot put to its user; "celguard
	// approve" when nil. Requests are recorded when the engine records
	// them (celguard.Config.ApprovalRequests).
	ApproveCommand func(session string) string
	// NoApprovals, when not empty, says why no approval can be given here
	// (the proxy keeps its sessions where `celguard approve` cannot reach
	// them), in the refusal of such an ask.
	NoApprovals string
	// Decided, when set, is told of each decision the proxy makes and how
	// long it took: before and after each call, each read and what it
	// returned, each tools/list's decision and each tool a rule decided in
	// it (serve counts them in its metrics, as host "mcp").
	Decided func(d eval.Decision, took time.Duration)
	// Pins, when set, is the pins file: the digest of each upstream tool's
	// definition is recorded there on first use, and a tool whose
	// definition changed since (checked at start and whenever an upstream
	// is started again) is not offered and its calls are refused
	// (CodeToolChanged) until an operator accepts it (AcceptPin).
	Pins string
}

// Proxy is an MCP server that decides its upstreams' tool calls, tool
// listings and reads.
type Proxy struct {
	cfg       Config
	guard     *celguard.Guard
	ownsGuard bool
	server    *mcp.Server
	log       *slog.Logger
	ups       []*upstream
	prefixed  bool // several upstreams: client names are SERVER__NAME

	mu    sync.Mutex
	tools map[string]*exposedTool                    // by the name the client sees
	reads map[string]offered                         // resources, templates, prompts (resourceKey, ...)
	subs  map[string]map[*mcp.ServerSession]struct{} // client sessions subscribed, by resource URI (subscribe.go)

	// subMu orders subscriptions' changes and their upstream calls
	// (subscribe.go); taken before mu.
	subMu sync.Mutex

	sessions sync.Map // *mcp.ServerSession -> *clientSession

	key  [32]byte // signs approval request states (bind)
	pins *pins    // nil without Config.Pins
}

// exposedTool is an upstream tool as the client sees it.
type exposedTool struct {
	up   *upstream
	tool *mcp.Tool // the upstream's definition, under the upstream's name
}

// Sessions gives the proxy the celguard session of a client connection
// (Config.Sessions).
type Sessions interface {
	// Session returns session id, made for agent with meta when there is
	// none. An error (the id is not one the sessions accept, there are as
	// many sessions as may be) refuses the request.
	Session(id string, agent eval.Agent, meta map[string]any) (*eval.Session, error)
}

// clientSession is what the proxy keeps of a client connection: its
// celguard session's id, agent and metadata, and the session itself
// unless Config.Sessions keeps it.
type clientSession struct {
	id    string
	agent eval.Agent
	meta  map[string]any
	own   *eval.Session
}

// evalSession is cs's celguard session: the proxy's own, or the one
// Config.Sessions keeps under its id.
func (p *Proxy) evalSession(cs *clientSession) (*eval.Session, error) {
	if cs.own != nil {
		return cs.own, nil
	}
	sess, err := p.cfg.Sessions.Session(cs.id, cs.agent, cs.meta)
	if err != nil {
		return nil, fmt.Errorf("no session %q: %w", cs.id, err)
	}
	return sess, nil
}

// New builds the engine (or takes Config.Guard), connects to every
// upstream, lists their tools, resources and prompts and offers them to
// the proxy's clients.
func New(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Name != "" || cfg.Upstream != nil {
		cfg.Upstreams = append(cfg.Upstreams, Upstream{Name: cfg.Name, Transport: cfg.Upstream})
	}
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("mcpproxy: no upstream")
	}
	seen := map[string]bool{}
	for _, u := range cfg.Upstreams {
		if u.Name == "" || strings.Contains(u.Name, "__") {
			return nil, fmt.Errorf("mcpproxy: server name %q must be non-empty and hold no \"__\" (the policy sees its tools as mcp__NAME__TOOL)", u.Name)
		}
		if seen[u.Name] {
			return nil, fmt.Errorf("mcpproxy: two upstreams are named %q", u.Name)
		}
		seen[u.Name] = true
		if u.Transport == nil {
			return nil, fmt.Errorf("mcpproxy: upstream %s has no transport", u.Name)
		}
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{cfg: cfg, log: log, tools: map[string]*exposedTool{}, reads: map[string]offered{}, subs: map[string]map[*mcp.ServerSession]struct{}{}, prefixed: len(cfg.Upstreams) > 1}
	if cfg.Guard != nil {
		p.guard = cfg.Guard
	} else {
		ecfg := cfg.Engine
		ecfg.DecisionMetadata = true
		if ecfg.Approver == nil {
			ecfg.Approver = celguard.DeferAsks
		}
		guard, err := ecfg.Load(ctx)
		if err != nil {
			return nil, err
		}
		p.guard, p.ownsGuard = guard, true
	}
	if _, err := rand.Read(p.key[:]); err != nil {
		p.Close()
		return nil, err
	}
	if cfg.Pins != "" {
		var err error
		if p.pins, err = loadPins(cfg.Pins); err != nil {
			p.Close()
			return nil, err
		}
	}
	p.server = mcp.NewServer(&mcp.Implementation{Name: "celguard-mcp-proxy", Version: cfg.Version}, &mcp.ServerOptions{
		SubscribeHandler: p.subscribe, UnsubscribeHandler: p.unsubscribe, CompletionHandler: p.complete,
	})
	p.server.AddReceivingMiddleware(p.visibility)
	for _, u := range cfg.Upstreams {
		up := &upstream{p: p, name: u.Name, transport: u.Transport}
		p.ups = append(p.ups, up)
		if err := p.offer(ctx, up); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// offer connects to up and offers its tools, resources and prompts.
func (p *Proxy) offer(ctx context.Context, up *upstream) error {
	cs, err := up.connect(ctx)
	if err != nil {
		return err
	}
	up.session = cs
	if err := p.syncTools(ctx, up, cs); err != nil {
		return err
	}
	if err := p.syncResources(ctx, up, cs); err != nil {
		return err
	}
	return p.syncPrompts(ctx, up, cs)
}

// clientName is the name the client sees for an upstream's tool or prompt.
func (p *Proxy) clientName(up *upstream, name string) string {
	if p.prefixed {
		return up.name + "__" + name
	}
	return name
}

// Server is the proxy's MCP server, to run on any transport.
func (p *Proxy) Server() *mcp.Server { return p.server }

// Guard is the engine the proxy decides with.
func (p *Proxy) Guard() *celguard.Guard { return p.guard }

// Run serves one client over t (mcp.StdioTransport for a client's
// mcpServers entry) until the client goes away or ctx ends.
func (p *Proxy) Run(ctx context.Context, t mcp.Transport) error {
	return p.server.Run(ctx, t)
}

// Handler serves the proxy over MCP's streamable HTTP transport: each
// MCP session (Mcp-Session-Id) is a client connection. The caller
// authenticates the requests (serve's agent token) and listens on a
// loopback address unless it does.
func (p *Proxy) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server }, &mcp.StreamableHTTPOptions{Logger: p.log})
}

// AcceptPin accepts the changed definition of server's tool that the
// proxy refused (the package's AcceptPin on the proxy's pins file).
func (p *Proxy) AcceptPin(server, tool string) (string, error) {
	if p.pins == nil {
		return "", errors.New("mcpproxy: the proxy pins no tool (no pins file)")
	}
	return AcceptPin(p.pins.path, server, tool)
}

// PendingPins lists the changed definitions waiting for an operator.
func (p *Proxy) PendingPins() ([]PendingPin, error) {
	if p.pins == nil {
		return nil, nil
	}
	f, err := ReadPins(p.pins.path)
	if err != nil {
		return nil, err
	}
	return f.PendingPins(), nil
}

// Close stops the upstreams and, unless it was given one, the engine.
func (p *Proxy) Close() error {
	var errs []error
	for _, up := range p.ups {
		errs = append(errs, up.close())
	}
	if p.ownsGuard && p.guard != nil {
		errs = append(errs, p.guard.Close())
	}
	return errors.Join(errs...)
}

// ToolName is the name the policy sees for tool of server: mcp__SERVER__TOOL.
func ToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

// session is what the proxy keeps of a client connection: the session
// its initialize _meta names, else one of its own, and its agent.
func (p *Proxy) session(ss *mcp.ServerSession) *clientSession {
	if ss == nil {
		return p.newClientSession("mcp-"+randomID(), eval.Agent{}, map[string]any{"frontend": "mcp"})
	}
	if s, ok := p.sessions.Load(ss); ok {
		return s.(*clientSession)
	}
	id := ""
	meta := map[string]any{"frontend": "mcp"}
	var agent eval.Agent
	if ip := ss.InitializeParams(); ip != nil {
		if v, ok := ip.Meta[SessionMetaKey].(string); ok && v != "" {
			id = v
		}
		if ip.ClientInfo != nil {
			meta["client"] = ip.ClientInfo.Name
			agent.Name = ip.ClientInfo.Name
		}
		if v, ok := ip.Meta[AgentMetaKey].(string); ok && v != "" {
			agent.Name = v
		}
	}
	if id == "" {
		id = "mcp-" + randomID()
	}
	s, loaded := p.sessions.LoadOrStore(ss, p.newClientSession(id, agent, meta))
	if !loaded {
		go func() {
			ss.Wait()
			p.dropSession(ss)
		}()
	}
	return s.(*clientSession)
}

// newClientSession is a client connection's session: one of the proxy's
// own, or a name for the one Config.Sessions keeps.
func (p *Proxy) newClientSession(id string, agent eval.Agent, meta map[string]any) *clientSession {
	cs := &clientSession{id: id, agent: agent, meta: meta}
	if p.cfg.Sessions == nil {
		cs.own = p.guard.NewSession(id, meta)
	}
	return cs
}

// decided tells Config.Decided of d, decided since start.
func (p *Proxy) decided(d eval.Decision, start time.Time) {
	if p.cfg.Decided != nil {
		p.cfg.Decided(d, time.Since(start))
	}
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
