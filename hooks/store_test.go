package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// The command hook keeps its sessions through the engine's state store
// (store.File on the state directory), as serve does: these tests pin what
// that gives the hook beyond the single-session state it had.

// hookSet compiles one policy.
func hookSet(t *testing.T, src string) *compile.PolicySet {
	t.Helper()
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(src)}})
	require.NoError(t, err)
	return set
}

// hookProcess is a Runner of its own engine and store on the state
// directory dir: another hook process.
func hookProcess(t *testing.T, host string, set *compile.PolicySet, dir string, opts ...eval.Option) *Runner {
	t.Helper()
	h, err := New(host, Options{})
	require.NoError(t, err)
	r := &Runner{Host: h, Store: &statedir.Dir{Dir: dir}}
	r.Engine = storedEngine(set, r, append([]eval.Option{eval.WithApprover(deferAsk)}, opts...)...)
	return r
}

// TestHookSharedCountersAcrossSessions: a counter scoped to an agent, a
// repository or an organisation counts the calls of every hook session of
// the state directory (the hooks' metadata names none of them, so every
// session shares the empty id's entry, stricter, never looser), each hook
// process with an engine of its own: two sessions, one cap. A session
// counter still counts each session apart.
func TestHookSharedCountersAcrossSessions(t *testing.T) {
	ctx := context.Background()
	pre := func(session string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"},"cwd":"/r"}`, session))
	}
	for _, scope := range []string{"agent", "repository", "org", "session"} {
		t.Run(scope, func(t *testing.T) {
			set := hookSet(t, `apiVersion: celguard.dev/v1
kind: Policy
name: deploys
counters:
  - name: deploys
    phase: before
    scope: `+scope+`
    increment_when: 'true'
rules:
  - id: deploy-cap
    match: {tools: [Bash]}
    condition: 'counters.deploys >= 3'
    verdict: block
    reason: three deploys already
`)
			dir := t.TempDir()
			var got []string
			for _, session := range []string{"a", "a", "b", "b", "a"} {
				// A new process for every event, as the host runs them.
				resp := hookProcess(t, "claude-code", set, dir).Run(ctx, pre(session))
				require.Equal(t, 0, resp.Exit, resp.Stderr)
				got = append(got, session+":"+permissionOf(t, resp.Stdout))
			}
			if scope == "session" {
				assert.Equal(t, []string{"a:", "a:", "b:", "b:", "a:"}, got, "each session has a cap of its own")
				return
			}
			assert.Equal(t, []string{"a:", "a:", "b:", "b:deny", "a:deny"}, got, "one cap over both sessions")
		})
	}
}

// TestHookMetadataMerged: each event's metadata goes over the session's
// stored metadata, the latest winning: a key an event does not carry is
// kept from an earlier one.
func TestHookMetadataMerged(t *testing.T) {
	ctx := context.Background()
	set := hookSet(t, `apiVersion: celguard.dev/v1
kind: Policy
name: meta
rules:
  - id: opus-in-default-mode
    match: {tools: [Bash]}
    condition: 'session.permission_mode == "default" && "model" in session && session.model == "opus"'
    verdict: block
    reason: seen both
`)
	r := hookProcess(t, "claude-code", set, t.TempDir())
	start := `{"session_id":"m","hook_event_name":"SessionStart","source":"startup","model":"opus","permission_mode":"plan","cwd":"/r"}`
	pre := `{"session_id":"m","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"permission_mode":"%s","cwd":"/r"}`
	resp := r.Run(ctx, []byte(start))
	require.Equal(t, 0, resp.Exit, resp.Stderr)
	resp = r.Run(ctx, []byte(fmt.Sprintf(pre, "plan")))
	require.Equal(t, 0, resp.Exit, resp.Stderr)
	assert.Empty(t, permissionOf(t, resp.Stdout), "the event's plan mode wins")
	resp = r.Run(ctx, []byte(fmt.Sprintf(pre, "default")))
	require.Equal(t, 0, resp.Exit, resp.Stderr)
	assert.Equal(t, "deny", permissionOf(t, resp.Stdout), "the model kept from SessionStart, the mode from this event: %s", resp.Stdout)

	ls, err := r.Store.Lock(ctx, "m")
	require.NoError(t, err)
	defer ls.Close()
	st, found, err := loadState(ls, "m")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, map[string]any{"host": "claude-code", "model": "opus", "permission_mode": "default"}, st.Meta)
}

// TestHookTamperedStateWithPending: a state file changed outside celguard
// is handled as before the hook went through the store, with pending
// after-events to apply on top: the halt it held is kept without its text,
// the pending events are applied on the state restored fail-closed and
// removed, the event's own decision is marked (every decision of a hook's
// handle is, as RestoreTampered's were), stderr says why, and the state is
// written over, signed, so that the next event is not marked.
func TestHookTamperedStateWithPending(t *testing.T) {
	ctx := context.Background()
	set := hookSet(t, `apiVersion: celguard.dev/v1
kind: Policy
name: stop
rules:
  - id: stop-shutdown
    match: {tools: [Bash]}
    condition: 'args.command == "shutdown"'
    verdict: halt
    reason: never shut down
`)
	r := hookProcess(t, "codex", set, t.TempDir())
	ev := func(name, cmd string) []byte {
		return []byte(fmt.Sprintf(`{"session_id":"t","hook_event_name":%q,"tool_name":"Bash","tool_input":{"command":%q},"cwd":"/r"}`, name, cmd))
	}
	resp := r.Run(ctx, ev("PreToolUse", "shutdown"))
	require.Contains(t, string(resp.Stdout), "deny")
	require.NoError(t, recordPending(r.Store, "t", eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}}, eval.Result{Content: "x"}))

	// The agent rewrites the state: the MAC stripped, the halt's reason its own.
	path := r.Store.Path("t")
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	var sf stateFile
	require.NoError(t, json.Unmarshal(file, &sf))
	var st map[string]any
	require.NoError(t, json.Unmarshal(sf.State, &st))
	st["halted"].(map[string]any)["reason"] = "ATTACKER TEXT"
	forged, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, forged, 0o600))

	resp = r.Run(ctx, ev("PreToolUse", "ls"))
	require.Equal(t, 0, resp.Exit, resp.Stderr)
	assert.Contains(t, resp.Stderr, "was changed outside celguard")
	assert.Contains(t, string(resp.Stdout), "deny", "the halt is kept")
	assert.Contains(t, string(resp.Stdout), "changed outside celguard", "the event's decision is marked, after the pending event was applied")
	assert.NotContains(t, string(resp.Stdout), "ATTACKER")
	pending, err := filepath.Glob(r.Store.PendingPrefix("t") + "*")
	require.NoError(t, err)
	assert.Empty(t, pending, "the pending event was applied and removed")

	ls, err := r.Store.Lock(ctx, "t")
	require.NoError(t, err)
	got, found, err := loadState(ls, "t")
	require.NoError(t, ls.Close())
	require.NoError(t, err, "a signed state was written over the forged one")
	require.True(t, found)
	assert.NotNil(t, got.Saturated)
	require.NotNil(t, got.Halted)
	assert.NotContains(t, got.Halted.Reason, "ATTACKER")

	resp = r.Run(ctx, ev("PreToolUse", "ls"))
	assert.Empty(t, resp.Stderr, "the next event reads the signed state")
	assert.Contains(t, string(resp.Stdout), "deny", "still halted until the next prompt")
}

// TestGeminiStreamKeptInStateFile: the record of an answer being streamed
// is kept in the session's signed state file under gemini_stream,
// committed with the session's state, and gone once the answer ends.
func TestGeminiStreamKeptInStateFile(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, Gemini, Options{}, eng)
	raw := func() map[string]json.RawMessage {
		t.Helper()
		ls, err := r.Store.Lock(context.Background(), "g")
		require.NoError(t, err)
		defer ls.Close()
		b, found, err := ls.Load()
		require.NoError(t, err)
		require.True(t, found)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	text, _ := shown(t, "", r.Run(context.Background(), afterModel(t, "g", "The key is AKIAIOSF", false)))
	assert.Empty(t, text, "held back")
	var rec streamRecord
	require.NoError(t, json.Unmarshal(raw()["gemini_stream"], &rec))
	assert.Equal(t, streamRecord{Text: "The key is AKIAIOSF"}, rec)
	text, _ = shown(t, "", r.Run(context.Background(), afterModel(t, "g", "ODNN7EXAMPLE.", true)))
	assert.Equal(t, "The key is [REDACTED:aws_access_key].", text)
	assert.NotContains(t, raw(), "gemini_stream", "the answer ended: the record is forgotten")
}

// permissionOf is a Claude Code answer's permission decision, "" for an
// empty answer (the call runs, nothing said).
func permissionOf(t *testing.T, stdout []byte) string {
	t.Helper()
	if len(stdout) == 0 {
		return ""
	}
	return decisionOf(t, stdout)
}
