// Package client is the Go client of `celguard serve`, the twin of the
// Python client (python/src/celguard): the forwarding hook (`celguard hook
// HOST --server URL`), `celguard approve --server` and `celguard approvals
// list --server` talk to a server through it, and so can any Go program.
//
// One Client talks to one server with one token: the agents' token for
// the agent routes (Hook, StartSession, Before, After), the operator's for
// the operator routes (the approvals, Halt, Lift, Reload); serve's route
// table (serve.Routes) says which is which. Every answer that is not a
// success is decoded once, here, into an *Error with the server's stable
// code; a transport failure, a redirect or an answer that is not what the
// route returns is an error too, so a caller that decides a call blocks it
// on any error.
//
// Why a package of its own, under serve/: the command line and embedders
// need the same client, and it must not drag the server (its metrics, its
// engine) into a program that only asks one. It imports eval for the types
// the server answers with, nothing of serve.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks/daemonwire"
)

// Bounds of what is read from a server.
const (
	// MaxHookAnswer bounds a hook endpoint's answer.
	MaxHookAnswer = daemonwire.MaxAnswer
	// MaxAnswer bounds every other answer.
	MaxAnswer = 8 << 20
)

// Client talks to one celguard serve. Make one with New; it is safe for
// concurrent use.
type Client struct {
	server string // as given, for messages
	base   string // the URL routes are appended to
	token  string
	http   *http.Client
}

// New returns a client of the server at server: http://HOST:PORT,
// https://HOST:PORT, or unix:PATH for a unix socket. token, when not
// empty, is sent as "Authorization: Bearer TOKEN" with every request. The
// client ignores HTTP_PROXY and refuses redirects: it talks to the server
// it was given.
func New(server, token string) (*Client, error) {
	c := &Client{server: server, token: token}
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, errors.New("--server unix: needs a socket path, e.g. unix:/run/celguard.sock")
		}
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		c.http, c.base = &http.Client{Transport: tr}, "http://celguard"
		return c, nil
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want http://HOST:PORT, https://HOST:PORT or unix:/path/to.sock", server)
	}
	c.http = &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("the server redirected the client")
	}}
	c.base = strings.TrimSuffix(u.String(), "/")
	return c, nil
}

// Server is the server's address as given to New.
func (c *Client) Server() string { return c.server }

// Error is a server's refusal: the HTTP status and the error body's
// stable code (serve's Code* constants: unauthorized, forbidden,
// no_such_request, ...) and message.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("the server refused (%s, HTTP %d): %s", e.Code, e.Status, e.Message)
}

// do sends one request (body encoded as JSON when not nil, raw when a
// []byte) and decodes a success into out (when not nil). A failure answer
// is an *Error when its body is the server's error form, else an error
// naming the status and the body's first line.
func (c *Client) do(ctx context.Context, method, path string, body, out any, limit int64) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("the server %s did not answer: %w", c.server, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return fmt.Errorf("the server %s: %w", c.server, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			return &Error{Status: res.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
		}
		return fmt.Errorf("the server %s answered HTTP %d: %s", c.server, res.StatusCode, firstLine(data))
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("the server %s answered more than %d bytes", c.server, limit)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the server %s answered something that is not what %s %s returns: %w", c.server, method, path, err)
	}
	return nil
}

// firstLine is the first line of b, at most 200 bytes.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// sessionPath is the path of a session's route.
func sessionPath(id, rest string) string { return "/v1/sessions/" + url.PathEscape(id) + rest }

// CommandAnswer is a command hook's answer, as the hook endpoints give it
// with ?form=command: what to write on stdout and stderr, and the exit
// code (daemonwire.CommandAnswer, which the lean hook client links alone).
type CommandAnswer = daemonwire.CommandAnswer

// Hook posts a host's hook event (host: claude-code, codex, gemini,
// cursor) and returns the command hook's answer the server decided. Any
// answer but HTTP 200 with a well-formed command answer is an error.
func (c *Client) Hook(ctx context.Context, host string, event []byte) (CommandAnswer, error) {
	var body []byte
	if err := c.do(ctx, http.MethodPost, "/v1/hooks/"+url.PathEscape(host)+"?form=command", event, &body, MaxHookAnswer); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return CommandAnswer{}, fmt.Errorf("the server %s answered HTTP %d: %s: %s", c.server, e.Status, e.Code, e.Message)
		}
		return CommandAnswer{}, err
	}
	a, err := ParseCommandAnswer(body)
	if err != nil {
		return CommandAnswer{}, fmt.Errorf("the server %s answered something that is not a hook answer: %w", c.server, err)
	}
	return a, nil
}

// ParseCommandAnswer decodes a command answer strictly: the three fields
// and no other, an exit code a hook may have (0, 1 or 2), and stdout empty
// or one JSON value (daemonwire.ParseAnswer).
func ParseCommandAnswer(body []byte) (CommandAnswer, error) {
	return daemonwire.ParseAnswer(body)
}

// Session is the answer of StartSession.
type Session struct {
	SessionID string `json:"session_id"`
	Turn      int    `json:"turn"`
}

// StartSession starts (or resumes) session id for agent, with the
// metadata policies read as session (repository, org, ...). An empty id
// lets the server choose one.
func (c *Client) StartSession(ctx context.Context, id string, agent eval.Agent, meta map[string]any) (Session, error) {
	body := map[string]any{}
	if id != "" {
		body["session_id"] = id
	}
	if !agent.IsZero() {
		body["agent"] = agent
	}
	if meta != nil {
		body["meta"] = meta
	}
	var s Session
	return s, c.do(ctx, http.MethodPost, "/v1/sessions", body, &s, MaxAnswer)
}

// Before decides a call of session before it runs.
func (c *Client) Before(ctx context.Context, session string, call eval.Call) (eval.Decision, error) {
	var d eval.Decision
	return d, c.do(ctx, http.MethodPost, sessionPath(session, "/before"), call, &d, MaxAnswer)
}

// After decides a call's result.
func (c *Client) After(ctx context.Context, session string, call eval.Call, result eval.Result) (eval.Decision, error) {
	body := struct {
		eval.Call
		Result eval.Result `json:"result"`
	}{call, result}
	var d eval.Decision
	return d, c.do(ctx, http.MethodPost, sessionPath(session, "/after"), body, &d, MaxAnswer)
}

// Approvals are a session's pending approval requests and grants.
type Approvals struct {
	SessionID string                `json:"session_id"`
	Requests  []eval.PendingRequest `json:"requests"`
	Grants    []eval.Grant          `json:"grants"`
}

// Approvals lists a session's pending requests and grants (operator).
func (c *Client) Approvals(ctx context.Context, session string) (Approvals, error) {
	var a Approvals
	return a, c.do(ctx, http.MethodGet, sessionPath(session, "/approvals"), nil, &a, MaxAnswer)
}

// AllApprovals lists the pending requests and grants of every session the
// server holds that has one (operator).
func (c *Client) AllApprovals(ctx context.Context) ([]Approvals, error) {
	var a struct {
		Sessions []Approvals `json:"sessions"`
	}
	return a.Sessions, c.do(ctx, http.MethodGet, "/v1/approvals", nil, &a, MaxAnswer)
}

// Approved is the answer of Approve.
type Approved struct {
	Grant   eval.Grant          `json:"grant"`
	Request eval.PendingRequest `json:"request"`
}

// Approve approves request of session, once or for the session
// (operator); the server refuses eval.GrantAlways (always_refused).
func (c *Client) Approve(ctx context.Context, session, request string, scope eval.GrantScope) (Approved, error) {
	var a Approved
	return a, c.do(ctx, http.MethodPost, sessionPath(session, "/approvals"),
		map[string]string{"request_id": request, "scope": string(scope)}, &a, MaxAnswer)
}

// Denied is the answer of Deny.
type Denied struct {
	Denial  eval.Denial         `json:"denial"`
	Request eval.PendingRequest `json:"request"`
}

// Deny denies request of session (operator): its exact call is refused for
// the rest of the session with note, and asks no more. operator names the
// person for the decision log ("" for none); digest, when not "", is the
// digest of the call the person was shown (another call answers 409
// stale_request). A request answered already answers 409 stale_request, an
// unknown one 404 no_such_request.
func (c *Client) Deny(ctx context.Context, session, request, note, operator, digest string) (Denied, error) {
	var d Denied
	body := map[string]string{"request_id": request}
	for k, v := range map[string]string{"note": note, "operator": operator, "digest": digest} {
		if v != "" {
			body[k] = v
		}
	}
	return d, c.do(ctx, http.MethodPost, sessionPath(session, "/denials"), body, &d, MaxAnswer)
}

// Revoke takes back grant (or drops pending request) id of session
// (operator).
func (c *Client) Revoke(ctx context.Context, session, id string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(session, "/approvals/"+url.PathEscape(id)), nil, nil, MaxAnswer)
}

// Halt halts every session whose metadata names key under scope (agent,
// repository, org), on every replica sharing the store (operator).
func (c *Client) Halt(ctx context.Context, scope, key, reason string) error {
	return c.do(ctx, http.MethodPost, "/v1/halt", map[string]string{"scope": scope, "key": key, "reason": reason}, nil, MaxAnswer)
}

// Lift lifts a fleet halt (operator).
func (c *Client) Lift(ctx context.Context, scope, key string) error {
	return c.do(ctx, http.MethodDelete, "/v1/halt", map[string]string{"scope": scope, "key": key}, nil, MaxAnswer)
}

// DeleteSession forgets a session and its state (operator).
func (c *Client) DeleteSession(ctx context.Context, session string) error {
	return c.do(ctx, http.MethodDelete, sessionPath(session, ""), nil, nil, MaxAnswer)
}

// Reload makes the server read and compile its policies now (operator);
// it returns the digest of the set in force.
func (c *Client) Reload(ctx context.Context) (string, error) {
	var a struct {
		PolicyDigest string `json:"policy_digest"`
	}
	return a.PolicyDigest, c.do(ctx, http.MethodPost, "/v1/reload", nil, &a, MaxAnswer)
}
