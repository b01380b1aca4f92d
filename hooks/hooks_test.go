package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/unprivileged"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// beforeEvents is one before-call event per host.
var beforeEvents = map[string]string{
	"claude-code": `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","mode":"x"},"cwd":"/r"}`,
	"codex":       `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","mode":"x"},"cwd":"/r"}`,
	"gemini":      `{"session_id":"s1","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls","mode":"x"},"cwd":"/r"}`,
	"cursor":      `{"conversation_id":"s1","hook_event_name":"beforeMCPExecution","tool_name":"q","tool_input":"{\"command\":\"ls\",\"mode\":\"x\"}"}`,
}

// allowsSilently reports whether an answer lets a call run with nothing
// said: what must never follow a verdict other than allow.
func allowsSilently(r Response) bool {
	if r.Exit == 2 {
		return false
	}
	out := strings.TrimSpace(string(r.Stdout))
	return out == "" || out == "{}" || out == `{"permission":"allow"}`
}

// TestNoVerdictWeakensToSilentAllow decides every blocking verdict, and a
// rewrite each host cannot apply (one that removes an argument), for every
// host: the answer is never a silent allow.
func TestNoVerdictWeakensToSilentAllow(t *testing.T) {
	for host, in := range beforeEvents {
		h, err := New(host, Options{})
		require.NoError(t, err)
		ev, err := h.Decode([]byte(in))
		require.NoError(t, err)
		for _, d := range []eval.Decision{
			{Verdict: policy.Block, RuleRef: compile.RuleRef{RuleID: "r"}},
			{Verdict: policy.Halt, RuleRef: compile.RuleRef{RuleID: "r"}},
			{Verdict: policy.Ask, RuleRef: compile.RuleRef{RuleID: "r"}},
			{Verdict: policy.Ask, RuleRef: compile.RuleRef{RuleID: "r"}, Args: map[string]any{"command": "ls"}},
			{Verdict: policy.Modify, RuleRef: compile.RuleRef{RuleID: "r"}, Args: map[string]any{"command": "ls"}},
			{Verdict: policy.Modify, RuleRef: compile.RuleRef{RuleID: "r"}},
			{Verdict: policy.Verdict(99), RuleRef: compile.RuleRef{RuleID: "r"}},
		} {
			r := h.Encode(ev, d)
			if d.Verdict == policy.Modify && d.Args != nil && (host == "claude-code" || host == "codex") {
				// Applied: the answer carries the rewrite.
				assert.Contains(t, string(r.Stdout), `"updatedInput":{"command":"ls"}`, "%s %v", host, d)
				continue
			}
			assert.False(t, allowsSilently(r), "%s: %s became %q", host, d.Verdict, r.Stdout)
			if d.Verdict != policy.Ask || host == "claude-code" || (host == "cursor" && d.Args == nil) {
				continue
			}
			assert.Contains(t, string(r.Stdout), "deny", "%s: an ask it cannot express is a deny", host)
		}
	}
}

// TestApproveOption: an explicit allow defers to the host's own permission
// rules unless Approve is set; a default allow never approves.
func TestApproveOption(t *testing.T) {
	explicit := eval.Decision{Verdict: policy.Allow, RuleRef: compile.RuleRef{RuleID: "allow-ls"}, Reason: "fine"}
	byDefault := eval.Decision{Verdict: policy.Allow}
	for _, host := range []string{"claude-code", "gemini"} {
		off, _ := New(host, Options{})
		on, _ := New(host, Options{Approve: true})
		ev, err := off.Decode([]byte(beforeEvents[host]))
		require.NoError(t, err)
		assert.True(t, allowsSilently(off.Encode(ev, explicit)), host)
		assert.True(t, allowsSilently(on.Encode(ev, byDefault)), host)
		assert.Contains(t, string(on.Encode(ev, explicit).Stdout), `"allow"`, host)
	}
	// Codex: allow without updatedInput is rejected, so there is nothing to
	// say even with Approve.
	cx, _ := New("codex", Options{Approve: true})
	ev, _ := cx.Decode([]byte(beforeEvents["codex"]))
	assert.Empty(t, cx.Encode(ev, explicit).Stdout)
}

// TestFailClosed: what each host honours as a block when celguard fails,
// and what lets the call through with --fail-open.
func TestFailClosed(t *testing.T) {
	broken := func() (*eval.Engine, error) { return nil, errors.New("the policies do not compile: p.yaml:3:1: boom") }
	for host, in := range beforeEvents {
		h, _ := New(host, Options{})
		for _, open := range []bool{false, true} {
			r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}, Engine: broken, FailOpen: open}
			got := r.Run(context.Background(), []byte(in))
			assert.Contains(t, got.Stderr, "p.yaml:3:1: boom", host)
			switch {
			case !open && host == "cursor":
				assert.Equal(t, 2, got.Exit)
				assert.Contains(t, string(got.Stdout), `"permission":"deny"`)
			case !open:
				assert.Equal(t, 2, got.Exit, "%s: exit 2 blocks", host)
			case host == "cursor":
				assert.Equal(t, 0, got.Exit)
				assert.Equal(t, `{"permission":"allow"}`+"\n", string(got.Stdout))
			default:
				assert.Equal(t, 1, got.Exit, "%s: a non-blocking error", host)
			}
		}
	}
}

// TestFailClosedOnState: a state file that is not celguard's (not JSON,
// over the cap) is tampered: the call is decided with the state restored
// fail-closed, and the answer says so. An unreadable state, an unusable
// state key and a lock held past the timeout block.
func TestFailClosedOnState(t *testing.T) {
	eng := testEngine(t)
	in := []byte(beforeEvents["claude-code"])
	newRunner := func(dir string) *Runner {
		h, _ := New("claude-code", Options{})
		r := &Runner{Host: h, Store: &statedir.Dir{Dir: dir, MaxBytes: 1 << 10}, Timeout: 200 * time.Millisecond}
		r.Engine = storedEngine(eng.PolicySet(), r, eval.WithApprover(deferAsk))
		return r
	}

	dir := t.TempDir()
	r := newRunner(dir)
	require.NoError(t, os.WriteFile(r.Store.Path("s1"), []byte("{not json"), 0o600))
	got := r.Run(context.Background(), in)
	assert.Equal(t, 0, got.Exit)
	assert.Contains(t, got.Stderr, "was changed outside celguard")
	// The built-in loop detection reads its counters at their ceiling:
	// every call of this turn is refused, and the answer says why.
	assert.Contains(t, string(got.Stdout), `"permissionDecision":"deny"`)
	assert.Contains(t, string(got.Stdout), "was changed outside celguard")
	got = r.Run(context.Background(), in)
	assert.Empty(t, got.Stderr, "the state was written again, signed")

	require.NoError(t, os.WriteFile(r.Store.Path("s1"), []byte(`{"id":"s1","meta":{"x":"`+strings.Repeat("a", 2000)+`"}}`), 0o600))
	got = r.Run(context.Background(), in)
	assert.Equal(t, 0, got.Exit)
	assert.Contains(t, got.Stderr, "larger than 1024 bytes")

	bad := newRunner(t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(bad.Store.Dir, statedir.KeyFile), []byte("short"), 0o600))
	got = bad.Run(context.Background(), in)
	assert.Equal(t, 2, got.Exit, "an unusable key blocks")
	assert.Contains(t, got.Stderr, "does not hold a key")

	require.NoError(t, os.Remove(r.Store.Path("s1")))
	held, err := r.Store.Lock(context.Background(), "s1")
	require.NoError(t, err)
	got = r.Run(context.Background(), in)
	assert.Equal(t, 2, got.Exit)
	assert.Contains(t, got.Stderr, "cannot lock")
	require.NoError(t, held.Close())
	got = r.Run(context.Background(), in)
	assert.Equal(t, 0, got.Exit, got.Stderr)
}

// TestCodexHaltKeepsTurnHalted: Codex cannot stop a turn before a call, so
// a halt is a deny and every later call of the turn is denied too, until
// the next prompt.

// TestFailClosedOnUnreadableState: a state file the hook cannot read
// blocks (run as a user whose permissions bind: runUnprivileged).
func TestFailClosedOnUnreadableState(t *testing.T) {
	unprivileged.Run(t, func(t *testing.T) {
		eng := testEngine(t)
		h, _ := New("claude-code", Options{})
		r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir(), MaxBytes: 1 << 10}, Timeout: 200 * time.Millisecond}
		r.Engine = storedEngine(eng.PolicySet(), r, eval.WithApprover(deferAsk))
		in := []byte(beforeEvents["claude-code"])
		got := r.Run(context.Background(), in)
		require.Equal(t, 0, got.Exit, "%s", got.Stderr)
		require.NoError(t, os.Chmod(r.Store.Path("s1"), 0))
		got = r.Run(context.Background(), in)
		assert.Equal(t, 2, got.Exit)
		assert.Contains(t, got.Stderr, "cannot read the session state")
	})
}
func TestCodexHaltKeepsTurnHalted(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, "codex", Options{}, eng)
	ev := func(name, cmd string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "cx", "hook_event_name": name, "tool_name": "Bash",
			"tool_input": map[string]any{"command": cmd}, "cwd": "/r"})
		return b
	}
	assert.Contains(t, string(r.Run(context.Background(), ev("PreToolUse", "shutdown now")).Stdout), "deny")
	got := r.Run(context.Background(), ev("PreToolUse", "ls"))
	assert.Contains(t, string(got.Stdout), "this turn was halted")
	r.Run(context.Background(), ev("UserPromptSubmit", ""))
	assert.Empty(t, r.Run(context.Background(), ev("PreToolUse", "ls")).Stdout)
}

// TestSessionEndKeepsLimits: a SessionEnd keeps the session's state, so
// a session-scoped counter cap and a grant hold across SessionEnd and a new
// SessionStart with the same id (an agent that pipes a SessionEnd into
// `celguard hook`, or reuses an ended session's id, cannot reset its own
// limits); only the state directory's age cleanup removes it.
func TestSessionEndKeepsLimits(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "cap.yaml")
	require.NoError(t, os.WriteFile(policyFile, []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: cap
counters:
  - name: pushes
    scope: session
    phase: before
    increment_when: 'tool == "Push"'
rules:
  - id: push-cap
    match: {tools: [Push]}
    condition: 'counters.pushes >= 2'
    verdict: block
    reason: too many pushes
    code: push_cap
`), 0o600))
	r := testRunner(t, "claude-code", Options{}, testEngine(t, policyFile))
	ctx := context.Background()
	event := func(name string) []byte {
		return []byte(`{"session_id":"capped","hook_event_name":"` + name + `","cwd":"/r"}`)
	}
	push := []byte(`{"session_id":"capped","hook_event_name":"PreToolUse","cwd":"/r","tool_name":"Push","tool_input":{}}`)
	r.Run(ctx, event("SessionStart"))
	for i := range 2 {
		got := r.Run(ctx, push)
		require.Equal(t, 0, got.Exit, got.Stderr)
		require.NotContains(t, string(got.Stdout), "deny", "push %d is under the cap", i+1)
	}
	require.Contains(t, string(r.Run(ctx, push).Stdout), "push_cap", "the third push is over the cap")
	for round := range 2 {
		got := r.Run(ctx, []byte(`{"session_id":"capped","hook_event_name":"SessionEnd","reason":"other"}`))
		require.Equal(t, 0, got.Exit, got.Stderr)
		assert.Empty(t, got.Stdout)
		assert.FileExists(t, r.Store.Path("capped"), "round %d: SessionEnd keeps the state", round)
		r.Run(ctx, event("SessionStart"))
		r.Run(ctx, event("UserPromptSubmit"))
		assert.Contains(t, string(r.Run(ctx, push).Stdout), "push_cap", "round %d: the cap holds after SessionEnd and a new start", round)
	}

	// The directory stays bounded: the age cleanup removes the ended
	// session's state (and its lock) once it is older than MaxAge.
	old := time.Now().Add(-statedir.DefaultMaxAge - time.Hour)
	require.NoError(t, os.Chtimes(r.Store.Path("capped"), old, old))
	n, err := r.Store.Cleanup()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, r.Store.Path("capped"))
}

// TestResponseRewrite: a rewrite goes back in the output's own shape.
func TestResponseRewrite(t *testing.T) {
	for _, c := range []struct {
		in   string
		text string
		want string
	}{
		{`"plain"`, "plain", `"NEW"`},
		{`{"stdout":"a","stderr":"b","interrupted":false}`, "a\nb", `{"interrupted":false,"stderr":"","stdout":"NEW"}`},
		{`{"llmContent":"x","returnDisplay":"x"}`, "x", `{"llmContent":"NEW","returnDisplay":"NEW"}`},
		{`{"content":[{"type":"text","text":"x"},{"type":"image"}]}`, "x", `{"content":[{"text":"NEW","type":"text"}]}`},
		{`[{"type":"text","text":"x"}]`, "x", `[{"text":"NEW","type":"text"}]`},
		{`{"type":"text","file":{"filePath":"/a","content":"x"}}`, "x", `{"file":{"content":"NEW","filePath":"/a"},"type":"text"}`},
		{`{"filePath":"/a","success":true}`, `{"filePath":"/a","success":true}`, ``},
	} {
		var resp any
		require.NoError(t, json.Unmarshal([]byte(c.in), &resp))
		text, _ := locate(resp)
		assert.Equal(t, c.text, text, c.in)
		got, ok := rewriteResponse(resp, "NEW")
		if c.want == "" {
			assert.False(t, ok, "%s: NEW is not JSON of the output's shape", c.in)
			continue
		}
		require.True(t, ok, c.in)
		b, _ := json.Marshal(got)
		assert.Equal(t, c.want, string(b), c.in)
	}
	var resp any
	require.NoError(t, json.Unmarshal([]byte(`{"filePath":"/secret","success":true}`), &resp))
	b, _ := json.Marshal(withheld(resp, "gone"))
	assert.Equal(t, `{"filePath":"","success":true}`, string(b), "no original text survives")
}

// TestResponseIsError reads the usual error markers.
func TestResponseIsError(t *testing.T) {
	for in, want := range map[string]bool{
		`"text"`:                          false,
		`{"stdout":"x"}`:                  false,
		`{"is_error":true}`:               true,
		`{"isError":true}`:                true,
		`{"success":false}`:               true,
		`{"exit_code":1}`:                 true,
		`{"exit_code":0}`:                 false,
		`{"error":{"message":"x"}}`:       true,
		`{"error":""}`:                    false,
		`{"llmContent":"x","error":null}`: false,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(in), &v))
		assert.Equal(t, want, responseIsError(v), in)
	}
}

// TestCallIdentity: each host's call id (tool_use_id) and agent (Claude
// Code's agent_type and agent_id in a subagent) reach the call; a host that
// sends none leaves them empty; a wrong type fails closed.
func TestCallIdentity(t *testing.T) {
	tests := []struct {
		host, in string
		id       string
		agent    eval.Agent
		err      string
	}{
		{host: "claude-code", in: `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"toolu_1","agent_type":"Explore","agent_id":"a1"}`,
			id: "toolu_1", agent: eval.Agent{Name: "Explore", IDs: map[string]string{"agent_id": "a1"}}},
		{host: "claude-code", in: `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"toolu_1","tool_response":{}}`, id: "toolu_1"},
		{host: "codex", in: `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":"call-1","turn_id":"t"}`, id: "call-1"},
		{host: "gemini", in: `{"session_id":"s","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{}}`},
		{host: "cursor", in: `{"conversation_id":"c","hook_event_name":"preToolUse","tool_name":"Shell","tool_input":{},"tool_use_id":"tu-9"}`, id: "tu-9"},
		{host: "cursor", in: `{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls"}`},
		{host: "claude-code", in: `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":7}`, err: "tool_use_id must be a string"},
		{host: "claude-code", in: `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"agent_id":{}}`, err: "agent_id must be a string"},
	}
	for _, tt := range tests {
		h, err := New(tt.host, Options{})
		require.NoError(t, err)
		ev, err := h.Decode([]byte(tt.in))
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.id, ev.Call.ID, tt.in)
		assert.Equal(t, tt.agent, ev.Call.Agent, tt.in)
	}
}

// TestAfterOfRefusedCall: a PostToolUse whose tool_use_id names a call
// celguard refused before it ran is refused too (call_refused), across hook
// processes (the refusal is in the session state): the tool should not have
// run, so its output is withheld.
func TestAfterOfRefusedCall(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, "claude-code", Options{}, eng)
	ev := func(name, id string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "s", "hook_event_name": name, "tool_name": "Bash",
			"tool_input": map[string]any{"command": "rm -rf /"}, "tool_use_id": id, "tool_response": map[string]any{"stdout": "done"}})
		return b
	}
	assert.Contains(t, string(r.Run(context.Background(), ev("PreToolUse", "toolu_9")).Stdout), "deny")
	got := r.Run(context.Background(), ev("PostToolUse", "toolu_9"))
	assert.Contains(t, string(got.Stdout), `"decision":"block"`)
	assert.Contains(t, string(got.Stdout), "refused (block) before it ran")
	got = r.Run(context.Background(), ev("PostToolUse", "toolu_other"))
	assert.NotContains(t, string(got.Stdout), "refused")
}

// TestTurnEnd: Stop runs the turn_end rules on the counts the earlier hook
// processes saved, and a failure at Stop does not block (a blocking answer
// would keep the agent going): Claude Code's non-blocking exit 1.
func TestTurnEnd(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	r := testRunner(t, "claude-code", Options{}, eng)
	ev := func(name string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "s", "hook_event_name": name, "tool_name": "Bash",
			"tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{"stdout": "a"}})
		return b
	}
	r.Run(context.Background(), ev("UserPromptSubmit"))
	r.Run(context.Background(), ev("PostToolUse"))
	r.Run(context.Background(), ev("PostToolUse"))
	got := r.Run(context.Background(), ev("Stop"))
	assert.Equal(t, 0, got.Exit)
	assert.Contains(t, string(got.Stdout), "the turn ended after 2 tool calls")
	assert.NotContains(t, string(got.Stdout), "decision")

	broken := &Runner{Host: r.Host, Store: r.Store, Engine: func() (*eval.Engine, error) { return nil, errors.New("no policies") }}
	got = broken.Run(context.Background(), ev("Stop"))
	assert.Equal(t, 1, got.Exit, "a failure at Stop must not block: %+v", got)
	assert.Contains(t, got.Stderr, "no policies")
}

// promptEvents is one new-prompt event per host.
var promptEvents = map[string]string{
	"claude-code": `{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi","cwd":"/r"}`,
	"codex":       `{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi","cwd":"/r"}`,
	"gemini":      `{"session_id":"s1","hook_event_name":"BeforeAgent","prompt":"hi","cwd":"/r"}`,
	"cursor":      `{"conversation_id":"s1","hook_event_name":"beforeSubmitPrompt","prompt":"hi"}`,
}

// TestBrokenPolicyLetsPromptThrough: without an engine a new prompt goes
// through with a warning that names the problem and the fix, shown to the
// user (and the model), while each tool call fails closed (TestFailClosed).
func TestBrokenPolicyLetsPromptThrough(t *testing.T) {
	broken := func() (*eval.Engine, error) { return nil, errors.New("the policies do not compile: p.yaml:3:1: boom") }
	for host, in := range promptEvents {
		h, _ := New(host, Options{})
		r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}, Engine: broken}
		got := r.Run(context.Background(), []byte(in))
		assert.Equal(t, 0, got.Exit, "%s: the prompt goes through", host)
		assert.Contains(t, got.Stderr, "p.yaml:3:1: boom", host)
		assert.Contains(t, string(got.Stdout), "every tool call is refused until this is fixed", host)
		assert.Contains(t, string(got.Stdout), "p.yaml:3:1: boom", host)
		assert.Contains(t, string(got.Stdout), "celguard lint", host)
		assert.NotContains(t, string(got.Stdout), `"continue":false`, host)
		if host != "cursor" {
			assert.Contains(t, string(got.Stdout), `"systemMessage"`, host)
			assert.Contains(t, string(got.Stdout), `"additionalContext"`, host)
		}
	}
}
