package eval_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// An ask in a session that remembers no approval does not build the call's
// approval key, the canonical form of its arguments: for a Write, a copy of
// the whole content (issue 19: a fifth of a Write decision). Measured in
// bytes allocated, which do not depend on the machine.
func TestAskWithoutApprovalsBuildsNoKey(t *testing.T) {
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - {id: ask-writes, match: {tools: [Write]}, verdict: ask, reason: check}
`)}})
	require.NoError(t, err)
	remember := eval.RememberNone
	eng, err := eval.New(set, eval.WithApprover(eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
		return eval.Approval{Answer: eval.Approve, Remember: remember}, nil
	})))
	require.NoError(t, err)
	content := strings.Repeat("x", 1<<20)
	call := eval.Call{Tool: "Write", Args: map[string]any{"file_path": "/srv/app/big.txt", "content": content}}
	allocated := func(s *eval.Session) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			d, err := s.Before(context.Background(), call)
			require.NoError(t, err)
			require.Equal(t, policy.Allow, d.Verdict)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 10
	}
	assert.Less(t, allocated(eng.NewSession("none", nil)), uint64(len(content)), "no key built without approvals")

	// Control: once the session remembers an approval, every ask looks
	// its call up, and the key is built.
	remember = eval.RememberCall
	s := eng.NewSession("some", nil)
	_, err = s.Before(context.Background(), eval.Call{Tool: "Write", Args: map[string]any{"file_path": "/srv/app/small.txt", "content": "x"}})
	require.NoError(t, err)
	remember = eval.RememberNone
	assert.Greater(t, allocated(s), uint64(len(content)), "control: the key is a copy of the content")
}
