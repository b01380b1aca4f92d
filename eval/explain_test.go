package eval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const explainPolicy = `variables:
  - name: cmd
    expression: 'has(args.command) ? string(args.command) : ""'
counters:
  - name: fails
    scope: turn
    increment_when: 'result.is_error'
rules:
  - id: only-read
    match: {tools: [Read]}
    verdict: block
  - id: clamp
    match: {tools: [Bash]}
    condition: 'has(args.timeout) && int(args.timeout) > 600000'
    verdict: modify
    modify:
      set: {timeout: '600000'}
  - id: rm-in-tmp
    match: {tools: [Bash]}
    condition: 'cmd.startsWith("rm ") && args.cwd == "/tmp" && counters.fails < 3'
    verdict: block
  - id: ask-push
    match: {tools: [Bash]}
    condition: '!(cmd.size() > 3) || cmd.startsWith("git push")'
    verdict: ask
  - id: boom
    match: {tools: [Bash]}
    condition: 'args.missing == "x"'
    verdict: block
    failure_policy: open
  - id: any-sudo
    match: {tools: [Bash]}
    condition: '["sudo", "doas"].exists(p, cmd.startsWith(p + " "))'
    verdict: warn
`

func explain(t *testing.T, call eval.Call) eval.Explanation {
	t.Helper()
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": explainPolicy}))
	if err != nil {
		t.Fatal(err)
	}
	var x eval.Explanation
	d, err := eng.NewSession("s", nil).Before(t.Context(), call, eval.WithExplain(&x))
	if err != nil {
		t.Fatal(err)
	}
	if x.Decision.Verdict != d.Verdict || x.Decision.RuleID != d.RuleID {
		t.Fatalf("Explanation.Decision = %+v, want the decision returned %+v", x.Decision, d)
	}
	return x
}

func stepFor(t *testing.T, x eval.Explanation, rule string, pass int) eval.ExplainStep {
	t.Helper()
	for _, st := range x.Steps {
		if st.RuleID == rule && st.Pass == pass {
			return st
		}
	}
	b, _ := json.MarshalIndent(x, "", "  ")
	t.Fatalf("no step for rule %s pass %d in\n%s", rule, pass, b)
	return eval.ExplainStep{}
}

func TestExplainFalseAndBranch(t *testing.T) {
	x := explain(t, eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf x", "cwd": "/home"}})
	st := stepFor(t, x, "rm-in-tmp", 1)
	if st.Outcome != eval.OutcomeNoMatch {
		t.Fatalf("outcome = %s, want no_match", st.Outcome)
	}
	// cmd.startsWith("rm ") is true and counters.fails < 3 is never reached:
	// the one branch that made the && false is args.cwd == "/tmp".
	if len(st.Because) != 1 {
		t.Fatalf("because = %+v, want exactly the false branch", st.Because)
	}
	b := st.Because[0]
	if b.Expr != `args.cwd == "/tmp"` || b.Value != false || b.Type != "bool" {
		t.Errorf("because = %q = %v (%s), want args.cwd == \"/tmp\" = false (bool)", b.Expr, b.Value, b.Type)
	}
	if len(b.Operands) != 1 || b.Operands[0].Expr != "args.cwd" || b.Operands[0].Value != "/home" {
		t.Errorf("operands = %+v, want args.cwd = \"/home\"", b.Operands)
	}
	// The position points into the YAML file, at the start of the branch.
	if b.Pos.File != "p.yaml" || b.Pos.Line != 23 || b.Pos.Col != 42 {
		t.Errorf("pos = %v, want p.yaml:23:42", b.Pos)
	}
}

func TestExplainOrAndNot(t *testing.T) {
	x := explain(t, eval.Call{Tool: "Bash", Args: map[string]any{"command": "make all"}})
	st := stepFor(t, x, "ask-push", 1)
	// A false || is explained by each operand; the operand of a false ! is
	// the true comparison under it.
	var got []string
	for _, b := range st.Because {
		got = append(got, b.Expr)
	}
	want := []string{"cmd.size() > 3", `cmd.startsWith("git push")`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("because = %q, want %q", got, want)
	}
	if st.Because[0].Value != true || st.Because[1].Value != false {
		t.Errorf("values = %v, %v; want true, false", st.Because[0].Value, st.Because[1].Value)
	}
	ops := st.Because[0].Operands
	if len(ops) != 1 || ops[0].Expr != "cmd.size()" || ops[0].Value != int64(8) {
		t.Errorf("operands of cmd.size() > 3 = %+v, want cmd.size() = 8", ops)
	}
}

func TestExplainModifyPassesErrorsAndMatch(t *testing.T) {
	x := explain(t, eval.Call{Tool: "Bash", Args: map[string]any{"command": "sudo ls", "timeout": 900000}})
	if x.Decision.Verdict != policy.Warn || x.Decision.RuleID != "any-sudo" {
		t.Fatalf("decision = %s by %s, want warn by any-sudo", x.Decision.Verdict, x.Decision.RuleID)
	}
	if st := stepFor(t, x, "only-read", 0); st.Outcome != eval.OutcomeToolNotMatched {
		t.Errorf("only-read outcome = %s, want tool_not_matched", st.Outcome)
	}
	clamp := stepFor(t, x, "clamp", 1)
	if clamp.Outcome != eval.OutcomeApplied || len(clamp.Because) != 2 {
		t.Errorf("clamp pass 1 = %s because %+v, want applied because both branches were true", clamp.Outcome, clamp.Because)
	}
	if st := stepFor(t, x, "clamp", 2); st.Outcome != eval.OutcomeAlreadyApplied {
		t.Errorf("clamp pass 2 = %s, want already_applied", st.Outcome)
	}
	boom := stepFor(t, x, "boom", 2)
	if boom.Outcome != eval.OutcomeError || !strings.Contains(boom.Error, "missing") {
		t.Errorf("boom = %s (%s), want an error naming the missing key", boom.Outcome, boom.Error)
	}
	if len(boom.Because) != 1 || boom.Because[0].Error == "" {
		t.Errorf("boom because = %+v, want the failing sub-expression", boom.Because)
	}
	sudo := stepFor(t, x, "any-sudo", 2)
	if sudo.Outcome != eval.OutcomeMatched || len(sudo.Because) != 1 {
		t.Fatalf("any-sudo = %s because %+v", sudo.Outcome, sudo.Because)
	}
	b := sudo.Because[0]
	if b.Expr != `["sudo", "doas"].exists(p, cmd.startsWith(p + " "))` || b.Value != true {
		t.Errorf("macro because = %q = %v", b.Expr, b.Value)
	}
	if len(x.Counters) != 1 || x.Counters[0].Counter != "p/fails" || x.Counters[0].Key != eval.AllCallsKey || x.Counters[0].Value != 0 {
		t.Errorf("counters = %+v, want p/fails, one key for every call, = 0", x.Counters)
	}
}

func TestExplainHaltedTurn(t *testing.T) {
	eng, err := eval.New(mustSet(t, map[string]string{"h.yaml": "rules:\n  - id: stop\n    verdict: halt\n    reason: stop\n"}))
	if err != nil {
		t.Fatal(err)
	}
	s := eng.NewSession("s", nil)
	if _, err := s.Before(t.Context(), eval.Call{Tool: "Bash"}); err != nil {
		t.Fatal(err)
	}
	var x eval.Explanation
	if _, err := s.Before(t.Context(), eval.Call{Tool: "Bash"}, eval.WithExplain(&x)); err != nil {
		t.Fatal(err)
	}
	if !x.Halted || x.Decision.Code != eval.CodeTurnHalted || len(x.Steps) != 0 {
		t.Errorf("explanation = %+v, want halted with no steps", x)
	}
}

func TestExplanationJSONFieldNames(t *testing.T) {
	x := explain(t, eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm x", "cwd": "/home"}})
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"decision":`, `"steps":`, `"counters":`, `"rule_id":`, `"col":`, `"outcome":`, `"pass":`, `"condition":`, `"because":`, `"expr":`, `"pos":`, `"value":`, `"type":`, `"operands":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON has no %s:\n%s", key, b)
		}
	}
}
