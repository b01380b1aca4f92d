package serve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
	// handleValue, instead of handle, is the handler of a route whose path
	// has one wildcard, called with the wildcard's value. These routes
	// (the decisions') are matched without the ServeMux when the path is
	// plain (fastRoutes).
	handleValue func(*Server, http.ResponseWriter, *http.Request, string)
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
	{Method: "POST", Path: "/v1/sessions/{id}/turns/start", Principal: Agent, What: "start a turn", handleValue: (*Server).startTurn},
	{Method: "POST", Path: "/v1/sessions/{id}/turns/end", Principal: Agent, What: "end a turn: the turn_end rules decide", handleValue: (*Server).endTurn},
	{Method: "POST", Path: "/v1/sessions/{id}/before", Principal: Agent, What: "decide a call before it runs", handleValue: (*Server).before},
	{Method: "POST", Path: "/v1/sessions/{id}/after", Principal: Agent, What: "decide a call's result", handleValue: (*Server).after},
	{Method: "POST", Path: "/v1/sessions/{id}/input", Principal: Agent, What: "decide the messages sent to the model", handleValue: (*Server).input},
	{Method: "POST", Path: "/v1/sessions/{id}/output", Principal: Agent, What: "decide the model's answer", handleValue: (*Server).output},
	{Method: "POST", Path: "/v1/hooks/{host}", Principal: Agent, SelfAuth: true, What: "a host's hook event, answered as the command hook answers it", handleValue: (*Server).hook},
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
		handle := rt.handle
		if rt.handleValue != nil {
			name := wildcard(rt.Path)
			handle = func(s *Server, w http.ResponseWriter, r *http.Request) { rt.handleValue(s, w, r, r.PathValue(name)) }
		}
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(s, w, r) })
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
	return s.observe(router{mux: mux, fast: s.fastRoutes(routeTable)})
}

// wildcard is the name of the one wildcard of a route's path
// ("/v1/sessions/{id}/before": "id"); it panics when the path has not
// exactly one, which a handleValue route must have.
func wildcard(path string) string {
	i := strings.IndexByte(path, '{')
	j := strings.IndexByte(path, '}')
	if i < 0 || j < i || strings.Count(path, "{") != 1 || strings.Contains(path[i:j], "...") || path[i+1:j] == "$" {
		panic("serve: route " + path + " has a handleValue but not one single-segment wildcard")
	}
	return path[i+1 : j]
}

// router answers a request with the route table's handler: a decision
// route's request with a plain path (fastRoute.match) directly, any other
// through the ServeMux.
type router struct {
	mux  *http.ServeMux
	fast []fastRoute
}

// fastRoute is a route of the table matched without the ServeMux: a
// method and a path of one wildcard segment between a literal prefix and
// a literal suffix ("POST", "/v1/sessions/", "/before"). The ServeMux
// finds a decision route's handler by cleaning the path, walking its
// routing tree and allocating the wildcard's value for every request, in
// about 3,000 instructions; fastRoute takes a prefix and a suffix. It
// answers only a path the ServeMux would send to the same route with the
// same value, and leaves every other to it: the segment must be plain
// (plainSegment), the URL must have no RawPath (nothing escaped in it),
// and the route must be the only one of the table of its method whose
// path could match (fastRoutes). TestFastRoutesAgreeWithMux holds it to
// the ServeMux.
type fastRoute struct {
	method, prefix, suffix string
	// pattern is the route's ServeMux pattern, which the ServeMux sets as
	// the request's Pattern (the metrics' route label).
	pattern string
	handle  func(http.ResponseWriter, *http.Request, string)
}

// fastRoutes are table's handleValue routes that can be matched without
// the ServeMux, each authorized as the ServeMux's handler for it is.
func (s *Server) fastRoutes(table []Route) []fastRoute {
	for _, rt := range table {
		if !strings.HasPrefix(rt.Path, "/") {
			return nil // a route for one host, which the ServeMux prefers for that host
		}
	}
	var fast []fastRoute
	for _, rt := range table {
		if rt.handleValue == nil || rt.Console {
			continue
		}
		name := wildcard(rt.Path)
		i := strings.Index(rt.Path, "{"+name+"}")
		f := fastRoute{method: rt.Method, prefix: rt.Path[:i], suffix: rt.Path[i+len(name)+2:], pattern: rt.Method + " " + rt.Path}
		if !strings.HasSuffix(f.prefix, "/") || f.suffix != "" && f.suffix[0] != '/' || strings.ContainsAny(f.suffix, "{}") {
			continue // the wildcard is not a whole segment
		}
		// A route of the same method whose path has the same prefix and
		// suffix (a literal where this one has its wildcard, which the
		// ServeMux would prefer) leaves the route to the ServeMux.
		shared := false
		for _, o := range table {
			if o.Path != rt.Path && o.Method == rt.Method && strings.HasPrefix(o.Path, f.prefix) && strings.HasSuffix(o.Path, f.suffix) {
				shared = true
			}
		}
		if shared {
			continue
		}
		handle, allow := rt.handleValue, !rt.SelfAuth
		f.handle = func(w http.ResponseWriter, r *http.Request, v string) {
			if allow && !s.allowed(rt, w, r) {
				return
			}
			handle(s, w, r, v)
		}
		fast = append(fast, f)
	}
	return fast
}

// match is the fast route of r and its wildcard's value, when r's path
// is plain and one of them matches it.
func (rt *router) match(r *http.Request) (*fastRoute, string) {
	if r.URL.RawPath != "" {
		return nil, ""
	}
	p := r.URL.Path
	for i := range rt.fast {
		f := &rt.fast[i]
		if r.Method != f.method || len(p) <= len(f.prefix)+len(f.suffix) || !strings.HasPrefix(p, f.prefix) || !strings.HasSuffix(p, f.suffix) {
			continue
		}
		if v := p[len(f.prefix) : len(p)-len(f.suffix)]; plainSegment(v) {
			return f, v
		}
	}
	return nil, ""
}

// plainSegment reports whether v is a path segment that the ServeMux
// matches as it is: not empty, not "." nor "..", which it cleans, and
// made only of ASCII letters, digits and "-._~:@", which a URL's path
// never escapes (so its escaped and unescaped forms are v).
func plainSegment(v string) bool {
	if v == "" || v == "." || v == ".." {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == ':', c == '@':
		default:
			return false
		}
	}
	return true
}

// serve answers r with its route's handler, setting its Pattern as the
// ServeMux does.
func (rt *router) serve(w http.ResponseWriter, r *http.Request) {
	if f, v := rt.match(r); f != nil {
		r.Pattern = f.pattern
		f.handle(w, r, v)
		return
	}
	rt.mux.ServeHTTP(w, r)
}

// authorize lets through a request that carries the token of rt's
// principal (allowed).
func (s *Server) authorize(rt Route, next http.Handler) http.Handler {
	if rt.Principal == Public {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.allowed(rt, w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// allowed reports whether r carries the token of rt's principal, and
// answers the refusal itself when it does not.
func (s *Server) allowed(rt Route, w http.ResponseWriter, r *http.Request) bool {
	switch rt.Principal {
	case Public:
		return true
	case Agent:
		if !s.tokenOK(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="celguard"`)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "this server needs an Authorization: Bearer token")
			return false
		}
		return true
	}
	disabled := rt.disabled
	if disabled == "" {
		disabled = CodeOperatorDisabled
	}
	switch {
	case s.cfg.OperatorToken == "":
		writeError(w, http.StatusForbidden, disabled,
			"this route is the operator's, and the server has no operator token: start it with --operator-token-file (a token the agents cannot read)")
	case carries(r, s.cfg.OperatorToken):
		return true
	case s.cfg.Token != "" && carries(r, s.cfg.Token):
		writeError(w, http.StatusForbidden, CodeForbidden, "the agents' token does not open the operator's routes: use the operator token")
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="celguard operator"`)
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "this route needs an Authorization: Bearer header with the operator token")
	}
	return false
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
