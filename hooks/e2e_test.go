package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/store/statedir"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// celguardBinary builds cmd/celguard once per test run.
func celguardBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the celguard binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "celguard-hooks-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "celguard")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/celguard/celguard/cmd/celguard").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// hookProc runs `celguard hook HOST` as its own process with one event.
func hookProc(t testing.TB, bin, host, stateDir string, event any) Response {
	t.Helper()
	data, ok := event.([]byte)
	if !ok {
		var err error
		data, err = json.Marshal(event)
		require.NoError(t, err)
	}
	cmd := exec.Command(bin, "hook", host, "--state-dir", stateDir)
	cmd.Env = noDaemon()
	cmd.Stdin = bytes.NewReader(data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Response{Stdout: stdout.Bytes(), Stderr: stderr.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running celguard: %v", err)
		r.Exit = ee.ExitCode()
	}
	return r
}

func claudeEvent(name string, extra map[string]any) map[string]any {
	ev := map[string]any{"session_id": "e2e-session", "transcript_path": "/home/user/.claude/projects/p/t.jsonl",
		"cwd": "/home/user/project", "permission_mode": "default", "hook_event_name": name}
	for k, v := range extra {
		ev[k] = v
	}
	return ev
}

// TestEndToEndLoopDetection runs a whole Claude Code session with the
// built-in policies, one celguard process per event: the same call fails
// again and again (its arguments in a different order each time, which
// must not matter); loop detection warns after the second failure and
// blocks the sixth attempt (five failures); a new prompt starts over.
func TestEndToEndLoopDetection(t *testing.T) {
	bin := celguardBinary(t)
	state := t.TempDir()
	run := func(ev map[string]any) Response { return hookProc(t, bin, "claude-code", state, ev) }
	// The same arguments, in two key orders.
	inputs := []json.RawMessage{
		json.RawMessage(`{"command":"npm test","description":"Run tests","timeout":120000}`),
		json.RawMessage(`{"timeout":120000,"description":"Run tests","command":"npm test"}`),
	}
	pre := func(i int) map[string]any {
		return claudeEvent("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": inputs[i%2], "tool_use_id": fmt.Sprintf("toolu_%d", i)})
	}
	fail := func(i int) map[string]any {
		return claudeEvent("PostToolUseFailure", map[string]any{"tool_name": "Bash", "tool_input": inputs[(i+1)%2],
			"tool_use_id": fmt.Sprintf("toolu_%d", i), "error": "Exit code 1\nnpm ERR! Test failed.", "is_interrupt": false})
	}

	r := run(claudeEvent("SessionStart", map[string]any{"source": "startup"}))
	require.Equal(t, 0, r.Exit, r.Stderr)
	r = run(claudeEvent("UserPromptSubmit", map[string]any{"prompt": "make the tests pass"}))
	require.Equal(t, 0, r.Exit, r.Stderr)

	for i := 1; i <= 5; i++ {
		r = run(pre(i))
		require.Equal(t, 0, r.Exit, r.Stderr)
		assert.Empty(t, r.Stdout, "attempt %d is allowed silently", i)
		r = run(fail(i))
		require.Equal(t, 0, r.Exit, r.Stderr)
		if i < 2 {
			assert.Empty(t, r.Stdout, "one failure is no loop")
			continue
		}
		var out hookOutput
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
		require.NotNil(t, out.HookSpecificOutput, "failure %d warns", i)
		assert.Equal(t, "PostToolUseFailure", out.HookSpecificOutput.HookEventName)
		assert.Contains(t, out.HookSpecificOutput.AdditionalContext, fmt.Sprintf("has failed %d times", i))
		assert.Nil(t, out.Continue, "a warning does not stop Claude")
	}

	r = run(pre(6))
	require.Equal(t, 0, r.Exit, r.Stderr)
	var out hookOutput
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	require.NotNil(t, out.HookSpecificOutput)
	assert.Equal(t, "deny", out.HookSpecificOutput.PermissionDecision, "five failures block the sixth attempt")
	assert.Contains(t, out.HookSpecificOutput.PermissionDecisionReason, "loop-exact-failure-block")

	// Another call is not blocked.
	r = run(claudeEvent("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "npm test -- --verbose"}}))
	assert.Empty(t, r.Stdout)

	r = run(claudeEvent("UserPromptSubmit", map[string]any{"prompt": "try something else"}))
	require.Equal(t, 0, r.Exit, r.Stderr)
	r = run(pre(7))
	require.Equal(t, 0, r.Exit, r.Stderr)
	assert.Empty(t, r.Stdout, "a new turn starts from zero")
	r = run(fail(7))
	assert.Empty(t, r.Stdout, "the first failure of the new turn does not warn")

	r = run(claudeEvent("SessionEnd", map[string]any{"reason": "prompt_input_exit"}))
	require.Equal(t, 0, r.Exit, r.Stderr)
	assert.FileExists(t, (&statedir.Dir{Dir: state}).Path("e2e-session"), "SessionEnd keeps the state (the age cleanup removes it)")
}

// TestEndToEndConcurrentHooks runs many hook processes of one session at
// once, as Codex does: the state file stays valid JSON and every failure
// is counted. Four tools fail four times each (the built-in policy halts
// the turn at eight failures of one tool, after which nothing is counted).
func TestEndToEndConcurrentHooks(t *testing.T) {
	bin := celguardBinary(t)
	state := t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	results := make([]Response, n)
	for i := range n {
		ev := map[string]any{"session_id": "codex-concurrent", "turn_id": "turn-1", "transcript_path": nil, "cwd": "/repo",
			"hook_event_name": "PostToolUse", "model": "gpt-5-codex", "permission_mode": "default", "tool_name": fmt.Sprintf("Tool%d", i%4),
			"tool_input": map[string]any{"command": "cargo build"}, "tool_response": map[string]any{"exit_code": 101, "output": "error[E0425]"},
			"tool_use_id": fmt.Sprintf("call-%d", i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = hookProc(t, bin, "codex", state, ev)
		}()
	}
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, 0, r.Exit, "process %d: %s", i, r.Stderr)
	}
	data, err := os.ReadFile((&statedir.Dir{Dir: state}).Path("codex-concurrent"))
	require.NoError(t, err)
	var file stateFile
	require.NoError(t, json.Unmarshal(data, &file), "the state file parses")
	var st eval.SessionState
	require.NoError(t, json.Unmarshal(file.State, &st), "the state in it parses")
	for _, id := range []string{"loop-detection/exact_failures", "loop-detection/tool_failures"} {
		c, ok := st.Counters[id]
		require.True(t, ok, "counter %s in %s", id, data)
		require.Len(t, c.Keys, 4, id)
		for _, k := range c.Keys {
			assert.Equal(t, int64(n/4), k.Count, "%s %s counts every process", id, k.Key)
		}
	}
	assert.Nil(t, st.Halted)
	entries, err := os.ReadDir(state)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".tmp-") {
			continue
		}
		// A state file's spare (".tmp-" and the state file's name, the
		// previous state that the next save writes over) stays on
		// purpose; any other temporary file is a writer's leftover.
		assert.True(t, names[strings.TrimPrefix(name, ".tmp-")] && strings.HasSuffix(name, ".json"), "no temporary file is left but a state file's spare: %s", name)
	}
}

// TestEndToEndFailClosed: a policy that does not compile blocks (exit 2,
// reason on stderr); --fail-open lets the call through.
func TestEndToEndFailClosed(t *testing.T) {
	bin := celguardBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: bad\nrules:\n  - id: r\n    condition: 'tol == 1'\n    verdict: block\n"), 0o644))
	ev, _ := json.Marshal(claudeEvent("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}}))
	for _, c := range []struct {
		flags []string
		exit  int
	}{{nil, 2}, {[]string{"--fail-open"}, 1}} {
		cmd := exec.Command(bin, append([]string{"hook", "claude-code", "--state-dir", dir, "--policy", bad}, c.flags...)...)
		cmd.Env = noDaemon()
		cmd.Stdin = bytes.NewReader(ev)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		assert.Equal(t, c.exit, code, "%v: %s", c.flags, stderr.String())
		assert.Contains(t, stderr.String(), "bad.yaml:6")
	}
}

// noDaemon is the environment of a hook process these tests run: in
// process, with no decision daemon started behind it (a daemon would
// outlive the test and write into its temporary directory while it is
// removed; cmd/celguard's daemon tests cover the daemon path).
func noDaemon() []string { return append(os.Environ(), "CELGUARD_DAEMON=off") }
