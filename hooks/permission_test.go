package hooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const permissionPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - id: ask-npm
    match: {tools: [Bash]}
    condition: 'string(args.command).startsWith("npm ")'
    verdict: ask
    reason: npm needs the user's approval
`

// TestClaudePermissionRequest drives Claude Code's events for an asked
// call: PreToolUse (ask), PermissionRequest (the dialog, offering "don't ask
// again" for Bash(npm install:*) in the local settings), the user's choice
// (the rule written to .claude/settings.local.json, or not), PostToolUse.
// "Don't ask again" is recorded as a session approval of the rule for Bash:
// the next npm call is allowed. Approved once, nothing is remembered.
func TestClaudePermissionRequest(t *testing.T) {
	for _, always := range []bool{true, false} {
		t.Run(fmt.Sprint("always=", always), func(t *testing.T) {
			project := t.TempDir()
			t.Setenv("CLAUDE_PROJECT_DIR", project)
			set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(permissionPolicy)}})
			require.NoError(t, err)
			r := testRunner(t, "claude-code", Options{}, nil)
			r.Engine = storedEngine(set, r, eval.WithApprover(deferAsk), eval.WithApprovalRequests())
			event := func(name, cmd, extra string) Response {
				t.Helper()
				in := fmt.Sprintf(`{"session_id":"c1","transcript_path":"/t.jsonl","cwd":%q,"permission_mode":"default","hook_event_name":%q,"tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":"toolu_1"%s}`,
					project, name, cmd, extra)
				resp := r.Run(context.Background(), []byte(in))
				require.Equal(t, 0, resp.Exit, resp.Stderr)
				return resp
			}
			resp := event("PreToolUse", "npm install", "")
			assert.Contains(t, string(resp.Stdout), `"permissionDecision":"ask"`)

			suggestions := `,"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm install:*"}],"behavior":"allow","destination":"localSettings"}]`
			resp = event("PermissionRequest", "npm install", suggestions)
			assert.Empty(t, resp.Stdout, "the user decides: celguard answers nothing")
			reqs, _, _, err := Approvals(context.Background(), r.Store)
			require.NoError(t, err)
			require.Len(t, reqs, 1)
			assert.Contains(t, string(reqs[0].Host), `"rule":"Bash(npm install:*)","destination":"localSettings"`)

			if always {
				// What Claude Code writes when the user picks "Yes, and don't ask again".
				require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"),
					[]byte(`{"permissions":{"allow":["Bash(npm install:*)"]}}`), 0o644))
			}
			event("PostToolUse", "npm install", `,"tool_response":{"stdout":"added 1 package","stderr":"","interrupted":false}`)

			reqs, grants, _, err := Approvals(context.Background(), r.Store)
			require.NoError(t, err)
			assert.Empty(t, reqs, "the request is answered")
			resp = event("PreToolUse", "npm test", "")
			if !always {
				assert.Empty(t, grants, "approved once: nothing remembered")
				assert.Contains(t, string(resp.Stdout), `"permissionDecision":"ask"`)
				return
			}
			require.Len(t, grants, 1)
			g := grants[0]
			assert.Equal(t, eval.GrantSession, g.Scope)
			assert.Equal(t, eval.SubjectRule, g.Subject)
			assert.Equal(t, "ask-npm", g.Rule)
			assert.Equal(t, "Bash", g.Tool)
			assert.Equal(t, "claude-code permission dialog (don't ask again: Bash(npm install:*))", g.By)
			assert.Empty(t, resp.Stdout, "the rule's asks are approved for the session: Claude Code's own rules apply")
		})
	}
}

// TestPermissionRequestPlantedRule: a rule already in the settings file
// before the dialog (planted by whoever wrote the file) is not the user's
// choice: the approval counts as once.
func TestPermissionRequestPlantedRule(t *testing.T) {
	project := t.TempDir()
	t.Setenv("CLAUDE_PROJECT_DIR", project)
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".claude"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(`{"permissions":{"allow":["Bash(npm install:*)"]}}`), 0o644))
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(permissionPolicy)}})
	require.NoError(t, err)
	r := testRunner(t, "claude-code", Options{}, nil)
	r.Engine = storedEngine(set, r, eval.WithApprover(deferAsk), eval.WithApprovalRequests())
	for _, ev := range []string{
		`"hook_event_name":"PreToolUse"`,
		`"hook_event_name":"PermissionRequest","permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm install:*"}],"behavior":"allow","destination":"localSettings"}]`,
		`"hook_event_name":"PostToolUse","tool_response":{"stdout":""}`,
	} {
		resp := r.Run(context.Background(), []byte(fmt.Sprintf(`{"session_id":"c2","cwd":%q,"tool_name":"Bash","tool_input":{"command":"npm install"},%s}`, project, ev)))
		require.Equal(t, 0, resp.Exit, resp.Stderr)
	}
	_, grants, _, err := Approvals(context.Background(), r.Store)
	require.NoError(t, err)
	assert.Empty(t, grants)
}
