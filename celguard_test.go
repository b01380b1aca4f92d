package celguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// askPush is the policy of issue 16, point 3: a rule on Bash with a
// condition on command.
const askPush = `apiVersion: celguard.dev/v1
kind: Policy
name: team
rules:
  - id: ask-before-push
    match: {tools: [Bash]}
    condition: 'command.startsWith("git push")'
    verdict: ask
    reason: Pushing publishes the work.
`

var deferAsks = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Defer}, nil
})

func writeTeam(t *testing.T, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "team")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "team.yaml"), []byte(body), 0o644))
	return dir
}

// TestIssue16CompilePathsNeverAllowsSilently reproduces issue 16, point 3:
// compile.CompilePaths on a user's files alone decided allow where the
// command line decided ask. It is now an error at the read of command, and
// Load decides ask, as the command line does.
func TestIssue16CompilePathsNeverAllowsSilently(t *testing.T) {
	dir := writeTeam(t, askPush)
	_, err := compile.CompilePaths([]string{dir})
	var ds policy.Diagnostics
	require.True(t, errors.As(err, &ds), "want policy.Diagnostics, got %v", err)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeNoToolClasses, ds[0].Code)
	assert.Equal(t, 7, ds[0].Pos.Line)

	ctx := context.Background()
	guard, err := celguard.Load(ctx, celguard.WithPolicies(dir), celguard.WithApprover(deferAsks))
	require.NoError(t, err)
	d, err := guard.NewSession("s", nil).Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push origin main"}})
	require.NoError(t, err)
	assert.Equal(t, policy.Ask, d.Verdict)
	assert.Equal(t, "ask-before-push", d.RuleID)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, guard.Digest())
}

func TestLoadFailsClosed(t *testing.T) {
	ctx := context.Background()
	t.Run("a path that does not exist", func(t *testing.T) {
		_, err := celguard.Load(ctx, celguard.WithPolicies(filepath.Join(t.TempDir(), "missing")))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("a directory with no policy file", func(t *testing.T) {
		_, err := celguard.Load(ctx, celguard.WithPolicies(t.TempDir()))
		assert.ErrorContains(t, err, "no policy files in")
	})
	t.Run("a policy that does not compile", func(t *testing.T) {
		_, err := celguard.Load(ctx, celguard.WithPolicies(writeTeam(t, askPush+"    priority: high\n")))
		var ds policy.Diagnostics
		require.True(t, errors.As(err, &ds), "want policy.Diagnostics, got %v", err)
	})
	t.Run("a context already ended", func(t *testing.T) {
		ended, cancel := context.WithCancel(ctx)
		cancel()
		_, err := celguard.Load(ended)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// TestDigest is stable for the same sources and changes with any of them.
func TestDigest(t *testing.T) {
	a := []policy.Source{{Name: "a.yaml", Data: []byte("x")}}
	b := []policy.Source{{Name: "a.yaml", Data: []byte("y")}}
	assert.Equal(t, celguard.Digest(a), celguard.Digest(a))
	assert.NotEqual(t, celguard.Digest(a), celguard.Digest(b))
	assert.NotEqual(t, celguard.Digest(a), celguard.Digest([]policy.Source{{Name: "a.yaml", Data: []byte("x"), Untrusted: true}}))
}
