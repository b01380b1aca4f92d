package eval_test

import (
	"context"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestMonitorMode: a monitored policy's rules are evaluated and the first
// that matches before the deciding rule (what would decide if it were
// enforced) is reported, but the call is decided as if the policy were
// absent: its block, halt, ask and modify change nothing; a failing
// condition is a would-be policy_error; WithMonitor monitors every policy
// but the mandatory ones.
func TestMonitorMode(t *testing.T) {
	set := monitorSet(t)
	approver := eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
		t.Error("a monitored ask reached the approver")
		return eval.Approval{Answer: eval.Deny}, nil
	})
	eng, err := eval.New(set, eval.WithApprover(approver))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	for _, tc := range []struct {
		call      eval.Call
		verdict   policy.Verdict
		rule      string
		monitored string
		would     policy.Verdict
	}{
		{bash("curl x"), policy.Warn, "live-warn-curl", "shadow-block-curl", policy.Block},
		{bash("halt"), policy.Allow, "", "shadow-halt", policy.Halt},
		{bash("ls", "timeout", 5), policy.Allow, "", "shadow-rewrite", policy.Modify},
		{bash("push"), policy.Allow, "", "shadow-ask", policy.Ask},
		{bash("rm -rf x"), policy.Block, "live-block-rm", "", 0},
		// A rule that decides before the monitored one: enforcing the
		// monitored policy would change nothing, so nothing is reported.
		{bash("git status"), policy.Allow, "live-allow-git", "", 0},
		{bash("sudo ls"), policy.Block, "must-block-sudo", "", 0},
		{eval.Call{Tool: "Read", Args: map[string]any{"missing": "x"}}, policy.Allow, "", "shadow-broken", policy.Block},
	} {
		d, err := s.Before(ctx, tc.call)
		if err != nil || d.Verdict != tc.verdict || d.RuleID != tc.rule || d.Args != nil {
			t.Errorf("%v: got %s by %q (%v), want %s by %q", tc.call.Args, d.Verdict, d.RuleID, err, tc.verdict, tc.rule)
		}
		switch {
		case tc.monitored == "" && d.Monitored != nil:
			t.Errorf("%v: monitored %+v, want none", tc.call.Args, d.Monitored)
		case tc.monitored != "" && (d.Monitored == nil || d.Monitored.RuleID != tc.monitored || d.Monitored.Verdict != tc.would || d.Monitored.Metadata["rollout"] != "week-1"):
			t.Errorf("%v: monitored %+v, want %s by %s", tc.call.Args, d.Monitored, tc.would, tc.monitored)
		}
	}
	d, _ := s.Before(ctx, bash("curl x"))
	if d.Monitored.Reason != "would block curl x" || d.Monitored.Code != "no_curl" {
		t.Errorf("monitored reason: %+v", d.Monitored)
	}
	d, _ = s.Before(ctx, eval.Call{Tool: "Read"})
	if d.Monitored == nil || d.Monitored.Code != eval.CodePolicyError || d.Monitored.Error == "" {
		t.Errorf("a failing monitored rule: %+v", d.Monitored)
	}
}

// TestMonitorAll: WithMonitor monitors every policy but the mandatory one.
func TestMonitorAll(t *testing.T) {
	eng, err := eval.New(monitorSet(t), eval.WithMonitor())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := eng.NewSession("s", nil)
	if d, _ := s.Before(ctx, bash("rm -rf x")); d.Verdict != policy.Allow || d.Monitored == nil || d.Monitored.RuleID != "live-block-rm" {
		t.Errorf("--monitor: rm = %+v", d)
	}
	if d, _ := s.Before(ctx, bash("sudo ls")); d.Verdict != policy.Block || d.RuleID != "must-block-sudo" {
		t.Errorf("--monitor: a mandatory rule must keep enforcing: %+v", d)
	}
}

// bash is a Bash call of cmd, with more arguments given as key, value.
func bash(cmd string, extra ...any) eval.Call {
	args := map[string]any{"command": cmd, "missing": "no"}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return eval.Call{Tool: "Bash", Args: args}
}

// monitorSet is a monitored policy, an enforced one and a mandatory one.
func monitorSet(t *testing.T) *compile.PolicySet {
	t.Helper()
	return mustSet(t, map[string]string{
		"shadow.yaml": `
mode: monitor
metadata: {rollout: week-1}
rules:
  - id: shadow-block-curl
    priority: 10
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("curl")'
    verdict: block
    code: no_curl
    message: '"would block " + args.command'
  - id: shadow-halt
    condition: 'has(args.command) && args.command == "halt"'
    verdict: halt
  - id: shadow-rewrite
    condition: 'has(args.timeout)'
    verdict: modify
    modify: {set: {timeout: '1'}}
  - id: shadow-ask
    condition: 'has(args.command) && args.command == "push"'
    verdict: ask
  - id: shadow-block-git
    condition: 'has(args.command) && args.command.startsWith("git")'
    verdict: block
  - id: shadow-broken
    condition: 'args.missing == "x"'
    verdict: block
`,
		"live.yaml": `
rules:
  - id: live-warn-curl
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("curl")'
    verdict: warn
  - id: live-allow-git
    priority: 100
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("git")'
    verdict: allow
  - id: live-block-rm
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("rm")'
    verdict: block
`,
		"must.yaml": `
enforcement: mandatory
rules:
  - id: must-block-sudo
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("sudo")'
    verdict: block
`,
	})
}
