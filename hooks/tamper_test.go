package hooks

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// These tests replay the attacks of issue 12 on the session state file: the
// agent runs as the user, so it can rewrite the file between two hook
// processes. Each attack is shown to work on a state celguard trusts (the
// same change, signed with the state key, as only celguard can), and not to
// work on the file as the agent can change it.

// builtinEngine compiles the named built-in policy files.
func builtinEngine(t *testing.T, names ...string) *eval.Engine {
	t.Helper()
	all, err := policies.Sources()
	require.NoError(t, err)
	var srcs []policy.Source
	for _, s := range all {
		for _, n := range names {
			if s.Name == "builtin/"+n {
				srcs = append(srcs, s)
			}
		}
	}
	require.Len(t, srcs, len(names))
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	eng, err := eval.New(set, eval.WithApprover(deferAsk))
	require.NoError(t, err)
	return eng
}

// stateFile is the format of a state file (statedir), as an attacker
// reads and writes it.
type stateFile struct {
	Format string          `json:"format"`
	MAC    string          `json:"mac"`
	State  json.RawMessage `json:"state"`
}

// stateForgery rewrites a session's state file as an agent would.
type stateForgery struct {
	name string
	// forge changes the file's bytes, given the state rewritten as the
	// attacker wants it.
	forge func(t *testing.T, file []byte, want eval.SessionState) []byte
}

var stateForgeries = []stateForgery{
	{"the state rewritten, the MAC kept", func(t *testing.T, file []byte, want eval.SessionState) []byte {
		var sf stateFile
		require.NoError(t, json.Unmarshal(file, &sf))
		var err error
		sf.State, err = json.Marshal(want)
		require.NoError(t, err)
		out, err := json.Marshal(sf)
		require.NoError(t, err)
		return out
	}},
	{"the MAC stripped (a bare state, as before MACs)", func(t *testing.T, _ []byte, want eval.SessionState) []byte {
		out, err := json.Marshal(want)
		require.NoError(t, err)
		return out
	}},
	{"the MAC replaced", func(t *testing.T, _ []byte, want eval.SessionState) []byte {
		raw, err := json.Marshal(want)
		require.NoError(t, err)
		wrong, err := statedir.LoadKey(t.TempDir())
		require.NoError(t, err)
		out, err := json.Marshal(stateFile{Format: "celguard-state/1", MAC: hex.EncodeToString(wrong.Sum("celguard session state v1", []byte(want.ID), raw)), State: raw})
		require.NoError(t, err)
		return out
	}},
}

// rewriteState applies a forgery to session id's file, or, with forge nil,
// signs the rewritten state as celguard would (the control).
func rewriteState(t *testing.T, store *statedir.Dir, id string, change func(*eval.SessionState), f *stateForgery) {
	t.Helper()
	ls, err := store.Lock(context.Background(), id)
	require.NoError(t, err)
	defer ls.Close()
	st, found, err := loadState(ls, id)
	require.NoError(t, err)
	require.True(t, found)
	change(&st)
	if f == nil {
		require.NoError(t, saveState(ls, st))
		return
	}
	file, err := os.ReadFile(ls.Path())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ls.Path(), f.forge(t, file, st), 0o600))
}

func claudeJSON(t *testing.T, name string, extra map[string]any) []byte {
	t.Helper()
	ev := map[string]any{"session_id": "victim", "cwd": "/home/user/project", "hook_event_name": name}
	for k, v := range extra {
		ev[k] = v
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// TestForgedApprovalDoesNotAllow: an approval added to the state file
// turns an ask into an allow only when celguard signed it.
func TestForgedApprovalDoesNotAllow(t *testing.T) {
	eng := builtinEngine(t, "risky-commands.yaml", "tool-classes.yaml")
	push := claudeJSON(t, "PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "git push --force origin main"}})
	run := func(r *Runner) eval.Decision {
		t.Helper()
		resp := r.Run(context.Background(), push)
		require.Equal(t, 0, resp.Exit, resp.Stderr)
		var out hookOutput
		require.NoError(t, json.Unmarshal(resp.Stdout, &out), string(resp.Stdout))
		return eval.Decision{Verdict: verdictOf(out.HookSpecificOutput.PermissionDecision), Reason: out.HookSpecificOutput.PermissionDecisionReason}
	}
	r := testRunner(t, "claude-code", Options{Approve: true}, eng)
	first := run(r)
	require.Equal(t, policy.Ask, first.Verdict, first.Reason)
	ruleID := ruleOf(t, eng, eval.Call{Tool: "Bash", Args: map[string]any{"command": "git push --force origin main"}})
	approve := func(st *eval.SessionState) { st.Approvals = append(st.Approvals, ruleID+"\x00*") }

	rewriteState(t, r.Store, "victim", approve, nil)
	assert.Equal(t, policy.Allow, run(r).Verdict, "control: a signed approval approves")

	for i := range stateForgeries {
		f := &stateForgeries[i]
		t.Run(f.name, func(t *testing.T) {
			r := testRunner(t, "claude-code", Options{Approve: true}, eng)
			run(r)
			rewriteState(t, r.Store, "victim", approve, f)
			d := run(r)
			assert.Equal(t, policy.Ask, d.Verdict, "a forged approval approved")
			assert.Contains(t, d.Reason, "changed outside celguard")
			assert.Equal(t, policy.Ask, run(r).Verdict, "and it is gone for good")
		})
	}
}

// TestEmptiedCountersKeepTheRateLimit: emptying the counters of the state
// file does not reset the rate limit: its rule still fires.
func TestEmptiedCountersKeepTheRateLimit(t *testing.T) {
	eng := builtinEngine(t, "rate-limit.yaml", "tool-classes.yaml")
	fetch := map[string]any{"tool_name": "WebFetch", "tool_input": map[string]any{"url": "https://example.com"}}
	before := claudeJSON(t, "PreToolUse", fetch)
	after := claudeJSON(t, "PostToolUse", fetch)
	limited := func(r *Runner) (bool, string) {
		resp := r.Run(context.Background(), before)
		require.Equal(t, 0, resp.Exit, resp.Stderr)
		return len(resp.Stdout) > 0 && decisionOf(t, resp.Stdout) == "deny", string(resp.Stdout)
	}
	fill := func(r *Runner) {
		for range 30 {
			resp := r.Run(context.Background(), after)
			require.Equal(t, 0, resp.Exit, resp.Stderr)
		}
		ok, out := limited(r)
		require.True(t, ok, "30 web calls reach the limit: %s", out)
	}
	empty := func(st *eval.SessionState) { st.Counters = nil }

	r := testRunner(t, "claude-code", Options{}, eng)
	fill(r)
	rewriteState(t, r.Store, "victim", empty, nil)
	ok, out := limited(r)
	assert.False(t, ok, "control: signed empty counters reset the limit: %s", out)

	for i := range stateForgeries {
		f := &stateForgeries[i]
		t.Run(f.name, func(t *testing.T) {
			r := testRunner(t, "claude-code", Options{}, eng)
			fill(r)
			rewriteState(t, r.Store, "victim", empty, f)
			ok, out := limited(r)
			assert.True(t, ok, "emptied counters reset the rate limit: %s", out)
			assert.Contains(t, out, "rule rate-limit-web")
			assert.Contains(t, out, "changed outside celguard")
			ok, out = limited(r)
			assert.True(t, ok, "the next call still reads the counter at its ceiling: %s", out)
		})
	}
}

// TestDeletedKeyMakesStateTampered: without the key the state it signed is
// tampered, and a new key is made.
func TestDeletedKeyMakesStateTampered(t *testing.T) {
	eng := builtinEngine(t, "rate-limit.yaml", "tool-classes.yaml")
	r := testRunner(t, "claude-code", Options{}, eng)
	ev := claudeJSON(t, "PreToolUse", map[string]any{"tool_name": "Read", "tool_input": map[string]any{"file_path": "x"}})
	require.Empty(t, r.Run(context.Background(), ev).Stderr)
	require.NoError(t, os.Remove(r.Store.Dir+"/"+statedir.KeyFile))
	r.Store = &statedir.Dir{Dir: r.Store.Dir} // a new process
	resp := r.Run(context.Background(), ev)
	assert.Contains(t, resp.Stderr, "its MAC does not check")
	assert.Contains(t, string(resp.Stdout), "state_tampered", "the allow became a warn that says so")
	assert.FileExists(t, r.Store.Dir+"/"+statedir.KeyFile)
}

func verdictOf(permission string) policy.Verdict {
	switch permission {
	case "ask":
		return policy.Ask
	case "deny":
		return policy.Block
	case "allow":
		return policy.Allow
	}
	return policy.Warn
}

func decisionOf(t *testing.T, stdout []byte) string {
	var out hookOutput
	require.NoError(t, json.Unmarshal(stdout, &out))
	if out.HookSpecificOutput == nil {
		return ""
	}
	return out.HookSpecificOutput.PermissionDecision
}

// ruleOf is the rule that decides call.
func ruleOf(t *testing.T, eng *eval.Engine, call eval.Call) string {
	d, err := eng.NewSession("probe", nil).Before(context.Background(), call)
	require.NoError(t, err)
	require.NotEmpty(t, d.RuleID)
	return d.RuleID
}
