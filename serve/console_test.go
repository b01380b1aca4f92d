package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/net/html"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

// hostile is a string that would run script if a page did not escape it.
const hostile = `</code></pre><script>alert("x")</script><img src=x onerror=alert(1)>`

// hostilePolicy asks before a push, with a reason, a description and a
// policy name an attacker wrote.
const hostilePolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: asks
description: '<iframe src="javascript:alert(2)"></iframe>'
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("git push")'
    verdict: ask
    reason: 'pushing needs a person <script>alert("reason")</script>'
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("rm ")'
    verdict: block
    reason: 'no rm <img src=x onerror=alert(3)>'
  - id: everything
    match: {tools: [Bash]}
    verdict: allow
  - id: never-fires
    match: {tools: [Bash]}
    verdict: block
`

// captureSink keeps every decision event.
type captureSink struct {
	mu  sync.Mutex
	evs []eval.DecisionEvent
}

func (c *captureSink) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, *ev)
	return nil
}

func (c *captureSink) events() []eval.DecisionEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]eval.DecisionEvent(nil), c.evs...)
}

// consoleServer is a server with both tokens over hostilePolicy, its
// decisions captured.
func consoleServer(t *testing.T) (*fixture, *captureSink) {
	t.Helper()
	sink := &captureSink{}
	f := newFixture(t, func(c *serve.Config) {
		c.Token, c.OperatorToken = decisionToken, approverToken
		c.Engine.DecisionSink = sink
	})
	f.srcs = []policy.Source{policies.ToolClasses(), source("asks.yaml", hostilePolicy),
		{Name: "admin.yaml", Data: []byte(mandatoryAsk), Layer: policy.LayerAdmin}}
	if _, err := f.srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	return f, sink
}

// browserless is a console client without a browser: a cookie jar, the
// CSRF token of the last page.
type browserless struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`)

func newBrowserless(t *testing.T, base string) *browserless {
	jar, _ := cookiejar.New(nil)
	return &browserless{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserless) req(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if m := csrfMeta.FindStringSubmatch(string(data)); m != nil {
		b.csrf = m[1]
	}
	return resp, string(data)
}

func (b *browserless) login(name string) {
	b.t.Helper()
	resp, body := b.req("POST", "/ui/login", url.Values{"token": {approverToken}, "name": {name}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login: %d %s", resp.StatusCode, body)
	}
	if resp, body := b.req("GET", "/ui/", nil); resp.StatusCode != 200 || b.csrf == "" {
		b.t.Fatalf("inbox after login: %d %s", resp.StatusCode, body)
	}
}

// TestConsoleRefusesAgentToken: the agents' token gets 403 and nothing
// else from every console route, the login form included; a server
// without an operator token has no console.
func TestConsoleRefusesAgentToken(t *testing.T) {
	f, _ := consoleServer(t)
	off := newFixture(t, func(c *serve.Config) { c.Token = decisionToken })
	n := 0
	for _, rt := range serve.Routes() {
		if !rt.Console {
			continue
		}
		n++
		if rt.Principal != serve.Operator {
			t.Errorf("%s %s is a console route of %s, not the operator's", rt.Method, rt.Path, rt.Principal)
		}
		path := strings.NewReplacer("{id}", "s1", "{file}", "console.js", "{$}", "").Replace(rt.Path)
		a := f.do(rt.Method, path, nil, "Authorization", "Bearer "+decisionToken)
		if a.status != http.StatusForbidden || code(t, a) != serve.CodeForbidden {
			t.Errorf("%s %s with the agents' token: %d %s, want 403 forbidden", rt.Method, path, a.status, a.body)
		}
		a = off.do(rt.Method, path, nil, "Authorization", "Bearer "+decisionToken)
		if a.status != http.StatusForbidden {
			t.Errorf("%s %s without an operator token: %d %s, want 403", rt.Method, path, a.status, a.body)
		}
		a = off.do(rt.Method, path, nil)
		if a.status != http.StatusForbidden || code(t, a) != serve.CodeOperatorDisabled {
			t.Errorf("%s %s without an operator token: %d %s, want 403 operator_disabled", rt.Method, path, a.status, a.body)
		}
		// Without a console session: the login page or a refusal, never a page.
		if !strings.HasPrefix(path, "/ui/login") && !strings.HasPrefix(path, "/ui/static") {
			a = f.do(rt.Method, path, nil) // redirects followed
			if login := a.status == 200 && strings.Contains(string(a.body), `action="/ui/login"`); !login && a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
				t.Errorf("%s %s without a session: %d %s, want the login page or a refusal", rt.Method, path, a.status, a.body)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d console routes", n)
	}
	// The operator's bearer token is no console session either.
	if a := f.do("GET", "/ui/decisions", nil, "Authorization", "Bearer "+approverToken, "X-Requested-With", "x"); a.status != http.StatusUnauthorized {
		t.Errorf("the bearer operator token on a console page: %d, want 401 (log in)", a.status)
	}
}

// TestConsoleLogin: a wrong token or no name is refused; a login sets a
// cookie the scripts cannot read, sent to the console alone.
func TestConsoleLogin(t *testing.T) {
	f, _ := consoleServer(t)
	b := newBrowserless(t, f.url)
	if resp, _ := b.req("POST", "/ui/login", url.Values{"token": {decisionToken}, "name": {"eve"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the agents' token as the login's: %d, want 401", resp.StatusCode)
	}
	if resp, _ := b.req("POST", "/ui/login", url.Values{"token": {approverToken}, "name": {""}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no name: %d, want 400", resp.StatusCode)
	}
	resp, _ := b.req("POST", "/ui/login", url.Values{"token": {approverToken}, "name": {"ana"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"celguard_console=", "Path=/ui/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(ck, want) {
			t.Errorf("the session cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, approverToken) {
		t.Fatal("the cookie carries the operator token")
	}
	// Logging out ends the session.
	b.req("GET", "/ui/", nil)
	if resp, _ := b.req("POST", "/ui/logout", url.Values{"csrf": {b.csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if resp, _ := b.req("GET", "/ui/decisions", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Fatalf("after logout: %d %s, want a redirect to the login", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestConsoleCSRF: a POST without the session's CSRF token, with a wrong
// one, or from another origin is refused, and changes nothing.
func TestConsoleCSRF(t *testing.T) {
	f, _ := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login("ana")
	req := requestOf(t, f.before("s1", "git push origin main"))
	digest := pendingDigest(t, f, "s1", req)
	form := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "session": {"s1"}, "request": {req}, "digest": {digest}, "answer": {"once"}}
	}
	for name, tc := range map[string]struct {
		form   url.Values
		header []string
	}{
		"no token":     {form(""), nil},
		"wrong token":  {form(strings.Repeat("0", 64)), nil},
		"cross-site":   {form(b.csrf), []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://attacker.example"}},
		"other origin": {form(b.csrf), []string{"Origin", "http://attacker.example"}},
	} {
		resp, body := b.req("POST", "/ui/answer", tc.form, tc.header...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, serve.CodeCSRF) {
			t.Errorf("%s: %d %s, want 403 %s", name, resp.StatusCode, body, serve.CodeCSRF)
		}
	}
	if resp, _ := b.req("POST", "/ui/login", url.Values{"token": {approverToken}, "name": {"x"}}, "Sec-Fetch-Site", "cross-site", "Origin", "http://attacker.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site login: %d, want 403", resp.StatusCode)
	}
	if d := f.before("s1", "git push origin main"); d["verdict"] != "ask" {
		t.Fatalf("a refused answer approved the call: %v", d)
	}
	// The same request with the token and from the console's origin passes.
	if resp, body := b.req("POST", "/ui/answer", form(b.csrf), "Origin", f.url, "Sec-Fetch-Site", "same-origin"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a good answer: %d %s", resp.StatusCode, body)
	}
}

// pendingDigest is the digest of session sid's pending request id.
func pendingDigest(t *testing.T, f *fixture, sid, id string) string {
	t.Helper()
	a := f.do("GET", "/v1/sessions/"+sid+"/approvals", nil, "Authorization", "Bearer "+approverToken)
	for _, r := range a.json(t)["requests"].([]any) {
		if m := r.(map[string]any); m["id"] == id {
			return m["digest"].(string)
		}
	}
	t.Fatalf("no pending request %s in %s", id, a.body)
	return ""
}

// TestConsoleHeaders: every console answer carries the strict
// Content-Security-Policy and refuses framing; pages load no inline script.
func TestConsoleHeaders(t *testing.T) {
	f, _ := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login("ana")
	f.before("s1", "git push origin main")
	for _, path := range []string{"/ui/login", "/ui/", "/ui/inbox", "/ui/decisions", "/ui/sessions/s1", "/ui/playground", "/ui/policy", "/ui/static/console.js", "/ui/nope-not-a-page/../decisions"} {
		resp, body := b.req("GET", path, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows inline script", path, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: framing or sniffing allowed: %v", path, resp.Header)
		}
		if bad := activeContent(t, body); len(bad) > 0 {
			t.Errorf("%s has inline script or foreign content: %v", path, bad)
		}
	}
}

// TestConsoleEscapesHostileStrings: a tool argument, a rule's reason, a
// policy's text and a playground's policy and call written to run script
// are shown as text on every page.
func TestConsoleEscapesHostileStrings(t *testing.T) {
	f, _ := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login(`ana`)
	f.before("s1", "git push "+hostile)
	f.before("s1", "rm "+hostile)
	a := f.do("POST", "/v1/sessions", map[string]any{"session_id": "s2", "agent": map[string]any{"name": hostile}, "meta": map[string]any{"repo": hostile}},
		"Authorization", "Bearer "+decisionToken)
	if a.status != 200 {
		t.Fatal(a.status, string(a.body))
	}
	f.before("s2", "git push "+hostile)
	pages := map[string]string{}
	for _, path := range []string{"/ui/", "/ui/inbox", "/ui/decisions", "/ui/decisions?q=" + url.QueryEscape(hostile), "/ui/sessions/s1", "/ui/sessions/s2", "/ui/policy", "/ui/playground"} {
		resp, body := b.req("GET", path, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		pages[path] = body
	}
	resp, body := b.req("POST", "/ui/playground", url.Values{"csrf": {b.csrf}, "policy": {hostilePolicy + "\n  - id: broken\n    condition: '" + strings.ReplaceAll(hostile, "'", "''") + "'\n"},
		"call": {`{"tool":"Bash","args":{"command":"git push ` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}}`}})
	if resp.StatusCode != 200 {
		t.Fatalf("playground: %d %s", resp.StatusCode, body)
	}
	pages["playground POST"] = body
	for name, body := range pages {
		if bad := activeContent(t, body); len(bad) > 0 {
			t.Errorf("%s: the hostile strings became markup: %v", name, bad)
		}
	}
	for _, page := range []string{"/ui/", "/ui/decisions", "/ui/sessions/s1", "/ui/policy", "playground POST"} {
		if !strings.Contains(pages[page], "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the hostile string as text", page)
		}
	}
	if !strings.Contains(pages["/ui/policy"], "confirm-push") || !strings.Contains(pages["playground POST"], "&lt;script&gt;") {
		t.Error("the policy page or the playground lost the hostile policy")
	}
}

// TestConsoleAnswers: an answer is bound to the call's digest; a stale
// digest, an unknown, a duplicate or an already answered request is
// refused; every answer is recorded with the operator's identity; no
// answer lifts a mandatory rule's ask (it makes no request).
func TestConsoleAnswers(t *testing.T) {
	f, sink := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login("ana")
	req := requestOf(t, f.before("s1", "git push origin main"))
	digest := pendingDigest(t, f, "s1", req)
	answer := func(req, digest, ans, note string) (int, string) {
		resp, body := b.req("POST", "/ui/answer", url.Values{"csrf": {b.csrf}, "session": {"s1"}, "request": {req}, "digest": {digest}, "answer": {ans}, "note": {note}})
		return resp.StatusCode, body
	}
	if st, body := answer(req, strings.Repeat("a", 64), "once", ""); st != http.StatusConflict || !strings.Contains(body, serve.CodeStaleAnswer) {
		t.Fatalf("another call's digest: %d %s, want 409 stale_request", st, body)
	}
	if st, _ := answer(req, digest, "always", ""); st != http.StatusBadRequest {
		t.Fatalf("answer always: %d, want 400", st)
	}
	if st, _ := answer("ffffffff", digest, "once", ""); st != http.StatusConflict {
		t.Fatalf("an unknown request: %d, want 409", st)
	}
	if st, body := answer(req, digest, "once", "looks fine"); st != http.StatusSeeOther {
		t.Fatalf("approve once: %d %s", st, body)
	}
	if st, body := answer(req, digest, "once", ""); st != http.StatusConflict || !strings.Contains(body, "answered already") {
		t.Fatalf("answered twice: %d %s, want 409", st, body)
	}
	if d := f.before("s1", "git push origin main"); d["verdict"] != "allow" {
		t.Fatalf("the approved call: %v, want allow", d)
	}
	req2 := requestOf(t, f.before("s1", "git push origin main"))
	if st, _ := answer(req2, pendingDigest(t, f, "s1", req2), "deny", "not today"); st != http.StatusSeeOther {
		t.Fatalf("deny: %d", st)
	}
	d := f.before("s1", "git push origin main")
	if d["verdict"] != "block" || d["code"] != eval.CodeApprovalDenied || !strings.Contains(d["reason"].(string), "not today") {
		t.Fatalf("the denied call: %v, want a block approval_denied with the note", d)
	}
	if n := len(f.do("GET", "/v1/sessions/s1/approvals", nil, "Authorization", "Bearer "+approverToken).json(t)["requests"].([]any)); n != 0 {
		t.Fatalf("the denied call made %d new requests", n)
	}
	var answers []eval.DecisionEvent
	for _, ev := range sink.events() {
		if ev.Decision.Metadata["answered_in"] == "console" {
			answers = append(answers, ev)
		}
	}
	if len(answers) != 2 {
		t.Fatalf("want 2 answers recorded, got %d", len(answers))
	}
	ok, deny := answers[0].Decision, answers[1].Decision
	if ok.Code != serve.CodeOperatorApproved || ok.Approval.Outcome != eval.ApprovalApproved || ok.Approval.Remember != "once" || ok.Approval.Request != req ||
		!strings.HasPrefix(ok.Metadata["operator"], "ana (console ") || ok.Metadata["call_digest"] != digest || ok.RuleID != "confirm-push" || ok.Line == 0 || ok.Approval.Reason != "looks fine" {
		t.Errorf("the approval's record: %+v %+v", ok, ok.Approval)
	}
	if deny.Code != serve.CodeOperatorDenied || deny.Approval.Outcome != eval.ApprovalDenied || deny.Approval.Reason != "not today" {
		t.Errorf("the denial's record: %+v %+v", deny, deny.Approval)
	}
	// As the decision log writes them, they are records of its schema.
	sch := decisionLogSchema(t)
	for _, ev := range answers {
		b, err := json.Marshal(decisionlog.NewRecord(&ev))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("the answer's record %s does not match docs/schema/decision-log.schema.json: %v", b, err)
		}
	}
	// The mandatory rule's ask records no request: nothing to answer.
	if d := f.before("s1", "deploy"); d["verdict"] != "ask" || d["approval"] != nil && d["approval"].(map[string]any)["request_id"] != nil {
		t.Fatalf("a mandatory ask: %v", d)
	}
}

// TestConsolePlaygroundBounds: the playground refuses a policy or a call
// past its bounds, and decides in its own engine: the server's sessions
// and decisions are untouched.
func TestConsolePlaygroundBounds(t *testing.T) {
	f, sink := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login("ana")
	before := len(sink.events())
	big := strings.Repeat("#", serve.MaxPlaygroundPolicy+1)
	if resp, _ := b.req("POST", "/ui/playground", url.Values{"csrf": {b.csrf}, "policy": {big}, "call": {`{"tool":"Bash"}`}}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a policy past the bound: %d, want 413", resp.StatusCode)
	}
	if resp, _ := b.req("POST", "/ui/playground", url.Values{"csrf": {b.csrf}, "policy": {hostilePolicy}, "call": {`{"tool":"Bash","args":{"command":"` + strings.Repeat("x", serve.MaxPlaygroundCall) + `"}}`}}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a call past the bound: %d, want 413", resp.StatusCode)
	}
	if resp, _ := b.req("POST", "/ui/playground", url.Values{"csrf": {b.csrf}, "policy": {hostilePolicy}, "call": {`not json`}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a call that is not JSON: %d, want 400", resp.StatusCode)
	}
	resp, body := b.req("POST", "/ui/playground", url.Values{"csrf": {b.csrf}, "policy": {hostilePolicy}, "call": {`{"tool":"Bash","args":{"command":"rm -rf x"}}`}, "builtin": {"on"}})
	if resp.StatusCode != 200 || !strings.Contains(body, `data-verdict="block"`) {
		t.Fatalf("the playground's decision: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `data-code="shadowed_rule"`) {
		t.Errorf("the playground shows no shadowed_rule for never-fires")
	}
	if len(sink.events()) != before || f.srv.Status().Sessions != 0 {
		t.Fatalf("the playground touched the server's state: %d decisions logged, %d sessions", len(sink.events())-before, f.srv.Status().Sessions)
	}
}

// TestConsoleEvents: the inbox's event stream sends an event at once and
// one after an ask, and ends when the server drains (it must not hold the
// shutdown).
func TestConsoleEvents(t *testing.T) {
	f, _ := consoleServer(t)
	b := newBrowserless(t, f.url)
	b.login("ana")
	req, _ := http.NewRequest("GET", f.url+"/ui/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				events <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	if ev := <-events; !strings.Contains(ev, "event: approvals") {
		t.Fatalf("first event: %q", ev)
	}
	f.before("s1", "git push origin main")
	if ev := <-events; !strings.Contains(ev, "event: approvals") {
		t.Fatalf("the event after an ask: %q", ev)
	}
	f.srv.Drain()
	for range events { // ends: the stream closed
	}
}

// decisionLogSchema is docs/schema/decision-log.schema.json, compiled.
func decisionLogSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "schema", "decision-log.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	id := doc.(map[string]any)["$id"].(string)
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// activeContent parses a page as a browser does (the HTML5 tokenizer) and
// lists what could run or load: a script other than the console's, an
// event handler or style attribute, a javascript: URL, and any element a
// console page never has (img, iframe, object, embed, svg's script, base,
// meta refresh).
func activeContent(t *testing.T, page string) []string {
	t.Helper()
	var bad []string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("the page does not parse: %v", z.Err())
			}
			return bad
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "img", "iframe", "object", "embed", "base", "frame", "style":
			bad = append(bad, tok.String())
		case "script":
			src := ""
			for _, a := range tok.Attr {
				if a.Key == "src" {
					src = a.Val
				}
			}
			if src != "/ui/static/console.js" {
				bad = append(bad, tok.String())
			}
		}
		for _, a := range tok.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" || a.Key == "http-equiv" ||
				strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
				bad = append(bad, tok.String())
			}
		}
	}
}
