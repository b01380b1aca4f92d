package serve_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/store"
)

// preToolUse is a Claude Code PreToolUse event for a Bash command.
func preToolUse(session, command string) map[string]any {
	return map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/srv/app",
		"tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": "toolu_1"}
}

// preToolUseTool is a Claude Code PreToolUse event for a tool without
// input.
func preToolUseTool(session, tool string) map[string]any {
	return map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/srv/app", "tool_name": tool}
}

// permission is the permissionDecision of a Claude Code answer.
func permission(t *testing.T, a answer) string {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("hook answer %d, want 200: %s", a.status, a.body)
	}
	hso, _ := a.json(t)["hookSpecificOutput"].(map[string]any)
	s, _ := hso["permissionDecision"].(string)
	return s
}

// TestHookParity answers every golden event of the hooks package through
// the server, with the same policy, and compares the command form of the
// answer with what the command hook answers (the .golden file): one
// adapter for both. The HTTP form is the same stdout, or for a failure
// the host's deny in JSON.
func TestHookParity(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "hooks", "testdata", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srcs := []policy.Source{policies.ToolClasses(), {Name: "policy.yaml", Data: data, Layer: policy.LayerExplicit}}
	for _, host := range hooks.Hosts() {
		files, err := filepath.Glob(filepath.Join("..", "hooks", "testdata", host, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden events for %s: %v", host, err)
		}
		for _, in := range files {
			name := strings.TrimSuffix(filepath.Base(in), ".json")
			t.Run(host+"/"+name, func(t *testing.T) {
				f := newFixture(t, func(c *serve.Config) {
					c.Engine.Sources = func() ([]policy.Source, error) { return srcs, nil }
				})
				event, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				golden, err := os.ReadFile(strings.TrimSuffix(in, ".json") + ".golden")
				if err != nil {
					t.Fatal(err)
				}
				want := decodeGolden(t, golden)
				// The one intended difference: without an approver token
				// the server says no one can approve an ask here.
				want.Stdout = noApprovalRE.ReplaceAllLiteralString(want.Stdout, ", and "+serve.NoApprovalsReason)

				a := f.do("POST", "/v1/hooks/"+host+"?form=command", string(event))
				var got serve.CommandAnswer
				if err := json.Unmarshal(a.body, &got); err != nil || a.status != 200 {
					t.Fatalf("command form: %d %s", a.status, a.body)
				}
				if got != want {
					t.Errorf("command form:\n got %+v\nwant %+v", got, want)
				}

				f2 := newFixture(t, func(c *serve.Config) {
					c.Engine.Sources = func() ([]policy.Source, error) { return srcs, nil }
				})
				a = f2.do("POST", "/v1/hooks/"+host, string(event))
				if a.status != 200 {
					t.Fatalf("HTTP form: %d %s", a.status, a.body)
				}
				switch {
				case want.Stdout != "":
					if string(a.body) != want.Stdout {
						t.Errorf("HTTP form: %s, want the command's stdout %s", a.body, want.Stdout)
					}
				case want.Exit == 2:
					if !strings.Contains(string(a.body), `"deny"`) && !strings.Contains(string(a.body), `"block"`) {
						t.Errorf("HTTP form of a failure: %s, want the host's deny", a.body)
					}
				default:
					if strings.TrimSpace(string(a.body)) != "{}" {
						t.Errorf("HTTP form of an empty answer: %s, want {}", a.body)
					}
				}
			})
		}
	}
}

// decodeGolden reads a hooks golden file: "exit N", stdout, stderr.
func decodeGolden(t *testing.T, b []byte) serve.CommandAnswer {
	t.Helper()
	a := txtar.Parse(b)
	exit, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(a.Comment), "exit ")))
	if err != nil {
		t.Fatalf("golden comment %q", a.Comment)
	}
	out := serve.CommandAnswer{Exit: exit}
	for _, f := range a.Files {
		switch f.Name {
		case "stdout":
			out.Stdout = string(f.Data)
		case "stderr":
			out.Stderr = string(f.Data)
		}
	}
	return out
}

func TestHookFailuresDeny(t *testing.T) {
	f := newFixture(t, func(c *serve.Config) { c.Token = "tok"; c.MaxBodyBytes = 512 })
	auth := []string{"Authorization", "Bearer tok"}
	cases := []struct {
		name   string
		path   string
		body   any
		header []string
	}{
		{"no token", "/v1/hooks/claude-code", preToolUse("h", "ls"), nil},
		{"wrong token", "/v1/hooks/claude-code", preToolUse("h", "ls"), []string{"Authorization", "Bearer nope"}},
		{"too large", "/v1/hooks/claude-code", preToolUse("h", strings.Repeat("x", 1024)), auth},
		{"not JSON", "/v1/hooks/claude-code", "{", auth},
		{"no session", "/v1/hooks/claude-code", preToolUse("", "ls"), auth},
		{"the policy blocks", "/v1/hooks/claude-code", preToolUse("h", "rm -rf /"), auth},
	}
	for _, c := range cases {
		a := f.do("POST", c.path, c.body, c.header...)
		if a.status != 200 {
			t.Errorf("%s: status %d, want 200", c.name, a.status)
			continue
		}
		m := a.json(t)
		hso, _ := m["hookSpecificOutput"].(map[string]any)
		if hso["permissionDecision"] != "deny" && m["decision"] != "block" {
			t.Errorf("%s: %s, want a deny", c.name, a.body)
		}
	}
	// The allowed call, with the token.
	if a := f.do("POST", "/v1/hooks/claude-code", preToolUse("h", "ls"), auth...); a.status != 200 || strings.Contains(string(a.body), "deny") {
		t.Errorf("an allowed call: %d %s", a.status, a.body)
	}
	// Every host's failure form, for an event with no session id.
	events := map[string]string{"claude-code": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "cursor": "preToolUse"}
	for _, host := range hooks.Hosts() {
		a := f.do("POST", "/v1/hooks/"+host+"?form=command", map[string]any{"hook_event_name": events[host], "tool_name": "Bash"}, auth...)
		var ca serve.CommandAnswer
		if err := json.Unmarshal(a.body, &ca); err != nil || ca.Exit != 2 || ca.Stderr == "" {
			t.Errorf("%s: %s, want exit 2 with a reason", host, a.body)
		}
	}
}

func TestHookSessionLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"hook_event_name": name, "session_id": "life", "cwd": "/srv/app"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	f.do("POST", "/v1/hooks/claude-code", ev("SessionStart", nil))
	if n := f.srv.Status().Sessions; n != 1 {
		t.Fatalf("sessions after SessionStart: %d", n)
	}
	if p := permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUse("life", "halt"))); p != "deny" {
		t.Fatalf("halt: %s", p)
	}
	if p := permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUse("life", "ls"))); p != "deny" {
		t.Fatalf("a call in the halted turn: %s, want deny", p)
	}
	f.do("POST", "/v1/hooks/claude-code", ev("UserPromptSubmit", map[string]any{"prompt": "go on"}))
	if p := permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUse("life", "ls"))); p == "deny" {
		t.Fatal("a call after a new prompt was denied")
	}
	// Without a store the in-memory session is the state: a SessionEnd
	// keeps it (TestHookSessionEndKeepsLimits).
	f.do("POST", "/v1/hooks/claude-code", ev("SessionEnd", nil))
	if n := f.srv.Status().Sessions; n != 1 {
		t.Fatalf("sessions after SessionEnd: %d, want 1", n)
	}
	// A host's session id is never in a path: a '/' in it is fine.
	if p := permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUse("team/42", "ls"))); p == "deny" {
		t.Fatal("a session id with a '/' was denied")
	}
}

// TestHookSessionEndKeepsLimits ends a session through the hook endpoint
// (the agents' token) and starts it again with the same id: the session's
// counter cap still holds, with a store and without one. Only the
// operator's DELETE /v1/sessions/{id} discards a session's state.
func TestHookSessionEndKeepsLimits(t *testing.T) {
	for _, withStore := range []bool{false, true} {
		t.Run(map[bool]string{false: "no store", true: "memory store"}[withStore], func(t *testing.T) {
			f := newFixture(t, func(c *serve.Config) {
				c.Token = decisionToken
				withOperator(c)
				if withStore {
					c.Engine.Store = store.NewMemory(time.Hour)
				}
			})
			auth := []string{"Authorization", "Bearer " + decisionToken}
			event := func(name string) map[string]any {
				return map[string]any{"hook_event_name": name, "session_id": "capped", "cwd": "/srv/app"}
			}
			push := func() string {
				t.Helper()
				return permission(t, f.do("POST", "/v1/hooks/claude-code", preToolUseTool("capped", "Push"), auth...))
			}
			f.do("POST", "/v1/hooks/claude-code", event("SessionStart"), auth...)
			for i := range 2 {
				if p := push(); p == "deny" {
					t.Fatalf("push %d under the cap: %s", i+1, p)
				}
			}
			if p := push(); p != "deny" {
				t.Fatalf("push over the cap: %q, want deny", p)
			}
			for round := range 2 {
				if a := f.do("POST", "/v1/hooks/claude-code", event("SessionEnd"), auth...); a.status != 200 {
					t.Fatalf("SessionEnd: %d %s", a.status, a.body)
				}
				f.do("POST", "/v1/hooks/claude-code", event("SessionStart"), auth...)
				if p := push(); p != "deny" {
					t.Fatalf("round %d: a push after SessionEnd and a new start: %q, want deny (the cap was reset)", round, p)
				}
			}
			// The agents' token cannot delete the state either.
			if a := f.do("DELETE", "/v1/sessions/capped", nil, auth...); a.status != 403 {
				t.Fatalf("DELETE with the agents' token: %d, want 403", a.status)
			}
			// The operator can.
			if a := f.op("DELETE", "/v1/sessions/capped", nil); a.status != 204 {
				t.Fatalf("DELETE with the operator token: %d %s", a.status, a.body)
			}
			f.do("POST", "/v1/hooks/claude-code", event("SessionStart"), auth...)
			if p := push(); p == "deny" {
				t.Fatal("a push after the operator deleted the session: deny, want the cap reset")
			}
		})
	}
}

// noApprovalRE is the end of the refusal of an ask no approval can lift, in
// a golden answer (hooks.NoApprovalNote and the advice after it).
var noApprovalRE = regexp.MustCompile(regexp.QuoteMeta(hooks.NoApprovalNote) + `[^"]*`)

// TestHookTooLarge: a hook event larger than the server's limit is the
// host's failure answer (a block), saying why, and one at the limit is
// decided.
func TestHookTooLarge(t *testing.T) {
	ev := preToolUseTool("x", "Bash")
	ev["tool_input"] = map[string]any{"command": "ls " + strings.Repeat("a", 300)}
	body, _ := json.Marshal(ev)
	f := newFixture(t, func(c *serve.Config) { c.MaxBodyBytes = int64(len(body)) - 1 })
	a := f.do("POST", "/v1/hooks/claude-code", string(body))
	if a.status != 200 || !strings.Contains(string(a.body), `"decision":"block"`) || !strings.Contains(string(a.body), "too_large") {
		t.Fatalf("an event past the limit: %d %s, want a block saying it is too large", a.status, a.body)
	}
	f = newFixture(t, func(c *serve.Config) { c.MaxBodyBytes = int64(len(body)) })
	a = f.do("POST", "/v1/hooks/claude-code", string(body))
	if a.status != 200 || string(a.body) != "{}\n" {
		t.Fatalf("an event at the limit: %d %q, want it decided: allowed, {}", a.status, a.body)
	}
}
