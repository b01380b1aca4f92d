package serve_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/celguard/celguard/serve"
)

// TestRouteTableIsTheOpenAPIDocument: every route of the table is an
// operation of openapi.json and every operation a route, and each
// operation's security says the route's principal: public routes need
// nothing ([{}]), operator routes the operator scheme alone, agent routes
// the document's default (the agents' bearer token, when the server has
// one).
func TestRouteTableIsTheOpenAPIDocument(t *testing.T) {
	if err := loadSpec(); err != nil {
		t.Fatal(err)
	}
	paths := spec.doc["paths"].(map[string]any)
	inDoc := map[string]map[string]any{}
	for path, ops := range paths {
		for method, op := range ops.(map[string]any) {
			if m, ok := op.(map[string]any); ok && method != "parameters" {
				inDoc[strings.ToUpper(method)+" "+path] = m
			}
		}
	}
	seen := map[string]bool{}
	for _, rt := range serve.Routes() {
		if rt.Console {
			continue // the web console's pages: not an API (console_test.go checks them)
		}
		key := rt.Method + " " + rt.Path
		if seen[key] {
			t.Errorf("%s is declared twice in the route table", key)
		}
		seen[key] = true
		op, ok := inDoc[key]
		if !ok {
			t.Errorf("%s (%s) is not in openapi.json", key, rt.Principal)
			continue
		}
		sec, has := op["security"].([]any)
		switch rt.Principal {
		case serve.Public:
			if !has || len(sec) != 1 || len(sec[0].(map[string]any)) != 0 {
				t.Errorf("%s is public: openapi.json's security must be [{}], is %v", key, op["security"])
			}
		case serve.Operator:
			if !has || len(sec) != 1 || sec[0].(map[string]any)["operator"] == nil || len(sec[0].(map[string]any)) != 1 {
				t.Errorf("%s is the operator's: openapi.json's security must be [{\"operator\": []}], is %v", key, op["security"])
			}
			for _, status := range []string{"401", "403"} {
				if _, ok := op["responses"].(map[string]any)[status]; !ok {
					t.Errorf("%s is the operator's: openapi.json must list its %s", key, status)
				}
			}
		case serve.Agent:
			if has {
				t.Errorf("%s is the agents': openapi.json must keep the default security, has %v", key, op["security"])
			}
		default:
			t.Errorf("%s has no principal", key)
		}
		if rt.What == "" {
			t.Errorf("%s says nothing of what it does", key)
		}
	}
	var extra []string
	for key := range inDoc {
		if !seen[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("openapi.json has operations the route table does not: %v", extra)
	}
}

// concrete fills a route's path parameters.
func concrete(path string) string {
	return strings.NewReplacer("{id}", "s1", "{approval}", "00000000", "{host}", "claude-code").Replace(path)
}

// TestAgentTokenGetsForbiddenOnOperatorRoutes: on every operator route the
// agents' token is 403 forbidden, no token or a wrong one 401, and the
// operator token passes; without an operator token the routes are off
// (403). The agents' routes refuse the operator token: it opens the
// operator's routes only.
func TestAgentTokenGetsForbiddenOnOperatorRoutes(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) { c.Token = "agent-token-1"; withOperator(c) })
	off := newFixture(t, func(c *serve.Config) { c.Token = "agent-token-1" })
	n := 0
	for _, rt := range serve.Routes() {
		if rt.Console {
			continue // authenticated by the console's session: TestConsoleRefusesAgentToken
		}
		path := concrete(rt.Path)
		switch rt.Principal {
		case serve.Operator:
			n++
			if a := f.do(rt.Method, path, nil, "Authorization", "Bearer agent-token-1"); a.status != http.StatusForbidden || code(t, a) != serve.CodeForbidden {
				t.Errorf("%s %s with the agents' token: %d %s, want 403 forbidden", rt.Method, path, a.status, a.body)
			}
			for _, h := range [][]string{nil, {"Authorization", "Bearer nope"}} {
				if a := f.do(rt.Method, path, nil, h...); a.status != http.StatusUnauthorized {
					t.Errorf("%s %s with %v: %d %s, want 401", rt.Method, path, h, a.status, a.body)
				}
			}
			if a := f.op(rt.Method, path, nil); a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
				t.Errorf("%s %s with the operator token: %d %s", rt.Method, path, a.status, a.body)
			}
			a := off.do(rt.Method, path, nil, "Authorization", "Bearer agent-token-1")
			if c := code(t, a); a.status != http.StatusForbidden || (c != serve.CodeOperatorDisabled && c != serve.CodeApprovalsDisabled) {
				t.Errorf("%s %s without an operator token: %d %s, want 403 operator_disabled", rt.Method, path, a.status, a.body)
			}
		case serve.Agent:
			if rt.SelfAuth {
				continue
			}
			if a := f.op(rt.Method, path, nil); a.status != http.StatusUnauthorized {
				t.Errorf("%s %s with the operator token: %d, want 401 (it is not the agents' token)", rt.Method, path, a.status)
			}
		}
	}
	if n < 8 {
		t.Fatalf("the table has %d operator routes; halt, lift, session delete, reload and the approvals are", n)
	}
}

// TestReloadRoute: POST /v1/reload compiles the policies now; a set that
// does not compile is 422 reload_failed and the last good set stays.
func TestReloadRoute(t *testing.T) {
	f := newFixture(t, withOperator)
	before := f.srv.Status().PolicyDigest
	f.setPolicy(strings.Replace(testPolicy, "reason: no rm", "reason: still no rm", 1))
	a := f.op("POST", "/v1/reload", nil)
	if a.status != 200 || a.json(t)["changed"] != true || a.json(t)["policy_digest"] == before {
		t.Fatalf("reload: %d %s", a.status, a.body)
	}
	good := f.srv.Status().PolicyDigest
	f.setPolicy("not: [a policy")
	if a := f.op("POST", "/v1/reload", nil); a.status != 422 || code(t, a) != serve.CodeReloadFailed {
		t.Fatalf("a broken set: %d %s, want 422 reload_failed", a.status, a.body)
	}
	if f.srv.Status().PolicyDigest != good {
		t.Fatal("a broken set replaced the good one")
	}
}

// TestAllApprovals: GET /v1/approvals lists the pending requests of every
// session, so that the person approving need not know the session id.
func TestAllApprovals(t *testing.T) {
	f := approvalServer(t, nil)
	op := []string{"Authorization", "Bearer " + approverToken}
	if a := f.do("GET", "/v1/approvals", nil, op...); a.status != 200 || !strings.Contains(string(a.body), `"sessions":[]`) {
		t.Fatalf("no request yet: %d %s", a.status, a.body)
	}
	req := requestOf(t, f.before("s9", "git push origin main"))
	f.before("s8", "ls")
	a := f.do("GET", "/v1/approvals", nil, op...)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	sessions, _ := a.json(t)["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("want one session with a request, got %s", a.body)
	}
	s := sessions[0].(map[string]any)
	reqs, _ := s["requests"].([]any)
	if s["session_id"] != "s9" || len(reqs) != 1 || reqs[0].(map[string]any)["id"] != req {
		t.Fatalf("want s9's request %s, got %s", req, a.body)
	}
}
