package serve

// The console: a web interface for the operator at /ui/ (docs/console.md).
//
// Decisions, and why:
//
//   - Server-rendered HTML (html/template, which escapes every value by
//     its context) and one small JavaScript file for what a page cannot do
//     alone: the inbox's live updates (server-sent events), the
//     playground's shareable link (the URL fragment) and picking a recorded
//     call. No front-end toolchain to pin, no build step, no third-party
//     asset: the templates, the script and the style sheet are embedded in
//     the binary with go:embed (ui/). Every page works without the script
//     except what needs it (the inbox then updates on reload).
//   - Operator only, and off unless the server has an operator token: the
//     routes are the Operator principal's in the route table (Route.Console).
//     The agents' token gets 403 on every one of them, the login page
//     included.
//   - Login: the operator pastes the operator token (and says who they
//     are) into the login form; the server compares it in constant time
//     and opens a console session: a random 256-bit id in a cookie
//     (HttpOnly, SameSite=Strict, Path=/ui/, Secure when the server serves
//     TLS), kept in memory (a restart logs everyone out), idle for at most
//     ConsoleIdle and alive for at most ConsoleMaxAge. The token itself is
//     never stored in the browser, so a page cannot leak it. The name the
//     operator gives is what the decision log and telemetry record as the
//     operator's identity, with the console session's short id: the token
//     authenticates, the name says which person held it.
//   - Every state-changing request (POST) must come from the console's own
//     origin (http.CrossOriginProtection: Sec-Fetch-Site, then Origin
//     against Host) and carry the session's CSRF token (a form field or
//     the X-CSRF-Token header), compared in constant time; the login form
//     is covered by the origin check (it has no session yet).
//   - Every answer carries a strict Content-Security-Policy (default-src
//     'none'; scripts, styles, images and connections from 'self' only; no
//     inline script or style; frame-ancestors 'none'; form-action 'self'),
//     X-Frame-Options: DENY, X-Content-Type-Options: nosniff,
//     Referrer-Policy: no-referrer and Cache-Control: no-store.

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bounds of the console's sessions.
const (
	// ConsoleIdle is how long a console session lasts unused.
	ConsoleIdle = time.Hour
	// ConsoleMaxAge is how long a console session lasts at most.
	ConsoleMaxAge = 12 * time.Hour
	// maxConsoleSessions bounds the console sessions kept; past it the
	// oldest is logged out.
	maxConsoleSessions = 256
	// consoleCookie is the console session's cookie.
	consoleCookie = "celguard_console"
	// maxOperatorName bounds the name an operator gives at login.
	maxOperatorName = 64
)

// Codes of the console's refusals.
const (
	CodeCSRF        = "csrf_refused"    // HTTP 403: a POST without the session's CSRF token, or from another origin
	CodeNoConsole   = "console_login"   // HTTP 401: no console session (log in at /ui/login)
	CodeStaleAnswer = "stale_request"   // HTTP 409: the request changed, was answered or expired since the page showed it
	CodeBadLogin    = "login_refused"   // HTTP 401: the token given at login is not the operator token
	CodeTooLong     = "playground_size" // HTTP 413: a playground policy or call larger than its bound
)

// consoleSession is one operator logged in to the console.
type consoleSession struct {
	id       string
	name     string
	csrf     string
	created  time.Time
	lastSeen time.Time
}

// Operator is the identity the decision log records for the session's
// answers: the name given at login and the session's short id.
func (c *consoleSession) operator() string {
	sum := sha256.Sum256([]byte(c.id))
	return c.name + " (console " + hex.EncodeToString(sum[:4]) + ")"
}

// consoleSessions are the console's logged-in operators.
type consoleSessions struct {
	mu sync.Mutex
	m  map[string]*consoleSession
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// open starts a session for name.
func (cs *consoleSessions) open(name string, now time.Time) *consoleSession {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]*consoleSession{}
	}
	cs.expireLocked(now)
	for len(cs.m) >= maxConsoleSessions {
		var oldest *consoleSession
		for _, s := range cs.m {
			if oldest == nil || s.created.Before(oldest.created) {
				oldest = s
			}
		}
		delete(cs.m, oldest.id)
	}
	s := &consoleSession{id: randomHex(32), name: name, csrf: randomHex(32), created: now, lastSeen: now}
	cs.m[s.id] = s
	return s
}

func (cs *consoleSessions) expireLocked(now time.Time) {
	for id, s := range cs.m {
		if now.Sub(s.lastSeen) > ConsoleIdle || now.Sub(s.created) > ConsoleMaxAge {
			delete(cs.m, id)
		}
	}
}

// get returns the live session of the request's cookie.
func (cs *consoleSessions) get(r *http.Request, now time.Time) (*consoleSession, bool) {
	c, err := r.Cookie(consoleCookie)
	if err != nil || len(c.Value) != 64 {
		return nil, false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.expireLocked(now)
	for id, s := range cs.m {
		if subtle.ConstantTimeCompare([]byte(id), []byte(c.Value)) == 1 {
			s.lastSeen = now
			cp := *s
			return &cp, true
		}
	}
	return nil, false
}

// close ends the session id.
func (cs *consoleSessions) close(id string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.m, id)
}

// consoleCSP is the console's Content-Security-Policy.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// securityHeaders sets the headers of every console answer.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// consoleKey is the request context key of the console session.
type consoleKey struct{}

// authorizeConsole lets through a request of a logged-in operator (rt.Console
// routes): the server must have an operator token; the agents' token is
// refused outright; a POST must be same-origin and carry the CSRF token.
// The login routes (public within the console) need no session.
func (s *Server) authorizeConsole(rt Route, next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		consoleError(w, r, http.StatusForbidden, CodeCSRF, "cross-origin requests are refused: use the console from its own address")
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		switch {
		case s.cfg.OperatorToken == "":
			consoleError(w, r, http.StatusForbidden, CodeOperatorDisabled,
				"the console is the operator's, and the server has no operator token: start it with --operator-token-file")
			return
		case s.cfg.Token != "" && carries(r, s.cfg.Token):
			consoleError(w, r, http.StatusForbidden, CodeForbidden, "the agents' token does not open the console")
			return
		}
		if err := cop.Check(r); err != nil {
			consoleError(w, r, http.StatusForbidden, CodeCSRF, "cross-origin requests are refused: use the console from its own address")
			return
		}
		if rt.consolePublic {
			next.ServeHTTP(w, r)
			return
		}
		cs, ok := s.console.sessions.get(r, s.cfg.Now())
		if !ok {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ui/events") && r.Header.Get("X-Requested-With") == "" {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			consoleError(w, r, http.StatusUnauthorized, CodeNoConsole, "log in to the console first, at /ui/login")
			return
		}
		if r.Method == http.MethodPost {
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
				got = r.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(cs.csrf)) != 1 {
				consoleError(w, r, http.StatusForbidden, CodeCSRF, "the request has no valid CSRF token: reload the page and try again")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(contextWith(r, cs)))
	})
}

// consoleError answers a refusal: JSON for a script, a short page for a
// browser.
func consoleError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if r.Header.Get("X-Requested-With") != "" || !strings.Contains(r.Header.Get("Accept"), "text/html") {
		writeError(w, status, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = consoleTemplates().ExecuteTemplate(w, "error.html", map[string]any{"Title": "Refused", "Code": code, "Message": msg, "Status": status})
}
