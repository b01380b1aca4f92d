package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/serve/client"
	"github.com/celguard/celguard/store"
)

const testPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: test
rules:
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'command.startsWith("rm ")'
    verdict: block
    reason: no rm
    code: no_rm
  - id: ask-push
    match: {tools: [Bash]}
    condition: 'command.startsWith("git push")'
    verdict: ask
    reason: pushing publishes
  - id: secret-out
    phase: after
    match: {tools: [Read]}
    condition: 'result.content.contains("SECRET")'
    verdict: block
    reason: secret in output
`

const (
	agentToken    = "agent-token-1"
	operatorToken = "operator-token-1"
)

// server is a real celguard serve over testPolicy with both tokens and a
// memory store.
func server(t *testing.T) string {
	t.Helper()
	srv, err := serve.New(serve.Config{
		Engine: celguard.Config{
			Sources: func() ([]policy.Source, error) {
				return []policy.Source{policies.ToolClasses(), {Name: "test.yaml", Data: []byte(testPolicy), Layer: policy.LayerExplicit}}, nil
			},
			JudgeFiles: []string{},
			Store:      store.NewMemory(time.Hour),
		},
		Token: agentToken, OperatorToken: operatorToken,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

func newClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientAgainstServe drives every method of the client against a real
// server: the agent's routes with the agents' token, the operator's with
// the operator's, and the refusals decoded into *client.Error.
func TestClientAgainstServe(t *testing.T) {
	ctx := context.Background()
	url := server(t)
	agent, op := newClient(t, url, agentToken), newClient(t, url, operatorToken)

	s, err := agent.StartSession(ctx, "s1", eval.Agent{Name: "coder"}, map[string]any{"repository": "acme/api"})
	if err != nil || s.SessionID != "s1" || s.Turn != 1 {
		t.Fatalf("StartSession: %+v %v", s, err)
	}
	d, err := agent.Before(ctx, "s1", eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}})
	if err != nil || d.Verdict != policy.Block || d.Code != "no_rm" {
		t.Fatalf("Before: %+v %v", d, err)
	}
	d, err = agent.After(ctx, "s1", eval.Call{Tool: "Read", Args: map[string]any{}}, eval.Result{Content: "SECRET=1"})
	if err != nil || d.Verdict != policy.Block || d.RuleID != "secret-out" {
		t.Fatalf("After: %+v %v", d, err)
	}
	a, err := agent.Hook(ctx, "claude-code", []byte(`{"hook_event_name":"PreToolUse","session_id":"h1","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`))
	if err != nil || !strings.Contains(a.Stdout, `"deny"`) {
		t.Fatalf("Hook: %+v %v", a, err)
	}

	// An ask is recorded; the operator lists it without the session id,
	// approves it once, and the identical call runs.
	push := eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push origin main"}}
	d, err = agent.Before(ctx, "s1", push)
	if err != nil || d.Verdict != policy.Ask || d.Approval == nil || d.Approval.Request == "" {
		t.Fatalf("an ask with a request: %+v %v", d, err)
	}
	all, err := op.AllApprovals(ctx)
	if err != nil || len(all) != 1 || all[0].SessionID != "s1" || len(all[0].Requests) != 1 || all[0].Requests[0].ID != d.Approval.Request {
		t.Fatalf("AllApprovals: %+v %v", all, err)
	}
	one, err := op.Approvals(ctx, "s1")
	if err != nil || len(one.Requests) != 1 {
		t.Fatalf("Approvals: %+v %v", one, err)
	}
	got, err := op.Approve(ctx, "s1", d.Approval.Request, eval.GrantOnce)
	if err != nil || got.Grant.Rule != "ask-push" {
		t.Fatalf("Approve: %+v %v", got, err)
	}
	if d, err := agent.Before(ctx, "s1", push); err != nil || d.Verdict != policy.Allow {
		t.Fatalf("the approved call: %+v %v", d, err)
	}
	// A denial: the identical call is refused with the note, and asks no more.
	d, err = agent.Before(ctx, "s1", push)
	if err != nil || d.Approval == nil || d.Approval.Request == "" {
		t.Fatalf("asked again: %+v %v", d, err)
	}
	var stale *client.Error
	if _, err := op.Deny(ctx, "s1", d.Approval.Request, "", "", "another-digest"); !errors.As(err, &stale) || stale.Status != http.StatusConflict || stale.Code != serve.CodeStaleAnswer {
		t.Fatalf("Deny of another call: %v, want 409 stale_request", err)
	}
	dn, err := op.Deny(ctx, "s1", d.Approval.Request, "not on main", "alice", "")
	if err != nil || dn.Denial.ID != d.Approval.Request || dn.Denial.Note != "not on main" || dn.Denial.By != "alice (operator token)" {
		t.Fatalf("Deny: %+v %v", dn, err)
	}
	if d, err := agent.Before(ctx, "s1", push); err != nil || d.Verdict != policy.Block || !strings.Contains(d.Reason, "not on main") {
		t.Fatalf("the denied call: %+v %v", d, err)
	}
	_, err = op.Approve(ctx, "s1", "00000000", eval.GrantAlways)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != serve.CodeAlwaysRefused {
		t.Fatalf("always: %v, want 403 always_refused", err)
	}
	if err := op.Revoke(ctx, "s1", "00000000"); !errors.As(err, &e) || e.Code != serve.CodeNoSuchRequest {
		t.Fatalf("Revoke of nothing: %v, want no_such_request", err)
	}

	// The operator's routes: the agents' token is forbidden.
	for name, call := range map[string]func(*client.Client) error{
		"Halt":          func(c *client.Client) error { return c.Halt(ctx, "repository", "acme/api", "incident") },
		"Lift":          func(c *client.Client) error { return c.Lift(ctx, "repository", "acme/api") },
		"DeleteSession": func(c *client.Client) error { return c.DeleteSession(ctx, "s2") },
		"Reload":        func(c *client.Client) error { _, err := c.Reload(ctx); return err },
		"AllApprovals":  func(c *client.Client) error { _, err := c.AllApprovals(ctx); return err },
	} {
		if err := call(agent); !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != serve.CodeForbidden {
			t.Errorf("%s with the agents' token: %v, want 403 forbidden", name, err)
		}
		if err := call(op); err != nil {
			t.Errorf("%s with the operator token: %v", name, err)
		}
	}
}

// TestClientRefusesWhatIsNotAServer: a bad address, a redirect, a server
// that answers garbage or an error without the error form are errors.
func TestClientRefusesWhatIsNotAServer(t *testing.T) {
	for _, bad := range []string{"ftp://x", "localhost:9743", "unix:", "http://"} {
		if _, err := client.New(bad, ""); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	if _, err := client.New("unix:/run/celguard.sock", ""); err != nil {
		t.Errorf("a unix socket: %v", err)
	}
	ctx := context.Background()
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want string
	}{
		"redirect": {func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/x", http.StatusFound) }, "redirected"},
		"garbage":  {func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }, "not a hook answer"},
		"500":      {func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, "HTTP 500"},
	} {
		ts := httptest.NewServer(tc.h)
		c := newClient(t, ts.URL, "")
		if _, err := c.Hook(ctx, "claude-code", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		ts.Close()
	}
}
