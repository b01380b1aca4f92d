package serve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Principal is who may call a route. The server knows three, each by what
// a request carries:
//
//   - Public: nothing. Liveness and readiness, for load balancers.
//   - Agent: the agents' token (Config.Token, `--token-file`; any request
//     when the server has none, which it may only on loopback). The agent
//     hosts and their clients decide calls with it: the session API, the
//     hook endpoints, the status a host needs.
//   - Operator: the operator token (Config.OperatorToken,
//     `--operator-token-file`), which must differ from the agents' token
//     and which the agents must not be able to read. The routes that
//     govern agents take it and no other: a fleet halt and its lift, the
//     deletion of a session (which resets its counters), the approvals of
//     a session's asks, a reload; and those that describe the deployment,
//     the full status and the metrics (decisions by policy across every
//     agent, reload and store faults, sessions held: nothing an agent
//     needs, and what an agent probing its guard would want to know). An agent's token gets 403 forbidden on
//     them, and without an operator token they answer 403 (approvals_disabled
//     on the approval routes, operator_disabled on the others).
//
// Why one operator principal, not an approver and an operator: what keeps
// an agent from governing itself is that it cannot hold the token, and one
// token kept out of the agents' reach is one file to protect and rotate.
// The people who approve an agent's asks are the people who may halt it.
// A deployment that needs them apart adds one Principal and one token;
// the table below is the one place that would change.
type Principal string

// The principals.
const (
	Public   Principal = "public"
	Agent    Principal = "agent"
	Operator Principal = "operator"
)

// Route is one route of the server, declared once in the route table with
// the principal that may call it.
type Route struct {
	Method    string
	Path      string // a net/http pattern path: /v1/sessions/{id}/before
	Principal Principal
	// What the route does, for people (docs/serve.md says more).
	What string
	// SelfAuth routes check the principal's token in their handler, to
	// answer a refusal in their own form (the hook endpoints answer HTTP
	// 200 with the host's deny, because Claude Code runs the call on any
	// other answer).
	SelfAuth bool
	// Console routes are the web console's (/ui/, docs/console.md): HTML
	// for a browser, authenticated by the console's session cookie that a
	// login with the operator token opens, never by a bearer header, and
	// every POST same-origin with the session's CSRF token. They are the
	// Operator principal's: the agents' token gets 403 on every one, and
	// without an operator token they answer 403 operator_disabled. They
	// are not in openapi.json (not an API).
	Console bool

	handle func(*Server, http.ResponseWriter, *http.Request)
	// consolePublic console routes need no console session (the login
	// form, the style sheet and the script); the other console checks
	// still apply.
	consolePublic bool
	disabled      string // the code of a 403 when the principal has no token
}

// routeTable is every route the server answers, with who may call it. A
// request for anything else answers 404 not_found (to the agent principal:
// 401 first without its token).
var routeTable = []Route{
	{Method: "GET", Path: "/healthz", Principal: Public, What: "liveness", handle: (*Server).healthz},
	{Method: "GET", Path: "/readyz", Principal: Public, What: "readiness: 503 while draining or while the state store does not answer", handle: (*Server).readyz},

	{Method: "POST", Path: "/v1/sessions", Principal: Agent, What: "start (or resume) a session", handle: (*Server).createSession},
	{Method: "POST", Path: "/v1/sessions/{id}/turns/start", Principal: Agent, What: "start a turn", handle: (*Server).startTurn},
	{Method: "POST", Path: "/v1/sessions/{id}/turns/end", Principal: Agent, What: "end a turn: the turn_end rules decide", handle: (*Server).endTurn},
	{Method: "POST", Path: "/v1/sessions/{id}/before", Principal: Agent, What: "decide a call before it runs", handle: (*Server).before},
	{Method: "POST", Path: "/v1/sessions/{id}/after", Principal: Agent, What: "decide a call's result", handle: (*Server).after},
	{Method: "POST", Path: "/v1/sessions/{id}/input", Principal: Agent, What: "decide the messages sent to the model", handle: (*Server).input},
	{Method: "POST", Path: "/v1/sessions/{id}/output", Principal: Agent, What: "decide the model's answer", handle: (*Server).output},
	{Method: "POST", Path: "/v1/hooks/{host}", Principal: Agent, SelfAuth: true, What: "a host's hook event, answered as the command hook answers it", handle: (*Server).hook},
	{Method: "GET", Path: "/v1/status", Principal: Agent, What: "whether the server is ready, its version and the digest of the policy set in force", handle: (*Server).status},
	{Method: "GET", Path: "/openapi.json", Principal: Agent, What: "the OpenAPI document of these routes", handle: (*Server).openapi},
	{Method: "POST", Path: "/mcp", Principal: Agent, What: "the MCP gateway (streamable HTTP): a client's requests to the MCP servers it fronts", handle: (*Server).mcpRoute},
	{Method: "GET", Path: "/mcp", Principal: Agent, What: "the MCP gateway: a session's stream of server messages", handle: (*Server).mcpRoute},
	{Method: "DELETE", Path: "/mcp", Principal: Agent, What: "the MCP gateway: end a session", handle: (*Server).mcpRoute},

	{Method: "DELETE", Path: "/v1/sessions/{id}", Principal: Operator, What: "forget a session and its state (its counters start again)", handle: (*Server).deleteSession},
	{Method: "POST", Path: "/v1/halt", Principal: Operator, What: "halt every session of an agent, repository or organisation", handle: (*Server).halt},
	{Method: "DELETE", Path: "/v1/halt", Principal: Operator, What: "lift a fleet halt", handle: (*Server).halt},
	{Method: "GET", Path: "/metrics", Principal: Operator, What: "Prometheus metrics: decisions by policy across every agent, faults, store errors, reloads, sessions held", handle: (*Server).metricsRoute},
	{Method: "GET", Path: "/v1/status/details", Principal: Operator, What: "the status in full: reloads and the last reload error, the store, the sessions held, the bundles", handle: (*Server).statusDetails},
	{Method: "POST", Path: "/v1/mcp/pins/accept", Principal: Operator, What: "accept the changed definition of a tool the MCP gateway refused (tool_changed)", handle: (*Server).acceptPin},
	{Method: "POST", Path: "/v1/reload", Principal: Operator, What: "read and compile the policies again now", handle: (*Server).reload},
	{Method: "GET", Path: "/v1/approvals", Principal: Operator, What: "the pending requests and grants of every session this server holds", handle: (*Server).listAllApprovals, disabled: CodeApprovalsDisabled},
	{Method: "GET", Path: "/v1/sessions/{id}/approvals", Principal: Operator, What: "a session's pending requests and grants", handle: (*Server).listApprovals, disabled: CodeApprovalsDisabled},
	{Method: "POST", Path: "/v1/sessions/{id}/approvals", Principal: Operator, What: "approve a request, once or for the session", handle: (*Server).approve, disabled: CodeApprovalsDisabled},
	{Method: "POST", Path: "/v1/sessions/{id}/denials", Principal: Operator, What: "deny a request: its exact call is refused for the rest of the session, with the note", handle: (*Server).deny, disabled: CodeApprovalsDisabled},
	{Method: "DELETE", Path: "/v1/sessions/{id}/approvals/{approval}", Principal: Operator, What: "revoke a grant or drop a request", handle: (*Server).revoke, disabled: CodeApprovalsDisabled},

	// The web console (console.go, docs/console.md).
	{Method: "GET", Path: "/ui", Principal: Operator, Console: true, consolePublic: true, What: "the console: a redirect to /ui/", handle: func(_ *Server, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	}},
	{Method: "GET", Path: "/ui/login", Principal: Operator, Console: true, consolePublic: true, What: "the console's login form", handle: (*Server).consoleLoginPage},
	{Method: "POST", Path: "/ui/login", Principal: Operator, Console: true, consolePublic: true, What: "log in to the console with the operator token", handle: (*Server).consoleLogin},
	{Method: "GET", Path: "/ui/static/{file}", Principal: Operator, Console: true, consolePublic: true, What: "the console's script and style sheet", handle: (*Server).consoleStatic},
	{Method: "POST", Path: "/ui/logout", Principal: Operator, Console: true, What: "log out of the console", handle: (*Server).consoleLogout},
	{Method: "GET", Path: "/ui/{$}", Principal: Operator, Console: true, What: "the approvals inbox: every pending request", handle: (*Server).consoleInbox},
	{Method: "GET", Path: "/ui/inbox", Principal: Operator, Console: true, What: "the inbox's list of pending requests, for the live update", handle: (*Server).consoleInboxList},
	{Method: "GET", Path: "/ui/events", Principal: Operator, Console: true, What: "server-sent events: the pending requests changed", handle: (*Server).consoleEvents},
	{Method: "POST", Path: "/ui/answer", Principal: Operator, Console: true, What: "approve a request once or for the session, or deny it", handle: (*Server).consoleAnswer},
	{Method: "GET", Path: "/ui/decisions", Principal: Operator, Console: true, What: "the recent decisions, searchable, and per-rule counts", handle: (*Server).consoleDecisions},
	{Method: "GET", Path: "/ui/sessions/{id}", Principal: Operator, Console: true, What: "a session: its calls in order, counters and facts", handle: (*Server).consoleSession},
	{Method: "GET", Path: "/ui/playground", Principal: Operator, Console: true, What: "the playground: a policy and a call", handle: (*Server).consolePlayground},
	{Method: "POST", Path: "/ui/playground", Principal: Operator, Console: true, What: "decide a call with a policy in a throwaway engine", handle: (*Server).consolePlayground},
	{Method: "GET", Path: "/ui/policy", Principal: Operator, Console: true, What: "the policy set in force, layer by layer", handle: (*Server).consolePolicy},
}

// Routes returns the route table: every route of the server with the
// principal that may call it.
func Routes() []Route { return slices.Clone(routeTable) }

// routes builds the handler from the route table.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routeTable {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
		if rt.Console {
			h = s.authorizeConsole(rt, h)
		} else if !rt.SelfAuth {
			h = s.authorize(rt, h)
		}
		mux.Handle(rt.Method+" "+rt.Path, h)
	}
	mux.Handle("/", s.authorize(Route{Principal: Agent}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})))
	return s.observe(mux)
}

// authorize lets through a request that carries the token of rt's principal.
func (s *Server) authorize(rt Route, next http.Handler) http.Handler {
	switch rt.Principal {
	case Public:
		return next
	case Agent:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.tokenOK(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="celguard"`)
				writeError(w, http.StatusUnauthorized, CodeUnauthorized, "this server needs an Authorization: Bearer token")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	disabled := rt.disabled
	if disabled == "" {
		disabled = CodeOperatorDisabled
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.cfg.OperatorToken == "":
			writeError(w, http.StatusForbidden, disabled,
				"this route is the operator's, and the server has no operator token: start it with --operator-token-file (a token the agents cannot read)")
		case carries(r, s.cfg.OperatorToken):
			next.ServeHTTP(w, r)
		case s.cfg.Token != "" && carries(r, s.cfg.Token):
			writeError(w, http.StatusForbidden, CodeForbidden, "the agents' token does not open the operator's routes: use the operator token")
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="celguard operator"`)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "this route needs an Authorization: Bearer header with the operator token")
		}
	})
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	switch status, err := s.readiness(r.Context()); {
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": status, "error": err.Error()})
	case status != "ready":
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": status})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": status})
	}
}

// readiness is "ready", "draining", or "unavailable" with the error of
// the state store's check.
func (s *Server) readiness(ctx context.Context) (string, error) {
	if s.draining.Load() {
		return "draining", nil
	}
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.cfg.Ready(ctx)
		cancel()
		if err != nil {
			s.log.Warn("not ready", "error", err.Error())
			return "unavailable", err
		}
	}
	return "ready", nil
}

// status answers the agents' GET /v1/status: what a host needs to know
// whether to send calls and which set decided them, nothing about the
// deployment (the store, the sessions, the reloads: /v1/status/details,
// the operator's).
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	ready, _ := s.readiness(r.Context())
	st := AgentStatus{Ready: ready == "ready", Version: s.cfg.Version, PolicyDigest: s.eng.PolicySet().Digest()}
	if s.cfg.Daemon != nil {
		st.DaemonAnswers = s.answered.Load()
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) statusDetails(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Status())
}

func (s *Server) metricsRoute(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}

// reloadAnswer is the answer of POST /v1/reload.
type reloadAnswer struct {
	Changed      bool   `json:"changed"`
	PolicyDigest string `json:"policy_digest"`
}

// reload compiles the policies again now (as SIGHUP does): 200 with the
// digest in force, or 422 reload_failed when they do not compile (the last
// good set stays in force).
func (s *Server) reload(w http.ResponseWriter, _ *http.Request) {
	changed, err := s.Reload(true)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, CodeReloadFailed, s.Status().LastReloadError)
		return
	}
	writeJSON(w, http.StatusOK, reloadAnswer{Changed: changed, PolicyDigest: s.eng.PolicySet().Digest()})
}
