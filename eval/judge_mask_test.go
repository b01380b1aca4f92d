package eval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// TestJudgeSeesMaskedCall: what a judge is shown of a call (the prompt
// that may leave the machine) is masked as the decision log masks it: the
// paths a policy's decision_log.mask names, then every credential, in the
// arguments and in the rule's reason built from them; the answer is still
// cached by the exact call.
func TestJudgeSeesMaskedCall(t *testing.T) {
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	const password = "hunter2-correct-horse"
	set := mustSet(t, map[string]string{"j.yaml": `
decision_log:
  mask:
    - env.DB_PASSWORD
rules:
  - id: review
    match: {tools: [Bash]}
    verdict: ask
    judge: reviewer
    message: '"review " + args.command + " with " + args.env.DB_PASSWORD'
`})
	var seen []eval.JudgeRequest
	reviewer := eval.JudgeFunc(func(_ context.Context, req eval.JudgeRequest) (eval.JudgeAnswer, error) {
		seen = append(seen, req)
		return eval.JudgeAnswer{Verdict: policy.Allow, Reason: "fine"}, nil
	})
	eng, err := eval.New(set, eval.WithJudge("reviewer", reviewer))
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	call := eval.Call{Tool: "Bash", Args: map[string]any{
		"command": "git push https://" + token + "@github.com/o/r",
		"env":     map[string]any{"DB_PASSWORD": password, "HOME": "/srv/app"},
	}}
	for range 2 {
		d, err := s.Before(context.Background(), call)
		require.NoError(t, err)
		assert.Equal(t, policy.Allow, d.Verdict)
	}
	require.Len(t, seen, 1, "the second call is answered from the cache of the exact call")
	req := seen[0]
	shown, err := json.Marshal(req)
	require.NoError(t, err)
	assert.NotContains(t, string(shown), token)
	assert.NotContains(t, string(shown), password)
	assert.Equal(t, "git push https://[REDACTED:github_token]@github.com/o/r", req.Call.Args["command"])
	assert.Equal(t, map[string]any{"DB_PASSWORD": "[MASKED]", "HOME": "/srv/app"}, req.Call.Args["env"])
	assert.Equal(t, "review git push https://[REDACTED:github_token]@github.com/o/r with [MASKED]", req.Reason)
	assert.Contains(t, call.Args["command"], token, "the caller's call is not changed")
}
