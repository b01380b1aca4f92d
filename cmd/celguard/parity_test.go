package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
)

// TestGoAPIDecidesAsTheCLI is issue 16, point 3: the same call through
// package celguard (Load, then session.Before, with the approver that
// defers asks as the command line's does) and through `celguard eval`
// gives the same Decision, for the explicit-files selection and for the
// layers. README.md's Go snippet is this path.
func TestGoAPIDecidesAsTheCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	team := "../../testdata/team"
	calls := []eval.Call{
		{Tool: "Bash", Args: map[string]any{"command": "git push origin main"}},
		{Tool: "Bash", Args: map[string]any{"command": "make", "timeout": 3600000.0}},
		{Tool: "Bash", Args: map[string]any{"command": "cd /tmp && sudo rm -fr /"}},
		{Tool: "Read", Args: map[string]any{"file_path": "/home/u/.ssh/id_rsa"}, Cwd: "/home/u/w"},
		{Tool: "Write", Args: map[string]any{"file_path": "/etc/passwd", "content": "x"}, Cwd: "/home/u/w"},
		{Tool: "mcp__db__query", Args: map[string]any{"sql": "select 1"}},
	}
	selections := []struct {
		name string
		args []string
		opts []celguard.Option
	}{
		{"--policy alone", []string{"--policy", team},
			[]celguard.Option{celguard.WithPolicies(team)}},
		{"the layers", []string{"--user-dir", "-", "--project-dir", "-"},
			[]celguard.Option{celguard.WithUserDir("-"), celguard.WithProjectDir("-")}},
		{"the layers and --policy", []string{"--user-dir", "-", "--project-dir", "-", "--policy", team},
			[]celguard.Option{celguard.WithUserDir("-"), celguard.WithProjectDir("-"), celguard.WithPolicies(team)}},
		{"--bundle minimal", []string{"--bundle", "minimal", "--project-dir", "-"},
			[]celguard.Option{celguard.WithBundle("minimal"), celguard.WithProjectDir("-")}},
	}
	ctx := context.Background()
	for _, sel := range selections {
		t.Run(sel.name, func(t *testing.T) {
			guard, err := celguard.Load(ctx, append(sel.opts, celguard.WithApprover(celguard.DeferAsks))...)
			require.NoError(t, err)
			for _, call := range calls {
				d, err := guard.NewSession("cli", nil).Before(ctx, call)
				require.NoError(t, err)
				api, err := json.Marshal(d)
				require.NoError(t, err)

				in, err := json.Marshal(call)
				require.NoError(t, err)
				var stdout, stderr bytes.Buffer
				code := run(append([]string{"eval"}, sel.args...), bytes.NewReader(in), &stdout, &stderr)
				require.Equal(t, exitOK, code, "celguard eval: %s", stderr.String())
				var cli eval.Decision
				require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &cli), stdout.String())
				// The CLI's decision carries its audit record, with the
				// digest of the set the Guard decides with; the rest is
				// the Go API's decision.
				assert.Regexp(t, `^[0-9a-f]{32}$`, cli.DecisionID)
				assert.False(t, cli.Time.IsZero())
				assert.Equal(t, guard.Digest(), cli.PolicyDigest)
				assert.Equal(t, "cli", cli.SessionID)
				cli.DecisionID, cli.Time, cli.PolicyDigest, cli.SessionID = "", time.Time{}, "", ""
				want, err := json.Marshal(cli)
				require.NoError(t, err)
				assert.JSONEq(t, string(want), string(api), "%s %v", call.Tool, call.Args)
			}
		})
	}
}
