package policies_test

import (
	"context"
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestBuiltinCostOnLongCommands measures what the cost_over_budget
// warnings of the built-in policies estimate (and what their
// `# celguard:ignore cost_over_budget` comments cite): every built-in
// policy decides adversarial shell commands of about 1 KiB (hundreds of
// operands, pipes, redirects, globs, three levels of nesting) with a
// 250-character working directory within the runtime cost budget, never
// with a policy_error. Past that the budget is at real risk: `rm -rf` with
// 2,000 operands (4 KiB) exceeds it in sensitive-files, and the call fails
// closed (block, policy_error) rather than being allowed. When a policy
// gets cheaper and that case passes, move it to the first list.
func TestBuiltinCostOnLongCommands(t *testing.T) {
	srcs, err := policies.Discover(policies.Options{Bundle: "all", UserDir: "-", ProjectDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := eval.New(set)
	if err != nil {
		t.Fatal(err)
	}
	words := func(n int, w string) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	cwd := "/home/user/" + strings.Repeat("d", 240)
	decide := func(cmd string) eval.Decision {
		d, _ := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: cwd})
		return d
	}
	within := map[string]string{
		"rm, 495 operands":         "rm -rf " + words(495, "a"),
		"rm, one long path":        "rm -rf /" + strings.Repeat("b", 990),
		"chmod, 495 operands":      "chmod -R 777 " + words(495, "a"),
		"dd, 490 operands":         "dd of=/dev/sda " + words(490, "if=a"),
		"330 pipes":                words(330, "a|"),
		"330 commands":             words(330, "a;"),
		"245 redirects":            words(245, "a >f"),
		"300 globs":                "cat " + words(300, "*.pem"),
		"three levels of nesting":  `bash -c 'sudo bash -c "env bash -c \"rm -rf ` + words(300, "x") + `\""'`,
		"30 mixed pipelines":       strings.Repeat("sudo rm -rf a b c > /tmp/x | sh; ", 30),
		"a fork bomb among others": ":(){ :|:& };: ; " + words(300, "a;"),
	}
	for name, cmd := range within {
		if d := decide(cmd); d.Code == eval.CodePolicyError {
			t.Errorf("%s (%d bytes): %s %s: %s", name, len(cmd), d.Code, d.RuleID, d.Error)
		}
	}
	over := map[string]string{
		"rm, 2,040 operands (4 KiB)": "rm -rf " + words(2040, "a"),
	}
	for name, cmd := range over {
		d := decide(cmd)
		if d.Code != eval.CodePolicyError || d.Verdict != policy.Block {
			t.Errorf("%s (%d bytes): %s %s %s, want a block with policy_error (over the budget, fail closed); if it is now within, move it to the first list", name, len(cmd), d.Verdict, d.Code, d.RuleID)
		}
	}
}
