package hooks

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// TestAlwaysRule: the persistent form of an approval is a policy that
// compiles and allows exactly the approved call (quotes, backslashes and
// newlines in the command included), and a test suite that passes.
func TestAlwaysRule(t *testing.T) {
	req := eval.PendingRequest{ID: "7f3c2a1b", Rule: "ask-git", Policy: "team", Tool: "Bash",
		Args: map[string]any{"command": "git commit -m \"it's\\ done\"\necho $HOME", "timeout": 30.0}, Cwd: "/srv/app",
		Summary: "Bash: git commit -m \"it's\\ done\" echo $HOME"}
	name, pol, test, err := AlwaysRule(req, "celguard approve 7f3c2a1b --always", time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, "approved-7f3c2a1b", name)
	assert.Contains(t, string(pol), "# Written by celguard approve 7f3c2a1b --always on 2026-11-23T10:00:00Z")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), pol, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+"_test.yaml"), test, 0o600))
	rep, err := policytest.RunFS(t.Context(), os.DirFS(dir), ".", policytest.Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Passed)
	assert.True(t, rep.OK(), "%+v", rep)

	eng := testEngine(t, filepath.Join(dir, name+".yaml"))
	s := eng.NewSession("s", nil)
	for _, tt := range []struct {
		call eval.Call
		want policy.Verdict
	}{
		{eval.Call{Tool: "Bash", Args: req.Args, Cwd: "/srv/app"}, policy.Allow},
		{eval.Call{Tool: "Bash", Args: map[string]any{"command": "git commit -m x"}, Cwd: "/srv/app"}, policy.Allow}, // no rule: the default
	} {
		d, err := s.Before(t.Context(), tt.call)
		require.NoError(t, err)
		assert.Equal(t, tt.want, d.Verdict)
	}
	d, err := s.Before(t.Context(), eval.Call{Tool: "Bash", Args: req.Args, Cwd: "/srv/app"})
	require.NoError(t, err)
	assert.Equal(t, name, d.RuleID, "the approved call is allowed by the written rule")
	d, err = s.Before(t.Context(), eval.Call{Tool: "Bash", Args: req.Args, Cwd: "/srv/other"})
	require.NoError(t, err)
	assert.Empty(t, d.RuleID, "elsewhere the rule does not match")

	_, _, _, err = AlwaysRule(eval.PendingRequest{ID: "x", Mandatory: true}, "t", time.Now())
	assert.ErrorContains(t, err, "mandatory")
	_, _, _, err = AlwaysRule(eval.PendingRequest{ID: "x", ArgsOmitted: true}, "t", time.Now())
	assert.ErrorContains(t, err, "larger than")
}
