// Package serve is celguard's decision service: one http.Handler that
// decides the tool calls of many agents, over a session API of its own and
// over the hook protocols of the agent hosts (Claude Code, Codex, Gemini
// CLI, Cursor), so that a host's http hook, a forwarding command hook
// (celguard hook HOST --server URL) or a client in another language (the
// Python package) all reach the same compiled policies and the same
// sessions.
//
// It has no other home. eval decides and knows nothing of HTTP; hooks
// speaks the hosts' protocols for one event at a time and keeps state in
// files; the command line stays thin. A server composes them: it compiles
// the policy layers once and recompiles them when they change (Reload,
// Watch), keeps sessions in memory with an idle expiry and a bound,
// authenticates requests, bounds their size and time, and reports what it
// does (metrics, structured logs, /v1/status and /v1/status/details). It sits above hooks and
// below cmd/celguard.
//
// Every decision endpoint fails closed. A fault while deciding (a panic,
// the request's deadline, a store that cannot be reached) answers HTTP 200
// with a block Decision whose code says which (internal_error,
// deadline_exceeded, store_unavailable); a hook endpoint answers HTTP 200
// with the host's own deny form on any fault, a malformed or too large body
// and a missing token included, because Claude Code's http hooks run the
// call on any answer that is not a 2xx. The routes are described by the
// OpenAPI document served at /openapi.json (openapi.json in this
// directory).
//
// With an operator token it also serves the operator's web console at
// /ui/ (console.go; docs/console.md): server-rendered HTML (html/template)
// and one small script, embedded with go:embed, no front-end toolchain and
// no third-party asset; operator only, through a session cookie that a
// login with the operator token opens, CSRF tokens and same-origin checks
// on every POST, and a strict Content-Security-Policy with no inline
// script.
package serve

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
	"github.com/celguard/celguard/telemetry"
)

// OpenAPI is the OpenAPI 3.1 document of the server's routes, as served at
// /openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Defaults of the bounds a server keeps.
const (
	// DefaultMaxBodyBytes bounds a request's body.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultTimeout bounds the decision of one request.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxSessions bounds how many sessions are kept at once.
	DefaultMaxSessions = 100_000
	// DefaultSessionIdle is how long a session unused is kept.
	DefaultSessionIdle = 2 * time.Hour
)

// Codes of the decisions and errors the server makes itself.
const (
	CodeInternalError    = hooks.CodeInternalError   // a fault in the server (a panic recovered): block
	CodeDeadlineExceeded = "deadline_exceeded"       // no decision within the request's deadline: block
	CodeStoreUnavailable = eval.CodeStoreUnavailable // the state store could not be reached: block
	CodeInvalidInput     = "invalid_input"           // HTTP 400: the body is not what the route takes
	CodeUnauthorized     = "unauthorized"            // HTTP 401: no or a wrong bearer token
	CodeTooLarge         = "too_large"               // HTTP 413: the body is larger than the bound
	CodeNotFound         = "not_found"               // HTTP 404: no such route or host
	CodeTooManySessions  = "too_many_sessions"       // HTTP 503, or a block on a hook: the session table is full
	// Codes of the operator's routes.
	CodeForbidden         = "forbidden"          // HTTP 403: the agents' token on an operator route
	CodeOperatorDisabled  = "operator_disabled"  // HTTP 403: the server has no operator token
	CodeReloadFailed      = "reload_failed"      // HTTP 422: the policies do not compile; the last good set stays
	CodeApprovalsDisabled = "approvals_disabled" // HTTP 403: the server has no operator token (approval routes)
	CodeAlwaysRefused     = "always_refused"     // HTTP 403: scope "always" is not given over HTTP
	CodeMandatoryRule     = "mandatory_rule"     // HTTP 403: no approval lifts a mandatory rule
	CodeNoSuchRequest     = "no_such_request"    // HTTP 404: no such pending request or grant
	// CodeDaemonStale is the hook daemon's HTTP 503 once its binary was
	// replaced: it stops, and the hook decides in process.
	CodeDaemonStale   = "daemon_stale"
	CodeMCPDisabled   = "mcp_disabled"    // HTTP 404: the server fronts no MCP server (no Config.MCP)
	CodePinNotPending = "pin_not_pending" // HTTP 404: no changed definition of that tool is waiting
)

// NoApprovalsReason ends a hook endpoint's refusal of an ask (Codex,
// Gemini CLI) on a server without an operator token, where no request is
// recorded and no one can approve one.
const NoApprovalsReason = "approvals are disabled on this server (celguard serve has no --operator-token-file): it cannot be approved here; tell the user"

// Config configures a Server.
type Config struct {
	// Engine is the engine the server decides with, built by the one
	// composition root (celguard.Config.Load): its policies (read again by
	// every Reload), judges, decision log, monitor mode, state store. The
	// server adds what serving needs: every decision carries its audit
	// record (DecisionMetadata), an ask is answered as ask (the host or
	// the client asks its user) unless Engine names an Approver, and with
	// an OperatorToken every deferred ask is recorded as a request
	// (ApprovalRequests).
	Engine celguard.Config
	// Token, when not empty, is the agents' bearer token: the routes of
	// the Agent principal take it (see Routes).
	Token string
	// OperatorToken, when not empty, turns the Operator principal's routes
	// on (halt, lift, session delete, approvals, reload): they take this
	// bearer token and no other, so that an agent holding its own token
	// cannot lift a halt, reset its counters or approve its own requests.
	// It must differ from Token. With it, every ask deferred to the client
	// or host is also recorded as a request a person can answer
	// (eval.WithApprovalRequests).
	OperatorToken string
	// Version is reported by /v1/status and /v1/status/details.
	Version string
	// Store names the state store for /v1/status/details ("memory", a URL
	// without its password).
	Store string
	// HookOptions are the hosts' encoding options (Approve, and
	// ApproveCommandFor: the command a refusal names, with the server's
	// URL and the session). Without an OperatorToken the refusal of an ask
	// says approvals are disabled on this server.
	HookOptions hooks.Options
	// MaxBodyBytes, Timeout, MaxSessions and SessionIdle bound requests
	// and sessions; zero means the Default of each.
	MaxBodyBytes int64
	Timeout      time.Duration
	MaxSessions  int
	SessionIdle  time.Duration
	// Ready, when set, is asked by /readyz (e.g. a ping of the state
	// store); an error answers 503.
	Ready func(context.Context) error
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of session expiry; nil is time.Now.
	Now func() time.Time

	// What Run adds, to run a server (New ignores them):
	//
	// TLS, when set, serves HTTPS on every listener.
	TLS *tls.Config
	// ReloadInterval is how often the policies are read again for a
	// change (Watch); zero reloads only on SIGHUP.
	ReloadInterval time.Duration
	// ShutdownTimeout bounds the wait for requests in flight once the
	// server stops; zero is 10 seconds.
	ShutdownTimeout time.Duration
	// Started, when set, is called once the server is built, before it
	// answers (the command line prints its warnings there).
	Started func(*Server)

	// Daemon, when set, makes the server the command hook's decision
	// daemon (docs/hooks.md): its hook endpoints answer with Daemon.Decide
	// and sign every answer for the client's nonce.
	Daemon *Daemon
	// MCP, when set, builds the MCP gateway the server answers at /mcp
	// (MCP's streamable HTTP transport, the agents' token) over the
	// server's own engine and sessions (MCPHost): the composition
	// (cmd/celguard) passes mcpproxy's constructor, which serve cannot
	// import. The operator accepts a changed tool definition at
	// /v1/mcp/pins/accept.
	MCP func(context.Context, MCPHost) (MCPGateway, error)
}

// MCPHost is what the server gives its MCP gateway, so that a gateway's
// client is decided as a hook event is: the server's engine, its
// sessions, and how its approval requests are approved.
type MCPHost struct {
	// Guard is the server's engine.
	Guard *celguard.Guard
	// Sessions are the server's sessions (mcpproxy.Sessions): each client
	// connection is one of them, shown in status and the console, with
	// the server's store and decision log, and answered by its approval
	// routes.
	Sessions MCPSessions
	// ApproveCommand is the command that approves a request of a session
	// (`celguard approve --server URL --session-id ID ...`), the request's
	// id after it; nil when NoApprovals is set.
	ApproveCommand func(session string) string
	// NoApprovals, when not empty, says why no request is recorded (the
	// server has no operator token).
	NoApprovals string
	// Decided counts a gateway's decision in the server's metrics, as
	// host "mcp" (mcpproxy.Config.Decided).
	Decided func(d eval.Decision, took time.Duration)
}

// MCPHostLabel is the host label of the MCP gateway's decisions in the
// server's metrics (celguard_decisions_total).
const MCPHostLabel = "mcp"

// MCPSessions gives an MCP gateway the server's sessions.
type MCPSessions interface {
	// Session returns session id, made for agent with meta when there is
	// none: an error when the id is not one the server accepts or it keeps
	// as many sessions as it may.
	Session(id string, agent eval.Agent, meta map[string]any) (*eval.Session, error)
}

// mcpSessions is the server's session table as an MCP gateway's.
type mcpSessions struct{ s *Server }

func (m mcpSessions) Session(id string, agent eval.Agent, meta map[string]any) (*eval.Session, error) {
	s := m.s
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	sess, created, err := s.sessions.get(id, s.cfg.Now(), func() *session {
		return &session{Session: s.eng.NewSession(id, meta), agent: agent}
	})
	if err != nil {
		s.metrics.faults.WithLabelValues(CodeTooManySessions).Inc()
		return nil, err
	}
	if created {
		s.metrics.sessions.Set(float64(s.sessions.len()))
	}
	return sess.Session, nil
}

// Daemon is what makes a server the command hook's per-user decision
// daemon: on a unix socket in the user's state directory, it answers each
// hook event as `celguard hook` decides it in process (Decide: the same
// code, on the same state files), signed with the state directory's key
// over the hook's nonce (daemonwire.Sum), so that the hook can tell it
// from a process that took its socket.
type Daemon struct {
	// Key is the state directory's key (statedir.Key).
	Key *statedir.Key
	// Decide answers one event of host: event is the body as the host
	// sent it, workDir the hook's working directory, want the digest the
	// hook expects ("" when the client does not compute it). digest names
	// the set that decided ("" when none did); manifest is what that set
	// was read from (daemonwire.HeaderManifest: "" when no policy decided,
	// daemonwire.NoManifest when it cannot be said).
	Decide func(ctx context.Context, host hooks.Host, event []byte, workDir, want string) (resp hooks.Response, digest, manifest string)
	// Stale, when set, is asked before each event: an error (the binary
	// was replaced) makes the daemon refuse the event (HTTP 503: the hook
	// decides in process and starts a new daemon) and stop.
	Stale func() error
	// IdleExit stops the daemon once no event came for this long (zero:
	// never).
	IdleExit time.Duration
}

// MCPGateway is an MCP proxy served inside the server (mcpproxy.Proxy, as
// the composition adapts it).
type MCPGateway interface {
	// Handler answers MCP's streamable HTTP transport.
	Handler() http.Handler
	// AcceptPin accepts the changed definition of server's tool the
	// gateway refused, and returns the digest now pinned; an error that
	// is fs.ErrNotExist when none is waiting.
	AcceptPin(server, tool string) (string, error)
	// Close stops the gateway's upstream servers.
	Close() error
}

// Server decides over HTTP. Make one with New; it is safe for concurrent
// use.
type Server struct {
	cfg      Config
	guard    *celguard.Guard
	eng      *eval.Engine
	sessions *sessionTable
	workers  *workers
	metrics  *metrics
	hosts    map[string]hooks.Host
	handler  http.Handler
	log      *slog.Logger
	// mcp is the MCP gateway (Config.MCP), and mcpHandler its handler.
	mcp        MCPGateway
	mcpHandler http.Handler
	draining   atomic.Bool
	// console is the operator's web console (/ui/), nil without an
	// operator token.
	console *console
	// used is when the last hook event came (unix nanoseconds), for the
	// daemon's idle exit; stop ends Run (set by Run).
	used atomic.Int64
	stop atomic.Pointer[context.CancelFunc]
	// answered counts the daemon's signed answers (AgentStatus.DaemonAnswers).
	answered atomic.Int64
	// rpcConns are the daemon's connections not yet handed to HTTP or
	// answered, and its accept loops (daemonListener), which Run waits for
	// as for HTTP's requests.
	rpcConns sync.WaitGroup

	// mu guards the reload state.
	mu        sync.Mutex
	loadedAt  time.Time
	reloads   int
	lastErr   string
	lastErrAt time.Time
}

// New compiles the policies cfg.Sources reads and returns a server
// deciding with them. An error (the policies do not compile: a
// policy.Diagnostics) means there is nothing to serve.
func New(cfg Config) (*Server, error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OperatorToken != "" && cfg.OperatorToken == cfg.Token {
		return nil, errors.New("serve.New: the operator token must differ from the agents' token (an agent holding one must not approve its own requests, lift a halt or reset its counters)")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ecfg := cfg.Engine
	// One server, many repositories: each hook event is decided with the
	// project layer of its working directory (celguard.Guard.ForWorkDir).
	ecfg.PerProject = true
	ecfg.DecisionMetadata = true
	if ecfg.Approver == nil {
		ecfg.Approver = celguard.DeferAsks
	}
	s := &Server{cfg: cfg, log: log, sessions: newSessionTable(cfg.MaxSessions, cfg.SessionIdle), workers: newWorkers(), hosts: map[string]hooks.Host{}}
	s.metrics = newMetrics(s)
	// The metrics a decision's event carries (its store commits, its
	// judge's answer) are counted as the engine records the decision.
	sinks := eval.Tee{s.metrics.sink()}
	if ecfg.DecisionSink != nil {
		sinks = append(eval.Tee{ecfg.DecisionSink}, sinks...)
	}
	if cfg.OperatorToken != "" {
		ecfg.ApprovalRequests = true
		// The console keeps the recent decisions, masked as the
		// decision log masks them.
		s.console = newConsole()
		sinks = append(sinks, s.console.feed)
	}
	ecfg.DecisionSink = sinks
	guard, err := ecfg.Load(context.Background())
	if err != nil {
		return nil, err
	}
	s.guard, s.eng, s.loadedAt = guard, guard.Engine(), time.Now().UTC()
	hopts := cfg.HookOptions
	if cfg.OperatorToken == "" {
		// No request is recorded, and no one can approve one here.
		hopts.ApproveCommandFor, hopts.NoApprovals = nil, NoApprovalsReason
	}
	for _, name := range hooks.Hosts() {
		h, err := hooks.New(name, hopts)
		if err != nil {
			return nil, err
		}
		s.hosts[name] = h
	}
	if cfg.MCP != nil {
		host := MCPHost{Guard: guard, Sessions: mcpSessions{s}, NoApprovals: hopts.NoApprovals,
			Decided: func(d eval.Decision, took time.Duration) { s.metrics.decided(MCPHostLabel, d, took) }}
		if hopts.NoApprovals == "" {
			host.ApproveCommand = hopts.ApproveCommandFor
			if host.ApproveCommand == nil {
				cmd := hopts.ApproveCommand
				if cmd == "" {
					cmd = "celguard approve"
				}
				host.ApproveCommand = func(string) string { return cmd }
			}
		}
		if s.mcp, err = cfg.MCP(context.Background(), host); err != nil {
			guard.Close()
			return nil, fmt.Errorf("serve: the MCP gateway: %w", err)
		}
		s.mcpHandler = s.mcp.Handler()
	}
	s.handler = s.routes()
	return s, nil
}

// MCP is the server's MCP gateway, nil without Config.MCP.
func (s *Server) MCP() MCPGateway { return s.mcp }

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Guard returns what the composition root built for the server: its
// engine, and what was read of the policy layers.
func (s *Server) Guard() *celguard.Guard { return s.guard }

// Engine returns the engine the server decides with.
func (s *Server) Engine() *eval.Engine { return s.eng }

// Drain makes /readyz answer 503, so that a load balancer stops sending
// requests before the server shuts down, and ends the console's event
// streams.
func (s *Server) Drain() {
	s.draining.Store(true)
	if s.console != nil {
		s.console.close()
	}
}

// Reload reads the policy sources again and, when they changed since the
// last attempt (by digest) or force is set, compiles them and puts the new
// set in force; sessions keep their counters. A set that does not compile
// is not used: the last good set stays in force, and the error is
// returned and reported by /v1/status/details until a reload succeeds. changed
// says whether a new set is in force.
func (s *Server) Reload(force bool) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed, err = s.guard.Reload(force)
	if err != nil {
		s.reloadFailed(err)
		return false, err
	}
	if !changed {
		return false, nil
	}
	s.reloads++
	s.loadedAt = time.Now().UTC()
	s.lastErr, s.lastErrAt = "", time.Time{}
	s.metrics.reloaded(s.guard, true)
	s.log.Info("policies reloaded", "policy_digest", s.guard.Digest(), "reloads", s.reloads)
	return true, nil
}

// reloadFailed records a failed reload. The caller holds s.mu.
func (s *Server) reloadFailed(err error) {
	msg := err.Error()
	var ds policy.Diagnostics
	if errors.As(err, &ds) {
		msg = "the policies do not compile: " + ds.Errors().Error()
	}
	s.lastErr, s.lastErrAt = msg, time.Now().UTC()
	s.metrics.reloaded(s.guard, false)
	s.log.Error("policy reload failed; the last good set stays in force", "error", msg, "policy_digest", s.eng.PolicySet().Digest())
}

// Watch reloads the policies every interval until ctx ends (a changed file
// is seen by its digest), and forgets idle sessions.
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.Reload(false)
			s.sessions.sweep(s.cfg.Now())
		}
	}
}

// WatchBundles pulls the configured policy bundles, each at its own
// interval, until ctx ends (celguard.Guard.WatchBundles), and reloads
// after each pull that succeeded, so that a new bundle is in force at
// once. A failed pull is logged; the bundle in force stays. Run starts it.
func (s *Server) WatchBundles(ctx context.Context) {
	s.guard.WatchBundles(ctx, func(name string, err error) {
		if err != nil {
			s.log.Warn("policy bundle pull failed; the bundle in force stays", "bundle", name, "error", err.Error())
			return
		}
		_, _ = s.Reload(false)
	})
}

// AgentStatus is the answer of the agents' GET /v1/status: whether the
// server takes calls now (/readyz's answer), its version and the digest
// of the policy set in force, which every decision names too.
type AgentStatus struct {
	Ready        bool   `json:"ready"`
	Version      string `json:"version"`
	PolicyDigest string `json:"policy_digest"`
	// DaemonAnswers is, on the hook's decision daemon (Config.Daemon), how
	// many hook events it answered with a signed answer since it started:
	// what tells doctor, and the real-host suite, that the hooks went
	// through it rather than deciding in process. Absent on other servers.
	DaemonAnswers int64 `json:"daemon_answers,omitempty"`
}

// Status is the answer of the operator's GET /v1/status/details.
type Status struct {
	Version         string    `json:"version"`
	PolicyDigest    string    `json:"policy_digest"`
	LoadedAt        time.Time `json:"loaded_at"`
	Reloads         int       `json:"reloads"`
	LastReloadError string    `json:"last_reload_error,omitempty"`
	LastReloadAt    time.Time `json:"last_reload_error_at,omitzero"`
	Store           string    `json:"store"`
	Sessions        int       `json:"sessions"`
	// Bundles are the signed policy bundles configured, with the one in
	// force of each (docs/bundles.md).
	Bundles []celguard.BundleStatus `json:"bundles,omitempty"`
	// Telemetry is what the OpenTelemetry export queued, exported and
	// dropped (docs/telemetry.md); absent when telemetry is off.
	Telemetry *telemetry.Stats `json:"telemetry,omitempty"`
}

// Status reports the set in force and the reloads.
func (s *Server) Status() Status {
	bundles := s.guard.Bundles(context.Background())
	var tel *telemetry.Stats
	if st, ok := s.guard.TelemetryStats(); ok {
		tel = &st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	store := s.cfg.Store
	if store == "" {
		store = "memory"
	}
	return Status{Version: s.cfg.Version, PolicyDigest: s.eng.PolicySet().Digest(), LoadedAt: s.loadedAt,
		Reloads: s.reloads, LastReloadError: s.lastErr, LastReloadAt: s.lastErrAt, Store: store, Sessions: s.sessions.len(),
		Bundles: bundles, Telemetry: tel}
}

// tokenOK reports whether r carries the configured bearer token (or none
// is configured).
func (s *Server) tokenOK(r *http.Request) bool {
	return s.cfg.Token == "" || carries(r, s.cfg.Token)
}

// carries reports whether r carries the bearer token want, compared in
// constant time.
func carries(r *http.Request, want string) bool {
	got, ok := bearer(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// bearer reads the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !equalFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}

// equalFold compares ASCII strings ignoring case.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
