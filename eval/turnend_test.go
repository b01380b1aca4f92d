package eval_test

import (
	"context"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestEndTurn: the turn_end rules read the turn's counters and report (warn
// or allow); they see no call; a halted turn's end is decided too; no rule
// of another phase runs at turn end.
func TestEndTurn(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": `
counters:
  - name: calls
    increment_when: 'true'
rules:
  - id: stop
    condition: 'args.command == "shutdown"'
    verdict: halt
  - id: busy-turn
    phase: turn_end
    condition: 'counters.calls >= 3'
    verdict: warn
    message: '"this turn made " + string(counters.calls) + " calls; tool was \"" + tool + "\""'
`})
	eng, err := eval.New(set)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	call := eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}}
	end := func(want policy.Verdict, rule, reason string) {
		t.Helper()
		d, err := s.EndTurn(ctx)
		if err != nil || d.Verdict != want || d.RuleID != rule || d.Reason != reason || d.Phase != policy.PhaseTurnEnd {
			t.Errorf("EndTurn = %+v, %v; want %s by %q (%q)", d, err, want, rule, reason)
		}
	}
	end(policy.Allow, "", "")
	for range 3 {
		s.After(ctx, call, eval.Result{})
	}
	end(policy.Warn, "busy-turn", `this turn made 3 calls; tool was ""`)
	s.StartTurn()
	end(policy.Allow, "", "")
	for range 3 {
		s.After(ctx, call, eval.Result{})
	}
	if d, _ := s.Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": "shutdown"}}); d.Verdict != policy.Halt {
		t.Fatalf("shutdown: %+v", d)
	}
	end(policy.Warn, "busy-turn", `this turn made 3 calls; tool was ""`)
}
