package peers

import (
	"context"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
)

// Celguard is the policy as celguard runs it: benchdata.Policy20 compiled,
// one session, ask rules approved (as in the eval benchmarks).
type Celguard struct {
	s *eval.Session
}

var approveAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Approve}, nil
})

// NewCelguard compiles the policy and starts a session.
func NewCelguard() (*Celguard, error) {
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		return nil, err
	}
	eng, err := eval.New(set, eval.WithApprover(approveAll))
	if err != nil {
		return nil, err
	}
	return &Celguard{s: eng.NewSession("bench", nil)}, nil
}

// Decide implements Decider. The verdict is the deciding rule's: an ask
// the approver approved is reported as ask.
func (g *Celguard) Decide(c eval.Call) (string, string) {
	d, err := g.s.Before(context.Background(), c)
	if err != nil {
		return "block", "error: " + err.Error()
	}
	if d.Approval != nil {
		return "ask", d.RuleID
	}
	return d.Verdict.String(), d.RuleID
}
