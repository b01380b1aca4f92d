package eval_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestApproverOutcomes: an approver that times out is reported as
// approval_timeout (outcome timeout), one that fails otherwise as
// approval_required (outcome error); the decision names the rule's line and
// column.
func TestApproverOutcomes(t *testing.T) {
	set := mustSet(t, map[string]string{"a.yaml": `rules:
  - id: confirm
    match: {tools: [Deploy]}
    verdict: ask
    reason: deploys need a yes
`})
	for _, tt := range []struct {
		name    string
		err     error
		code    string
		outcome eval.ApprovalOutcome
	}{
		{"timeout", fmt.Errorf("nobody answered: %w", context.DeadlineExceeded), eval.CodeApprovalTimeout, eval.ApprovalTimeout},
		{"failure", errors.New("the chat is down"), eval.CodeApprovalRequired, eval.ApprovalError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := eval.New(set, eval.WithApprover(eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
				return eval.Approval{}, tt.err
			})))
			require.NoError(t, err)
			d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Deploy"})
			require.NoError(t, err)
			assert.Equal(t, policy.Block, d.Verdict)
			assert.Equal(t, tt.code, d.Code)
			require.NotNil(t, d.Approval)
			assert.Equal(t, tt.outcome, d.Approval.Outcome)
			assert.Equal(t, "confirm", d.RuleID)
			assert.Equal(t, 5, d.Line)
			assert.Equal(t, 5, d.Col)
		})
	}
}
