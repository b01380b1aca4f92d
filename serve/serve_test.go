package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/store"
)

// testPolicy blocks rm, halts on "halt", caps "Push" at two calls per
// session, and warns at turn end.
const testPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: test
counters:
  - name: pushes
    scope: session
    phase: before
    increment_when: 'tool == "Push"'
rules:
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("rm ")'
    verdict: block
    reason: no rm
    code: no_rm
  - id: stop-all
    match: {tools: [Bash]}
    condition: 'has(args.command) && args.command == "halt"'
    verdict: halt
    reason: halted
  - id: push-cap
    match: {tools: [Push]}
    condition: 'counters.pushes >= 2'
    verdict: block
    reason: too many pushes
  - id: secret-prompt
    phase: input
    condition: 'messages.exists(m, m.content.contains("SECRET"))'
    verdict: block
    reason: secret in the prompt
  - id: rude-output
    phase: output
    condition: 'output.text.contains("rude")'
    verdict: block
    reason: rude output
  - id: secret-out
    phase: after
    match: {tools: [Read]}
    condition: 'result.content.contains("SECRET")'
    verdict: block
    reason: secret in output
`

// source is a policy source named name.
func source(name, data string) policy.Source {
	return policy.Source{Name: name, Data: []byte(data), Layer: policy.LayerExplicit}
}

// fixture is a server over a policy that tests may change (reload).
type fixture struct {
	t   *testing.T
	srv *serve.Server
	url string

	mu   sync.Mutex
	srcs []policy.Source
}

func newFixture(t *testing.T, mod func(*serve.Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, srcs: []policy.Source{policies.ToolClasses(), source("test.yaml", testPolicy)}}
	cfg := serve.Config{
		Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return append([]policy.Source(nil), f.srcs...), nil
		}},
		Version: "test",
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// operatorToken is the operator token of the fixtures that have one
// (withOperator).
const operatorToken = "operator-token-1"

// withOperator gives a fixture's server the operator token.
func withOperator(c *serve.Config) { c.OperatorToken = operatorToken }

// op sends a request with the operator token.
func (f *fixture) op(method, path string, body any) answer {
	f.t.Helper()
	return f.do(method, path, body, "Authorization", "Bearer "+operatorToken)
}

// setPolicy replaces the test policy's text.
func (f *fixture) setPolicy(data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srcs[1] = source("test.yaml", data)
}

// answer is one HTTP answer.
type answer struct {
	status int
	body   []byte
	header http.Header
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v\n%s", a.status, err, a.body)
	}
	return m
}

// do sends a request with body (a string, or a value to encode).
func (f *fixture) do(method, path string, body any, header ...string) answer {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	validateExchange(f.t, method, path, body, resp.StatusCode, b)
	return answer{resp.StatusCode, b, resp.Header}
}

func TestSessionAPI(t *testing.T) {
	f := newFixture(t, withOperator)
	digest := f.srv.Status().PolicyDigest
	type step struct {
		name    string
		method  string
		path    string
		body    any
		status  int
		want    map[string]any // top-level fields of the answer
		errCode string
	}
	steps := []step{
		{name: "create", method: "POST", path: "/v1/sessions", body: map[string]any{"session_id": "s1", "agent": map[string]any{"name": "coder"}},
			status: 200, want: map[string]any{"session_id": "s1", "turn": 1.0}},
		{name: "resume", method: "POST", path: "/v1/sessions", body: map[string]any{"session_id": "s1"},
			status: 200, want: map[string]any{"session_id": "s1", "turn": 1.0}},
		{name: "allowed", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}, "call_id": "c1"},
			status: 200, want: map[string]any{"verdict": "allow", "phase": "before", "call_id": "c1", "policy_digest": digest, "session_id": "s1"}},
		{name: "blocked", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "rm -rf /"}},
			status: 200, want: map[string]any{"verdict": "block", "rule_id": "no-rm", "code": "no_rm"}},
		{name: "after blocked", method: "POST", path: "/v1/sessions/s1/after",
			body:   map[string]any{"tool": "Read", "args": map[string]any{"file_path": "/srv/app/.env"}, "result": map[string]any{"is_error": false, "content": "SECRET=1"}},
			status: 200, want: map[string]any{"verdict": "block", "phase": "after", "rule_id": "secret-out"}},
		{name: "after allowed", method: "POST", path: "/v1/sessions/s1/after",
			body:   map[string]any{"tool": "Read", "args": map[string]any{}, "result": map[string]any{"is_error": false, "content": "hello"}},
			status: 200, want: map[string]any{"verdict": "allow", "phase": "after"}},
		{name: "input allowed", method: "POST", path: "/v1/sessions/s1/input", body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}, "call_id": "m1"},
			status: 200, want: map[string]any{"verdict": "allow", "phase": "input", "call_id": "m1", "agent": map[string]any{"name": "coder"}}},
		{name: "input blocked", method: "POST", path: "/v1/sessions/s1/input", body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "SECRET=1", "name": "bob"}}},
			status: 200, want: map[string]any{"verdict": "block", "phase": "input", "rule_id": "secret-prompt"}},
		{name: "output allowed", method: "POST", path: "/v1/sessions/s1/output", body: map[string]any{"output": map[string]any{"text": "fine", "content": map[string]any{"k": 1}}},
			status: 200, want: map[string]any{"verdict": "allow", "phase": "output"}},
		{name: "output blocked", method: "POST", path: "/v1/sessions/s1/output", body: map[string]any{"output": map[string]any{"text": "so rude"}, "agent": map[string]any{"name": "other"}},
			status: 200, want: map[string]any{"verdict": "block", "phase": "output", "rule_id": "rude-output", "agent": map[string]any{"name": "other"}}},
		{name: "push 1", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Push"}, status: 200, want: map[string]any{"verdict": "allow"}},
		{name: "push 2", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Push"}, status: 200, want: map[string]any{"verdict": "allow"}},
		{name: "push 3 capped", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Push"}, status: 200, want: map[string]any{"verdict": "block", "rule_id": "push-cap"}},
		{name: "halt", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "halt"}}, status: 200, want: map[string]any{"verdict": "halt"}},
		{name: "halted turn", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}}, status: 200, want: map[string]any{"verdict": "halt", "code": "turn_halted"}},
		{name: "turn end", method: "POST", path: "/v1/sessions/s1/turns/end", status: 200, want: map[string]any{"phase": "turn_end", "verdict": "allow"}},
		{name: "new turn", method: "POST", path: "/v1/sessions/s1/turns/start", status: 200, want: map[string]any{"session_id": "s1", "turn": 2.0}},
		{name: "after the halt", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}}, status: 200, want: map[string]any{"verdict": "allow"}},
		{name: "session counter survives the turn", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Push"}, status: 200, want: map[string]any{"verdict": "block"}},
		{name: "agent of the session", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}},
			status: 200, want: map[string]any{"agent": map[string]any{"name": "coder"}}},
		{name: "delete", method: "DELETE", path: "/v1/sessions/s1", status: 204},
		{name: "a deleted session starts again", method: "POST", path: "/v1/sessions/s1/before", body: map[string]any{"tool": "Push"}, status: 200, want: map[string]any{"verdict": "allow"}},
		{name: "a new id", method: "POST", path: "/v1/sessions", body: "", status: 200},

		{name: "no tool", method: "POST", path: "/v1/sessions/s2/before", body: map[string]any{"args": map[string]any{}}, status: 400, errCode: "invalid_input"},
		{name: "unknown field", method: "POST", path: "/v1/sessions/s2/before", body: map[string]any{"tool": "Bash", "tool_name": "Bash"}, status: 400, errCode: "invalid_input"},
		{name: "not JSON", method: "POST", path: "/v1/sessions/s2/before", body: "{", status: 400, errCode: "invalid_input"},
		{name: "two values", method: "POST", path: "/v1/sessions/s2/before", body: `{"tool":"a"} {"tool":"b"}`, status: 400, errCode: "invalid_input"},
		{name: "args not an object", method: "POST", path: "/v1/sessions/s2/before", body: map[string]any{"tool": "Bash", "args": "ls"}, status: 400, errCode: "invalid_input"},
		{name: "input without messages", method: "POST", path: "/v1/sessions/s2/input", body: map[string]any{"call_id": "x"}, status: 400, errCode: "invalid_input"},
		{name: "output without output", method: "POST", path: "/v1/sessions/s2/output", body: map[string]any{"call_id": "x"}, status: 400, errCode: "invalid_input"},
		{name: "message content not a string", method: "POST", path: "/v1/sessions/s2/input", body: map[string]any{"messages": []any{map[string]any{"role": "user", "content": 1}}}, status: 400, errCode: "invalid_input"},
		{name: "after without result", method: "POST", path: "/v1/sessions/s2/after", body: map[string]any{"tool": "Bash"}, status: 400, errCode: "invalid_input"},
		{name: "bad result", method: "POST", path: "/v1/sessions/s2/after", body: map[string]any{"tool": "Bash", "result": map[string]any{"is_error": "no"}}, status: 400, errCode: "invalid_input"},
		{name: "empty before", method: "POST", path: "/v1/sessions/s2/before", body: "", status: 400, errCode: "invalid_input"},
		{name: "bad session id", method: "POST", path: "/v1/sessions", body: map[string]any{"session_id": "a\x00b"}, status: 400, errCode: "invalid_input"},
		{name: "long session id", method: "POST", path: "/v1/sessions", body: map[string]any{"session_id": strings.Repeat("x", 257)}, status: 400, errCode: "invalid_input"},
		{name: "unknown route", method: "GET", path: "/v1/nothing", status: 404, errCode: "not_found"},
		{name: "unknown host", method: "POST", path: "/v1/hooks/vim", body: "{}", status: 404, errCode: "not_found"},
	}
	for _, s := range steps {
		a := f.do(s.method, s.path, s.body)
		if s.method == "DELETE" {
			a = f.op(s.method, s.path, s.body)
		}
		if a.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, a.status, s.status, a.body)
		}
		if s.status == 204 {
			continue
		}
		m := a.json(t)
		if s.errCode != "" {
			e, _ := m["error"].(map[string]any)
			if e["code"] != s.errCode || e["message"] == "" {
				t.Errorf("%s: error %v, want code %s and a message", s.name, m, s.errCode)
			}
			continue
		}
		for k, v := range s.want {
			if got, _ := json.Marshal(m[k]); string(got) != mustJSON(t, v) {
				t.Errorf("%s: %s = %s, want %s (answer %s)", s.name, k, got, mustJSON(t, v), a.body)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTokenAndLimits(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) { c.Token = "s3cret"; c.MaxBodyBytes = 1024 })
	call := map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}}
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		header []string
		status int
		code   string
	}{
		{"no token", "POST", "/v1/sessions/a/before", call, nil, 401, "unauthorized"},
		{"wrong token", "POST", "/v1/sessions/a/before", call, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"not bearer", "POST", "/v1/sessions/a/before", call, []string{"Authorization", "Basic s3cret"}, 401, "unauthorized"},
		{"status needs it", "GET", "/v1/status", nil, nil, 401, "unauthorized"},
		{"metrics are the operator's", "GET", "/metrics", nil, []string{"Authorization", "Bearer s3cret"}, 403, "operator_disabled"},
		{"unknown routes need it", "GET", "/v1/nothing", nil, nil, 401, "unauthorized"},
		{"token", "POST", "/v1/sessions/a/before", call, []string{"Authorization", "Bearer s3cret"}, 200, ""},
		{"any case of bearer", "POST", "/v1/sessions/a/before", call, []string{"Authorization", "bearer s3cret"}, 200, ""},
		{"healthz needs none", "GET", "/healthz", nil, nil, 200, ""},
		{"readyz needs none", "GET", "/readyz", nil, nil, 200, ""},
		{"too large", "POST", "/v1/sessions/a/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": strings.Repeat("x", 2048)}},
			[]string{"Authorization", "Bearer s3cret"}, 413, "too_large"},
	}
	for _, c := range cases {
		a := f.do(c.method, c.path, c.body, c.header...)
		if a.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
			continue
		}
		if c.code != "" {
			if e, _ := a.json(t)["error"].(map[string]any); e["code"] != c.code {
				t.Errorf("%s: answer %s, want code %s", c.name, a.body, c.code)
			}
		}
	}
}

func TestSessionBound(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) { c.MaxSessions = 2; withOperator(c) })
	for _, id := range []string{"a", "b"} {
		if a := f.do("POST", "/v1/sessions", map[string]any{"session_id": id}); a.status != 200 {
			t.Fatalf("session %s: %d %s", id, a.status, a.body)
		}
	}
	a := f.do("POST", "/v1/sessions", map[string]any{"session_id": "c"})
	if e, _ := a.json(t)["error"].(map[string]any); a.status != 503 || e["code"] != "too_many_sessions" {
		t.Fatalf("a third session: %d %s, want 503 too_many_sessions", a.status, a.body)
	}
	// A hook event of a new session is denied, in the host's form.
	a = f.do("POST", "/v1/hooks/claude-code", preToolUse("c", "ls"))
	if got := permission(t, a); got != "deny" {
		t.Fatalf("hook of a session past the bound: %s, want a deny", a.body)
	}
	if a := f.do("POST", "/v1/sessions/a/before", map[string]any{"tool": "Bash"}); a.status != 200 {
		t.Fatalf("a known session: %d %s", a.status, a.body)
	}
	if a := f.op("DELETE", "/v1/sessions/b", nil); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if a := f.do("POST", "/v1/sessions", map[string]any{"session_id": "c"}); a.status != 200 {
		t.Fatalf("after a delete: %d %s", a.status, a.body)
	}
}

func TestSessionIdleExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	f := newFixture(t, func(c *serve.Config) { c.SessionIdle = time.Minute; c.MaxSessions = 1; c.Now = clock })
	f.do("POST", "/v1/sessions/a/before", map[string]any{"tool": "Push"})
	advance(50 * time.Second)
	f.do("POST", "/v1/sessions/a/before", map[string]any{"tool": "Push"})
	advance(50 * time.Second) // used 50s ago: not idle
	if v := f.do("POST", "/v1/sessions/a/before", map[string]any{"tool": "Push"}).json(t)["verdict"]; v != "block" {
		t.Fatalf("third push: %v, want block (the session kept)", v)
	}
	if a := f.do("POST", "/v1/sessions", map[string]any{"session_id": "b"}); a.status != 503 {
		t.Fatalf("a second session while the first is in use: %d, want 503", a.status)
	}
	advance(time.Minute)
	// The idle session is forgotten: a new one may take its place.
	if a := f.do("POST", "/v1/sessions", map[string]any{"session_id": "b"}); a.status != 200 {
		t.Fatalf("a new session after the idle one expired: %d %s", a.status, a.body)
	}
	// And an idle session used again starts afresh.
	advance(2 * time.Minute)
	if v := f.do("POST", "/v1/sessions/a/before", map[string]any{"tool": "Push"}).json(t)["verdict"]; v != "allow" {
		t.Fatalf("an expired session used again: %v, want allow (a fresh session)", v)
	}
}

// panicking is an approver that panics: an ask rule reaches it.
var panicking = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	panic("approver exploded")
})

// slow is an approver that waits for its context to end.
var slow = eval.ApproverFunc(func(ctx context.Context, _ eval.ApprovalRequest) (eval.Approval, error) {
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond)
	return eval.Approval{Answer: eval.Approve}, nil
})

const askPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: asks
rules:
  - id: ask-deploy
    match: {tools: [Deploy]}
    verdict: ask
    reason: deploys need a person
`

func TestFaultsFailClosed(t *testing.T) {
	cases := []struct {
		name     string
		approver eval.Approver
		timeout  time.Duration
		code     string
	}{
		{"panic", panicking, 0, "internal_error"},
		{"deadline", slow, 50 * time.Millisecond, "deadline_exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *serve.Config) {
				cfg.Engine.Approver = c.approver
				cfg.Timeout = c.timeout
			})
			f.setPolicy(askPolicy)
			if _, err := f.srv.Reload(false); err != nil {
				t.Fatal(err)
			}
			a := f.do("POST", "/v1/sessions/x/before", map[string]any{"tool": "Deploy"})
			m := a.json(t)
			if a.status != 200 || m["verdict"] != "block" || m["code"] != c.code || m["policy_digest"] != f.srv.Status().PolicyDigest {
				t.Errorf("session API: %d %s, want 200 and a block with code %s and the digest", a.status, a.body, c.code)
			}
			a = f.do("POST", "/v1/hooks/claude-code", preToolUseTool("x", "Deploy"))
			if got := permission(t, a); got != "deny" {
				t.Errorf("hook: %s, want a deny", a.body)
			}
			a = f.do("POST", "/v1/hooks/claude-code?form=command", preToolUseTool("x", "Deploy"))
			var ca serve.CommandAnswer
			if err := json.Unmarshal(a.body, &ca); err != nil || ca.Exit != 2 || !strings.Contains(ca.Stderr, "celguard") {
				t.Errorf("hook, command form: %s, want exit 2 with a reason", a.body)
			}
		})
	}
}

func TestReload(t *testing.T) {
	f := newFixture(t, withOperator)
	first := f.srv.Status()
	if changed, err := f.srv.Reload(false); changed || err != nil {
		t.Fatalf("an unchanged reload: %v %v", changed, err)
	}
	// Sessions keep their counters over a reload.
	f.do("POST", "/v1/sessions/k/before", map[string]any{"tool": "Push"})
	f.do("POST", "/v1/sessions/k/before", map[string]any{"tool": "Push"})

	f.setPolicy(strings.Replace(testPolicy, "reason: no rm", "reason: never rm", 1))
	if changed, err := f.srv.Reload(false); !changed || err != nil {
		t.Fatalf("a changed reload: %v %v", changed, err)
	}
	st := f.srv.Status()
	if st.Reloads != 1 || st.PolicyDigest == first.PolicyDigest || st.LastReloadError != "" {
		t.Fatalf("status after a reload: %+v", st)
	}
	if m := f.do("POST", "/v1/sessions/k/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": "rm x"}}).json(t); m["reason"] != "never rm" || m["policy_digest"] != st.PolicyDigest {
		t.Fatalf("decision after the reload: %v", m)
	}
	if m := f.do("POST", "/v1/sessions/k/before", map[string]any{"tool": "Push"}).json(t); m["verdict"] != "block" {
		t.Fatalf("the counter after the reload: %v, want block (kept)", m)
	}

	// A set that does not compile keeps the last good one, and says so.
	f.setPolicy("apiVersion: celguard.dev/v1\nkind: Policy\nname: broken\nrules:\n  - id: x\n    condition: 'nope('\n    verdict: block\n")
	if _, err := f.srv.Reload(false); err == nil {
		t.Fatal("a broken set reloaded without an error")
	}
	bad := f.op("GET", "/v1/status/details", nil).json(t)
	if bad["policy_digest"] != st.PolicyDigest || bad["reloads"] != 1.0 || !strings.Contains(bad["last_reload_error"].(string), "do not compile") {
		t.Fatalf("status after a failed reload: %v", bad)
	}
	if m := f.do("POST", "/v1/sessions/k/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": "rm x"}}).json(t); m["reason"] != "never rm" {
		t.Fatalf("decision after a failed reload: %v, want the last good set's", m)
	}
	// Polling does not retry the same broken set; a forced reload does.
	if _, err := f.srv.Reload(false); err != nil {
		t.Fatalf("the same broken set again: %v, want no new attempt", err)
	}
	if _, err := f.srv.Reload(true); err == nil {
		t.Fatal("a forced reload of a broken set succeeded")
	}
	f.setPolicy(testPolicy)
	if changed, err := f.srv.Reload(false); !changed || err != nil {
		t.Fatalf("a repaired set: %v %v", changed, err)
	}
	if st := f.srv.Status(); st.LastReloadError != "" || st.Reloads != 2 {
		t.Fatalf("status after the repair: %+v", st)
	}
	metrics := string(f.op("GET", "/metrics", nil).body)
	for _, want := range []string{`celguard_policy_reloads_total{result="ok"} 2`, `celguard_policy_reloads_total{result="error"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestWatch(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.srv.Watch(ctx, 10*time.Millisecond)
	f.setPolicy(strings.Replace(testPolicy, "reason: no rm", "reason: watched", 1))
	for range 3000 { // up to 30s on a loaded machine
		if f.srv.Status().Reloads == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("Watch did not reload a changed policy")
}

func TestStatusHealthMetrics(t *testing.T) {
	const agent = "agent-token-1"
	f := newFixture(t, func(c *serve.Config) { c.Token = agent; withOperator(c) })
	auth := []string{"Authorization", "Bearer " + agent}
	f.do("POST", "/v1/hooks/claude-code", preToolUse("m", "rm -rf /"), auth...)
	f.do("POST", "/v1/sessions/m/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}}, auth...)
	// The agents' status: ready, version, digest, and nothing about the
	// deployment.
	st := f.do("GET", "/v1/status", nil, auth...).json(t)
	if st["ready"] != true || st["version"] != "test" || st["policy_digest"] != f.srv.Status().PolicyDigest || len(st) != 3 {
		t.Errorf("agents' status: %v, want ready, version and policy_digest only", st)
	}
	// The details are the operator's.
	if a := f.do("GET", "/v1/status/details", nil, auth...); a.status != 403 || a.json(t)["error"].(map[string]any)["code"] != serve.CodeForbidden {
		t.Errorf("status details with the agents' token: %d %s, want 403 forbidden", a.status, a.body)
	}
	st = f.op("GET", "/v1/status/details", nil).json(t)
	if st["version"] != "test" || st["store"] != "memory" || !strings.HasPrefix(st["policy_digest"].(string), "sha256:") || st["loaded_at"] == "" || st["sessions"] != 1.0 {
		t.Errorf("status details: %v", st)
	}
	if a := f.do("GET", "/healthz", nil); a.status != 200 {
		t.Errorf("healthz: %d", a.status)
	}
	if a := f.do("GET", "/readyz", nil); a.status != 200 {
		t.Errorf("readyz: %d", a.status)
	}
	f.srv.Drain()
	if a := f.do("GET", "/readyz", nil); a.status != 503 {
		t.Errorf("readyz while draining: %d", a.status)
	}
	if st := f.do("GET", "/v1/status", nil, auth...).json(t); st["ready"] != false {
		t.Errorf("agents' status while draining: %v, want ready false", st)
	}
	// The metrics describe the deployment (decisions by policy across
	// every agent, faults, reloads, sessions held): the operator's.
	if a := f.do("GET", "/metrics", nil, auth...); a.status != 403 || a.json(t)["error"].(map[string]any)["code"] != serve.CodeForbidden {
		t.Errorf("metrics with the agents' token: %d %s, want 403 forbidden", a.status, a.body)
	}
	metrics := string(f.op("GET", "/metrics", nil).body)
	for _, want := range []string{
		`celguard_decisions_total{host="claude-code",policy="test",rule="no-rm",verdict="block"} 1`,
		`celguard_decisions_total{host="api",policy="",rule="",verdict="allow"} 1`,
		`celguard_decision_duration_seconds_bucket{host="api",phase="before"`,
		`celguard_hook_request_duration_seconds_count{host="claude-code"} 1`,
		`celguard_store_errors_total 0`,
		`celguard_sessions 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if a := f.do("GET", "/openapi.json", nil, auth...); a.status != 200 || !bytes.Equal(a.body, serve.OpenAPI) {
		t.Errorf("openapi.json: %d", a.status)
	}
}

// memorySink keeps the records it is given, or fails.
type memorySink struct {
	mu   sync.Mutex
	recs []*decisionlog.Record
	fail bool
}

func (m *memorySink) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("disk full")
	}
	m.recs = append(m.recs, decisionlog.NewRecord(ev))
	return nil
}

func TestDecisionLog(t *testing.T) {
	sink := &memorySink{}
	f := newFixture(t, func(c *serve.Config) { c.Engine.DecisionSink = sink })
	d := f.do("POST", "/v1/sessions/log/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": "rm -rf /"}}).json(t)
	f.do("POST", "/v1/hooks/claude-code", preToolUse("log", "ls"))
	sink.mu.Lock()
	if len(sink.recs) != 2 || sink.recs[0].DecisionID != d["decision_id"] || sink.recs[0].SessionID != "log" {
		t.Fatalf("records %+v, want the two decisions, the first %v", sink.recs, d)
	}
	sink.fail = true
	sink.mu.Unlock()
	// A decision the log cannot record is refused.
	if m := f.do("POST", "/v1/sessions/log/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": "ls"}}).json(t); m["verdict"] != "block" || m["code"] != eval.CodeDecisionLogFailed {
		t.Fatalf("with the log failing: %v, want a block with code %s", m, eval.CodeDecisionLogFailed)
	}
	if p := permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUse("log", "ls"))); p != "deny" {
		t.Fatalf("hook with the log failing: %s, want deny", p)
	}
}

const haltPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: halts
rules:
  - id: ok
    verdict: allow
`

func TestFleetHalt(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) {
		c.Engine.Store = store.NewMemory(time.Hour)
		withOperator(c)
	})
	f.setPolicy(haltPolicy)
	if _, err := f.srv.Reload(false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ id, repo string }{{"a", "r1"}, {"b", "r1"}, {"c", "r2"}} {
		f.do("POST", "/v1/sessions", map[string]any{"session_id": s.id, "meta": map[string]any{"repository": s.repo}})
	}
	verdict := func(id string) any {
		return f.do("POST", "/v1/sessions/"+id+"/before", map[string]any{"tool": "Bash"}).json(t)["verdict"]
	}
	if a := f.op("POST", "/v1/halt", map[string]any{"scope": "repository", "key": "r1", "reason": "incident"}); a.status != 200 {
		t.Fatalf("halt: %d %s", a.status, a.body)
	}
	if verdict("a") != "halt" || verdict("b") != "halt" || verdict("c") != "allow" {
		t.Fatalf("after the halt of r1: a %v, b %v, c %v", verdict("a"), verdict("b"), verdict("c"))
	}
	if a := f.op("DELETE", "/v1/halt", map[string]any{"scope": "repository", "key": "r1"}); a.status != 200 || a.json(t)["halted"] != false {
		t.Fatalf("lift: %d %s", a.status, a.body)
	}
	if verdict("a") != "allow" {
		t.Fatalf("after the lift: %v", verdict("a"))
	}
	if a := f.op("POST", "/v1/halt", map[string]any{"scope": "session", "key": "a"}); a.status != 400 {
		t.Fatalf("a session scope: %d, want 400", a.status)
	}
	// Without a store there is no fleet halt.
	g := newFixture(t, withOperator)
	if a := g.op("POST", "/v1/halt", map[string]any{"scope": "org", "key": "o"}); a.status != 503 {
		t.Fatalf("a halt without a store: %d %s, want 503", a.status, a.body)
	}
}

func TestReadyzAsksTheStore(t *testing.T) {
	var down atomic.Bool
	f := newFixture(t, func(c *serve.Config) {
		c.Ready = func(context.Context) error {
			if down.Load() {
				return errors.New("store down")
			}
			return nil
		}
	})
	if a := f.do("GET", "/readyz", nil); a.status != 200 {
		t.Fatalf("readyz: %d", a.status)
	}
	down.Store(true)
	if a := f.do("GET", "/readyz", nil); a.status != 503 || a.json(t)["status"] != "unavailable" {
		t.Fatalf("readyz with the store down: %d %s", a.status, a.body)
	}
}

// TestDateHeader: every answer, through the server's own writer or
// net/http's (a decision, an error, a redirect, an ordinary page), has one
// Date header in net/http's format, of the second it was answered in.
func TestDateHeader(t *testing.T) {
	f := newFixture(t, nil)
	for _, rq := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions/d1/before", `{"tool": "Bash", "args": {"command": "ls"}}`},
		{"POST", "/v1/sessions/d1/before", `{"tool": 1}`},
		{"POST", "/v1/hooks/claude-code", `{"hook_event_name": "PreToolUse", "session_id": "d2", "tool_name": "Bash", "tool_input": {"command": "ls"}}`},
		{"GET", "/healthz", ""},
		{"GET", "/v1/sessions/../healthz", ""},
		{"GET", "/nowhere", ""},
		{"PUT", "/v1/sessions/d1/before", ""},
	} {
		before := time.Now().Truncate(time.Second)
		req, err := http.NewRequest(rq.method, f.url+rq.path, strings.NewReader(rq.body))
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		after := time.Now()
		dates := resp.Header.Values("Date")
		if len(dates) != 1 {
			t.Fatalf("%s %s: Date %q", rq.method, rq.path, dates)
		}
		at, err := time.Parse(http.TimeFormat, dates[0])
		if err != nil || at.UTC().Format(http.TimeFormat) != dates[0] || at.Before(before) || at.After(after) {
			t.Fatalf("%s %s (HTTP %d): Date %q, answered between %v and %v (%v)", rq.method, rq.path, resp.StatusCode, dates[0], before, after, err)
		}
	}
}
