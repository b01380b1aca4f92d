package eval_test

import (
	"context"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestCallIdentity: a decision echoes the call's id and agent, rules read
// them as call and agent, and an after-event whose call id names a call
// refused before it ran is refused (call_refused), also across a saved
// session state; an allowed retry of the same id forgets the refusal.
func TestCallIdentity(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": `
rules:
  - id: no-rm
    verdict: block
    condition: 'args.command == "rm"'
  - id: reviewer-reads-only
    verdict: block
    condition: 'agent.name == "reviewer" && agent.ids["org"] == "acme"'
  - id: tagged
    verdict: warn
    condition: 'call.id.startsWith("toolu_")'
    message: '"call " + call.id'
  - id: seen
    phase: after
    verdict: warn
    condition: 'call.id != ""'
`})
	eng, err := eval.New(set)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	bash := func(id, cmd string, agent eval.Agent) eval.Call {
		return eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, ID: id, Agent: agent}
	}
	tests := []struct {
		name       string
		call       eval.Call
		after      bool
		verdict    policy.Verdict
		rule, code string
		reason     string
	}{
		{name: "echo and read call.id", call: bash("toolu_1", "ls", eval.Agent{Name: "coder"}), verdict: policy.Warn, rule: "tagged", reason: "call toolu_1"},
		{name: "agent.name and ids", call: bash("c2", "ls", eval.Agent{Name: "reviewer", IDs: map[string]string{"org": "acme"}}), verdict: policy.Block, rule: "reviewer-reads-only"},
		{name: "no id", call: bash("", "ls", eval.Agent{}), verdict: policy.Allow},
		{name: "blocked before", call: bash("c3", "rm", eval.Agent{}), verdict: policy.Block, rule: "no-rm"},
		{name: "its after is refused", call: bash("c3", "rm", eval.Agent{}), after: true, verdict: policy.Block, rule: "no-rm", code: eval.CodeCallRefused},
		{name: "an allowed call's after runs the rules", call: bash("toolu_1", "ls", eval.Agent{}), after: true, verdict: policy.Warn, rule: "seen"},
		{name: "an after without a before is decided", call: bash("c9", "rm", eval.Agent{}), after: true, verdict: policy.Warn, rule: "seen"},
	}
	for _, tt := range tests {
		var d eval.Decision
		if tt.after {
			d, err = s.After(ctx, tt.call, eval.Result{Content: "x"})
		} else {
			d, err = s.Before(ctx, tt.call)
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if d.Verdict != tt.verdict || d.RuleID != tt.rule || d.Code != tt.code || (tt.reason != "" && d.Reason != tt.reason) {
			t.Errorf("%s: got %s by %q code %q reason %q, want %s by %q code %q", tt.name, d.Verdict, d.RuleID, d.Code, d.Reason, tt.verdict, tt.rule, tt.code)
		}
		if d.CallID != tt.call.ID || d.Agent.Name != tt.call.Agent.Name || len(d.Agent.IDs) != len(tt.call.Agent.IDs) {
			t.Errorf("%s: the decision echoes call %q agent %+v, want %q %+v", tt.name, d.CallID, d.Agent, tt.call.ID, tt.call.Agent)
		}
	}

	checkRefusalsSurvive(t, eng, s, bash)
}

// checkRefusalsSurvive: the refusals survive a saved state (a hook runs
// one process per event).
func checkRefusalsSurvive(t *testing.T, eng *eval.Engine, s *eval.Session, bash func(id, cmd string, agent eval.Agent) eval.Call) {
	t.Helper()
	ctx := context.Background()
	st := s.State()
	if len(st.RefusedCalls) != 2 || st.RefusedCalls[0].CallID != "c2" || st.RefusedCalls[1].CallID != "c3" {
		t.Fatalf("state remembers %+v, want the refusals of c2 and c3, oldest first", st.RefusedCalls)
	}
	s2, err := eng.RestoreSession(st)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := s2.After(ctx, bash("c3", "rm", eval.Agent{}), eval.Result{}); d.Code != eval.CodeCallRefused || d.RuleID != "no-rm" {
		t.Errorf("after restore: %+v, want call_refused by no-rm", d)
	}
	// A later before of the same id that is let through forgets the refusal.
	if d, _ := s2.Before(ctx, bash("c3", "ls", eval.Agent{})); !d.Allowed() {
		t.Fatalf("before c3 ls: %+v", d)
	}
	if d, _ := s2.After(ctx, bash("c3", "ls", eval.Agent{}), eval.Result{}); d.Code == eval.CodeCallRefused {
		t.Errorf("after an allowed retry of c3: still refused")
	}
}

// TestRefusedCallsBounded: a session remembers at most MaxRefusedCalls
// refusals; the oldest is forgotten first.
func TestRefusedCallsBounded(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": "rules:\n  - id: b\n    verdict: block\n"})
	eng, _ := eval.New(set)
	s := eng.NewSession("s", nil)
	ctx := context.Background()
	for i := range eval.MaxRefusedCalls + 1 {
		s.Before(ctx, eval.Call{Tool: "T", ID: string(rune('A'+i%26)) + string(rune(i))})
	}
	st := s.State()
	if n := len(st.RefusedCalls); n != eval.MaxRefusedCalls {
		t.Fatalf("remembered %d refusals, want %d", n, eval.MaxRefusedCalls)
	}
	if d, _ := s.After(ctx, eval.Call{Tool: "T", ID: "A" + string(rune(0))}, eval.Result{}); d.Code == eval.CodeCallRefused {
		t.Errorf("the oldest refusal was not forgotten")
	}
	last := eval.MaxRefusedCalls
	if d, _ := s.After(ctx, eval.Call{Tool: "T", ID: string(rune('A'+last%26)) + string(rune(last))}, eval.Result{}); d.Code != eval.CodeCallRefused {
		t.Errorf("the newest refusal was forgotten: %+v", d)
	}
}
