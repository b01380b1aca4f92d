package eval_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const examplePolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: example
counters:
  - name: failures
    key: 'tool + ":" + canonical(args)'
    increment_when: 'result.is_error'
    reset_when: '!result.is_error'
rules:
  - id: no-rm-root
    priority: 900
    match: {tools: [Bash]}
    condition: 'args.command.matches("rm\\s+-rf\\s+/(\\s|$)")'
    verdict: block
    reason: Deleting / is never allowed.
    code: dangerous_command
  - id: clamp-timeout
    match: {tools: [Bash]}
    condition: 'has(args.timeout) && args.timeout > 600000'
    verdict: modify
    modify:
      set: {timeout: '600000'}
  - id: stop-retrying
    condition: 'counters.failures >= 2'
    verdict: block
    reason: This call already failed twice.
`

func newExampleEngine() *eval.Engine {
	set, err := compile.Compile([]policy.Source{{Name: "example.yaml", Data: []byte(examplePolicy)}})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := eval.New(set)
	if err != nil {
		log.Fatal(err)
	}
	return eng
}

func ExampleSession_Before() {
	eng := newExampleEngine()
	s := eng.NewSession("session-1", map[string]any{"agent": "my-agent"})
	d, _ := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}})
	fmt.Println(d.Verdict, d.RuleID, d.Code)
	fmt.Println(d.Reason)
	// Output:
	// block no-rm-root dangerous_command
	// Deleting / is never allowed.
}

func ExampleSession_Before_modify() {
	eng := newExampleEngine()
	s := eng.NewSession("session-1", nil)
	d, _ := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "make", "timeout": 3600000.0}})
	fmt.Println(d.Verdict, d.Modified, d.Args["timeout"])
	// Output: modify [clamp-timeout] 600000
}

func ExampleSession_After() {
	eng := newExampleEngine()
	s := eng.NewSession("session-1", nil)
	ctx := context.Background()
	s.StartTurn()
	call := eval.Call{Tool: "Bash", Args: map[string]any{"command": "make"}}
	for i := 0; i < 2; i++ {
		_, _ = s.After(ctx, call, eval.Result{IsError: true, Content: "make: *** [all] Error 1"})
	}
	d, _ := s.Before(ctx, call)
	fmt.Println(d.Verdict, d.RuleID)
	s.StartTurn() // turn-scoped counters start again
	d, _ = s.Before(ctx, call)
	fmt.Println(d.Verdict)
	// Output:
	// block stop-retrying
	// allow
}

func ExampleWithApprover() {
	set, _ := compile.Compile([]policy.Source{{Name: "ask.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: ask
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    condition: 'args.command.startsWith("git push")'
    verdict: ask
    reason: Pushing needs a human.
`)}})
	approver := eval.ApproverFunc(func(ctx context.Context, req eval.ApprovalRequest) (eval.Approval, error) {
		fmt.Println("asked:", req.Reason)
		return eval.Approval{Answer: eval.Approve, Remember: eval.RememberCall}, nil
	})
	eng, _ := eval.New(set, eval.WithApprover(approver))
	s := eng.NewSession("s", nil)
	push := eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push"}}
	d, _ := s.Before(context.Background(), push)
	fmt.Println(d.Verdict, d.Approval.Outcome)
	d, _ = s.Before(context.Background(), push) // remembered for this call
	fmt.Println(d.Verdict, d.Approval.Outcome)
	// Output:
	// asked: Pushing needs a human.
	// allow approved
	// allow remembered
}

// An ask the host defers becomes a request a person answers later; the
// identical call then runs once.
func ExampleSession_Approve() {
	set, _ := compile.Compile([]policy.Source{{Name: "ask.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: ask
rules:
  - id: confirm-push
    match: {tools: [Bash]}
    verdict: ask
    reason: Pushing needs a human.
`)}})
	deferToHost := eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
		return eval.Approval{Answer: eval.Defer}, nil
	})
	eng, _ := eval.New(set, eval.WithApprover(deferToHost), eval.WithApprovalRequests())
	s := eng.NewSession("s", nil)
	push := eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push"}, Cwd: "/srv/app"}
	d, _ := s.Before(context.Background(), push)
	fmt.Println(d.Verdict, len(d.Approval.Request))
	_, req, _ := s.Approve(context.Background(), d.Approval.Request, eval.GrantOnce, "the user")
	fmt.Println(req.Summary)
	d, _ = s.Before(context.Background(), push)
	fmt.Println(d.Verdict, d.Approval.Outcome, d.Approval.Remember)
	d, _ = s.Before(context.Background(), push)
	fmt.Println(d.Verdict)
	// Output:
	// ask 8
	// Bash: git push
	// allow remembered once
	// ask
}

// A rule names a judge; the engine is given what the judge is.
func ExampleWithJudge() {
	set, _ := compile.Compile([]policy.Source{{Name: "judged.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: judged
rules:
  - id: review-shell
    match: {tools: [Bash]}
    verdict: ask
    judge: reviewer
`)}})
	reviewer := eval.JudgeFunc(func(_ context.Context, req eval.JudgeRequest) (eval.JudgeAnswer, error) {
		if strings.Contains(fmt.Sprint(req.Call.Args["command"]), "rm ") {
			return eval.JudgeAnswer{Verdict: policy.Block, Reason: "deletes files"}, nil
		}
		return eval.JudgeAnswer{Verdict: policy.Allow}, nil
	})
	eng, _ := eval.New(set, eval.WithJudge("reviewer", reviewer))
	s := eng.NewSession("s", nil)
	d, _ := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -r build"}})
	fmt.Println(d.Verdict, d.Code, d.Reason)
	d, _ = s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "make"}})
	fmt.Println(d.Verdict, d.Judge.Name)
	// Output:
	// block judge_denied judge reviewer: deletes files
	// allow reviewer
}
