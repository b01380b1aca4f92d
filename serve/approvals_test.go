package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

// pushAsk asks before a push; the admin layer's mandatory rule asks
// before a deploy.
const pushAsk = `apiVersion: celguard.dev/v1
kind: Policy
name: asks
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    condition: 'has(args.command) && string(args.command).startsWith("git push")'
    verdict: ask
    reason: pushing needs a person
`

const mandatoryAsk = `apiVersion: celguard.dev/v1
kind: Policy
name: admin
rules:
  - id: confirm-deploy
    match: {tools: [Bash]}
    condition: 'has(args.command) && args.command == "deploy"'
    verdict: ask
    reason: deploys need a person
`

const (
	decisionToken = "decision-token-1"
	approverToken = "approver-token-1"
)

// approvalServer is a server over pushAsk with both tokens, sharing st
// when it is not nil.
func approvalServer(t *testing.T, st state.Store) *fixture {
	f := newFixture(t, func(c *serve.Config) {
		c.Token, c.OperatorToken = decisionToken, approverToken
		if st != nil {
			c.Engine.Store = st
		}
	})
	f.srcs = []policy.Source{policies.ToolClasses(), source("asks.yaml", pushAsk),
		{Name: "admin.yaml", Data: []byte(mandatoryAsk), Layer: policy.LayerAdmin}}
	if _, err := f.srv.Reload(true); err != nil {
		t.Fatal(err)
	}
	return f
}

// before decides a Bash command in session sid with the decision token.
func (f *fixture) before(sid, command string) map[string]any {
	f.t.Helper()
	a := f.do("POST", "/v1/sessions/"+sid+"/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": command}, "cwd": "/srv/app"},
		"Authorization", "Bearer "+decisionToken)
	if a.status != 200 {
		f.t.Fatalf("before %q: %d %s", command, a.status, a.body)
	}
	return a.json(f.t)
}

// requestOf is the approval request id of an ask decision.
func requestOf(t *testing.T, d map[string]any) string {
	t.Helper()
	ap, _ := d["approval"].(map[string]any)
	id, _ := ap["request_id"].(string)
	if d["verdict"] != "ask" || id == "" {
		t.Fatalf("want an ask with an approval request, got %v", d)
	}
	return id
}

func TestApprovalsDisabledWithoutOperatorToken(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) { c.Token = decisionToken })
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/sessions/s/approvals", nil},
		{"POST", "/v1/sessions/s/approvals", map[string]any{"request_id": "abcd1234", "scope": "once"}},
		{"DELETE", "/v1/sessions/s/approvals/abcd1234", nil},
	} {
		// Not even the decision token opens them.
		a := f.do(tc.method, tc.path, tc.body, "Authorization", "Bearer "+decisionToken)
		if a.status != 403 || code(t, a) != serve.CodeApprovalsDisabled {
			t.Errorf("%s %s: %d %s, want 403 approvals_disabled", tc.method, tc.path, a.status, a.body)
		}
	}
	srcs := func() ([]policy.Source, error) { return []policy.Source{source("asks.yaml", pushAsk)}, nil }
	if _, err := serve.New(serve.Config{Engine: celguard.Config{Sources: srcs}, Token: "same", OperatorToken: "same"}); err == nil {
		t.Error("an approver token equal to the decision token was accepted")
	}
}

// code is the error code of an answer.
func code(t *testing.T, a answer) any {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	return e["code"]
}

// TestApprovalRoutes: the approval routes take the approver token and no
// other; an approval lets the identical call run (once: one time; session:
// every call the rule asks about) and nothing else; a revoke asks again;
// scope always, an unknown request and a mandatory rule are refused.
func TestApprovalRoutes(t *testing.T) {
	f := approvalServer(t, nil)
	const sid = "s1"
	push := "git push origin main"
	req := requestOf(t, f.before(sid, push))
	if again := requestOf(t, f.before(sid, push)); again != req {
		t.Fatalf("the same call asked again has request %s, want %s", again, req)
	}
	approver := []string{"Authorization", "Bearer " + approverToken}
	type step struct {
		name, method, path string
		body               any
		header             []string
		status             int
		code               string
	}
	list := "/v1/sessions/" + sid + "/approvals"
	for _, st := range []step{
		{"no token", "GET", list, nil, nil, 401, serve.CodeUnauthorized},
		{"the decision token", "GET", list, nil, []string{"Authorization", "Bearer " + decisionToken}, 403, serve.CodeForbidden},
		{"a wrong token", "POST", list, map[string]any{"request_id": req, "scope": "once"}, []string{"Authorization", "Bearer approver-token-2"}, 401, serve.CodeUnauthorized},
		{"always", "POST", list, map[string]any{"request_id": req, "scope": "always"}, approver, 403, serve.CodeAlwaysRefused},
		{"unknown scope", "POST", list, map[string]any{"request_id": req, "scope": "forever"}, approver, 400, serve.CodeInvalidInput},
		{"no request id", "POST", list, map[string]any{"scope": "once"}, approver, 400, serve.CodeInvalidInput},
		{"unknown field", "POST", list, map[string]any{"request_id": req, "scope": "once", "rule": "x"}, approver, 400, serve.CodeInvalidInput},
		{"unknown request", "POST", list, map[string]any{"request_id": "00000000", "scope": "once"}, approver, 404, serve.CodeNoSuchRequest},
		{"revoke unknown", "DELETE", list + "/00000000", nil, approver, 404, serve.CodeNoSuchRequest},
	} {
		a := f.do(st.method, st.path, st.body, st.header...)
		if a.status != st.status || code(t, a) != st.code {
			t.Errorf("%s: %d %s, want %d %s", st.name, a.status, a.body, st.status, st.code)
		}
	}
	if d := f.before(sid, push); d["verdict"] != "ask" {
		t.Fatalf("refused approvals let the call run: %v", d)
	}

	// The pending request is listed with the exact call.
	a := f.do("GET", list, nil, approver...)
	if a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	reqs, _ := a.json(t)["requests"].([]any)
	if len(reqs) != 1 || reqs[0].(map[string]any)["id"] != req || reqs[0].(map[string]any)["summary"] != "Bash: "+push {
		t.Fatalf("list: %s, want the one request %s", a.body, req)
	}

	// Once: the identical call runs once; a different call is still asked.
	a = f.do("POST", list, map[string]any{"request_id": req, "scope": "once"}, approver...)
	if a.status != 200 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if g := a.json(t)["grant"].(map[string]any); g["scope"] != "once" || g["subject"] != "call" || g["rule_id"] != "confirm-push" {
		t.Fatalf("grant: %v", g)
	}
	if a := f.do("POST", list, map[string]any{"request_id": req, "scope": "once"}, approver...); a.status != 404 {
		t.Fatalf("approving an answered request: %d %s, want 404", a.status, a.body)
	}
	requestOf(t, f.before(sid, "git push origin other"))
	if d := f.before(sid, push); d["verdict"] != "allow" || d["approval"].(map[string]any)["outcome"] != "remembered" {
		t.Fatalf("the approved call: %v, want allow", d)
	}
	req2 := requestOf(t, f.before(sid, push))

	// Session: every push the rule asks about, until revoked.
	if a := f.do("POST", list, map[string]any{"request_id": req2, "scope": "session"}, approver...); a.status != 200 {
		t.Fatalf("approve for the session: %d %s", a.status, a.body)
	}
	for _, cmd := range []string{push, push, "git push origin other"} {
		if d := f.before(sid, cmd); d["verdict"] != "allow" {
			t.Fatalf("%q after a session approval: %v", cmd, d)
		}
	}
	if a := f.do("GET", list, nil, approver...); len(a.json(t)["grants"].([]any)) != 1 {
		t.Fatalf("grants: %s", a.body)
	}
	if a := f.do("DELETE", list+"/"+req2, nil, approver...); a.status != 204 {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	requestOf(t, f.before(sid, push))

	// Another session's request is not this one's.
	other := requestOf(t, f.before("s2", "git push x"))
	if a := f.do("POST", list, map[string]any{"request_id": other, "scope": "once"}, approver...); a.status != 404 {
		t.Fatalf("approving another session's request: %d %s", a.status, a.body)
	}

	// A mandatory rule's ask makes no request: nothing can lift it.
	d := f.before(sid, "deploy")
	if d["verdict"] != "ask" || d["approval"].(map[string]any)["request_id"] != nil {
		t.Fatalf("a mandatory ask: %v, want an ask without a request", d)
	}
}

// TestApprovalAcrossReplicas: two servers sharing one state store; an
// approval recorded through one is honoured by the other, and so is its
// revocation.
func TestApprovalAcrossReplicas(t *testing.T) {
	for _, kind := range []string{"memory", "redis"} {
		t.Run(kind, func(t *testing.T) {
			var st state.Store = store.NewMemory(time.Hour)
			var r *redistest.Server
			if kind == "redis" {
				r = redistest.Start(t)
				var err error
				if st, err = store.Open(context.Background(), r.URL()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = st.Close() })
			}
			a, b := approvalServer(t, st), approvalServer(t, st)
			approver := []string{"Authorization", "Bearer " + approverToken}
			const sid = "fleet-1"
			push := "git push origin main"
			req := requestOf(t, a.before(sid, push))
			// b lists what a recorded, and approves it for the session.
			if l := b.do("GET", "/v1/sessions/"+sid+"/approvals", nil, approver...); len(l.json(t)["requests"].([]any)) != 1 {
				t.Fatalf("b's list: %s", l.body)
			}
			if r := b.do("POST", "/v1/sessions/"+sid+"/approvals", map[string]any{"request_id": req, "scope": "session"}, approver...); r.status != 200 {
				t.Fatalf("approve through b: %d %s", r.status, r.body)
			}
			if d := a.before(sid, push); d["verdict"] != "allow" {
				t.Fatalf("a after b's approval: %v", d)
			}
			if d := b.before(sid, push); d["verdict"] != "allow" {
				t.Fatalf("b after its approval: %v", d)
			}
			if r := a.do("DELETE", "/v1/sessions/"+sid+"/approvals/"+req, nil, approver...); r.status != 204 {
				t.Fatalf("revoke through a: %d %s", r.status, r.body)
			}
			req = requestOf(t, b.before(sid, push))
			if r == nil {
				return
			}
			// The store down: the approval is not recorded, and says so.
			r.Stop()
			if ans := a.do("POST", "/v1/sessions/"+sid+"/approvals", map[string]any{"request_id": req, "scope": "once"}, approver...); ans.status != 503 || code(t, ans) != serve.CodeStoreUnavailable {
				t.Fatalf("approve with the store down: %d %s, want 503 store_unavailable", ans.status, ans.body)
			}
			if l := a.do("GET", "/v1/sessions/"+sid+"/approvals", nil, approver...); l.status != 503 {
				t.Fatalf("list with the store down: %d %s, want 503", l.status, l.body)
			}
		})
	}
}

// TestDenyRoute: POST /v1/sessions/{id}/denials takes the operator token
// and no other; a denial refuses the identical call for the rest of the
// session with the note and asks no more; a request answered already or
// shown with another call's digest is stale (409), an unknown one 404; the
// denial is recorded in the decision log with the operator's name, as the
// console's.
func TestDenyRoute(t *testing.T) {
	f, sink := consoleServer(t)
	const sid = "s1"
	push := "git push origin main"
	req := requestOf(t, f.before(sid, push))
	digest := pendingDigest(t, f, sid, req)
	approved := requestOf(t, f.before("s2", push))
	if a := f.do("POST", "/v1/sessions/s2/approvals", map[string]any{"request_id": approved, "scope": "once"}, "Authorization", "Bearer "+approverToken); a.status != 200 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	operator := []string{"Authorization", "Bearer " + approverToken}
	deny := "/v1/sessions/" + sid + "/denials"
	for _, st := range []struct {
		name   string
		path   string
		body   any
		header []string
		status int
		code   string
	}{
		{"no token", deny, map[string]any{"request_id": req}, nil, 401, serve.CodeUnauthorized},
		{"the agents' token", deny, map[string]any{"request_id": req, "note": "mine"}, []string{"Authorization", "Bearer " + decisionToken}, 403, serve.CodeForbidden},
		{"no request id", deny, map[string]any{"note": "x"}, operator, 400, serve.CodeInvalidInput},
		{"unknown field", deny, map[string]any{"request_id": req, "scope": "once"}, operator, 400, serve.CodeInvalidInput},
		{"a note too long", deny, map[string]any{"request_id": req, "note": strings.Repeat("n", 1001)}, operator, 400, serve.CodeInvalidInput},
		{"an operator name with a newline", deny, map[string]any{"request_id": req, "operator": "bob\nroot"}, operator, 400, serve.CodeInvalidInput},
		{"unknown request", deny, map[string]any{"request_id": "00000000"}, operator, 404, serve.CodeNoSuchRequest},
		{"another session's request", "/v1/sessions/s3/denials", map[string]any{"request_id": req}, operator, 404, serve.CodeNoSuchRequest},
		{"another call's digest", deny, map[string]any{"request_id": req, "digest": strings.Repeat("a", 64)}, operator, 409, serve.CodeStaleAnswer},
		{"a request approved already", "/v1/sessions/s2/denials", map[string]any{"request_id": approved}, operator, 409, serve.CodeStaleAnswer},
	} {
		a := f.do("POST", st.path, st.body, st.header...)
		if a.status != st.status || code(t, a) != st.code {
			t.Errorf("%s: %d %s, want %d %s", st.name, a.status, a.body, st.status, st.code)
		}
	}
	if d := f.before(sid, push); d["verdict"] != "ask" {
		t.Fatalf("refused denials changed the call: %v", d)
	}

	a := f.do("POST", deny, map[string]any{"request_id": req, "note": "not on main", "operator": "bob", "digest": digest}, operator...)
	if a.status != 200 {
		t.Fatalf("deny: %d %s", a.status, a.body)
	}
	if dn := a.json(t)["denial"].(map[string]any); dn["id"] != req || dn["note"] != "not on main" || dn["by"] != "bob (operator token)" || dn["rule_id"] != "confirm-push" {
		t.Fatalf("denial: %v", dn)
	}
	if a := f.do("POST", deny, map[string]any{"request_id": req}, operator...); a.status != 409 || code(t, a) != serve.CodeStaleAnswer {
		t.Fatalf("denied twice: %d %s, want 409 stale_request", a.status, a.body)
	}
	if a := f.do("POST", "/v1/sessions/"+sid+"/approvals", map[string]any{"request_id": req, "scope": "session"}, operator...); a.status != 404 {
		t.Fatalf("approving a denied request: %d %s, want 404", a.status, a.body)
	}
	// The call retried, again and again: refused with the note, no new request.
	for range 2 {
		d := f.before(sid, push)
		if d["verdict"] != "block" || d["code"] != eval.CodeApprovalDenied || !strings.Contains(d["reason"].(string), "not on main") {
			t.Fatalf("the denied call: %v, want a block approval_denied with the note", d)
		}
	}
	if n := len(f.do("GET", "/v1/sessions/"+sid+"/approvals", nil, operator...).json(t)["requests"].([]any)); n != 0 {
		t.Fatalf("the denied call made %d new requests", n)
	}
	// Another call is still asked.
	requestOf(t, f.before(sid, "git push origin other"))

	var recorded []eval.DecisionEvent
	for _, ev := range sink.events() {
		if ev.Decision.Metadata["answered_in"] == "api" {
			recorded = append(recorded, ev)
		}
	}
	if len(recorded) != 1 {
		t.Fatalf("want the denial recorded once, got %d", len(recorded))
	}
	if d := recorded[0].Decision; d.Code != serve.CodeOperatorDenied || d.Metadata["operator"] != "bob (operator token)" || d.Metadata["call_digest"] != digest ||
		d.Approval == nil || d.Approval.Outcome != eval.ApprovalDenied || d.Approval.Reason != "not on main" || d.Approval.Request != req || d.SessionID != sid {
		t.Errorf("the denial's record: %+v %+v", d, d.Approval)
	}
}
