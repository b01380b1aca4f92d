package celguard_test

import (
	"context"
	"fmt"
	"log"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// agent stands for the model side of an Operator-style agent: turns of
// tool calls, and a reply for each.
type agent struct{ turns [][]eval.Call }

func (a *agent) Turns() [][]eval.Call { return a.turns }

func (a *agent) Reply(call eval.Call, text string) { fmt.Printf("  model sees: %s\n", text) }

// runTool stands for running a tool.
func runTool(call eval.Call) eval.Result {
	return eval.Result{Content: fmt.Sprintf("ran %s %v", call.Tool, call.Args)}
}

func newAgent() *agent {
	bash := func(args map[string]any) eval.Call { return eval.Call{Tool: "Bash", Args: args, Cwd: "/work"} }
	return &agent{turns: [][]eval.Call{
		{bash(map[string]any{"command": "make test", "timeout": 3600000.0}), bash(map[string]any{"command": "git push origin main"})},
		{bash(map[string]any{"command": "sudo rm -rf /"})},
	}}
}

// Example_agentLoop is the agent loop of docs/embedding.md (a test keeps
// the two the same): turn start, before the call, the call, after it, turn
// end, with an approver for ask and the rewritten arguments of modify.
func Example_agentLoop() {
	agent := newAgent()
	// embedding.md begin
	ctx := context.Background()
	approver := eval.ApproverFunc(func(ctx context.Context, req eval.ApprovalRequest) (eval.Approval, error) {
		fmt.Printf("  asked: %s\n", req.Reason) // a real host asks its user here
		return eval.Approval{Answer: eval.Approve}, nil
	})
	guard, err := celguard.Load(ctx, celguard.WithPolicies("testdata/team"), celguard.WithApprover(approver))
	if err != nil {
		log.Fatal(err) // a policy.Diagnostics: every problem at its file:line:col
	}
	session := guard.NewSession("session-1", map[string]any{"agent": "operator"})
	for i, turn := range agent.Turns() {
		session.StartTurn() // turn start: turn-scoped counters reset
		fmt.Printf("turn %d\n", i+1)
		for _, call := range turn {
			d, _ := session.Before(ctx, call) // on error, d is already a block
			fmt.Printf("  %s %v: %s %s %s:%d\n", call.Tool, call.Args["command"], d.Verdict, d.RuleID, d.File, d.Line)
			if d.Verdict == policy.Halt {
				return // end the agent's turn
			}
			if !d.Allowed() { // block, or an ask that was refused
				agent.Reply(call, "Tool call refused: "+d.Reason)
				continue
			}
			if d.Args != nil { // modify: run the rewritten call
				call.Args = d.Args
			}
			res := runTool(call)
			a, _ := session.After(ctx, call, res) // counters, then after-phase rules
			if a.Content != nil {
				res.Content = *a.Content // redacted
			}
			if !a.Allowed() {
				res.Content = "Tool result withheld: " + a.Reason
			}
			agent.Reply(call, res.Content)
		}
		// turn end: nothing to close; the next StartTurn resets the turn
	}
	// embedding.md end

	// Output:
	// turn 1
	//   Bash make test: modify clamp-timeout testdata/team/team.yaml:17
	//   model sees: ran Bash map[command:make test timeout:600000]
	//   asked: Pushing publishes the work; a person confirms it.
	//   Bash git push origin main: allow ask-before-push testdata/team/team.yaml:12
	//   model sees: ran Bash map[command:git push origin main]
	// turn 2
	//   Bash sudo rm -rf /: block no-rm-root testdata/team/team.yaml:5
	//   model sees: Tool call refused: Deleting / is never allowed.
}

// ExampleLoad decides with the built-in recommended bundle alone, as
// `celguard eval --user-dir - --project-dir -` does.
func ExampleLoad() {
	ctx := context.Background()
	guard, err := celguard.Load(ctx, celguard.WithUserDir("-"), celguard.WithProjectDir("-"))
	if err != nil {
		log.Fatal(err)
	}
	session := guard.NewSession("session-1", nil)
	d, _ := session.Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": "sudo rm -fr /"}})
	fmt.Println(d.Verdict, d.RuleID, d.Policy, d.Code)
	// Output: block dangerous-recursive-delete dangerous-commands dangerous_command
}
