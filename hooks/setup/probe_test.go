package setup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
)

// TestReadAnswer reads each host's answers to a call about to run as the
// host does.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		host    string
		run     HookRun
		verdict string
		reason  string
		err     string
	}{
		{host: hooks.ClaudeCode, run: HookRun{}, verdict: "none"},
		{host: hooks.ClaudeCode, run: HookRun{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`)}, verdict: "deny", reason: "no"},
		{host: hooks.ClaudeCode, run: HookRun{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}`)}, verdict: "ask"},
		{host: hooks.Codex, run: HookRun{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{}}}`)}, verdict: "allow"},
		{host: hooks.Codex, run: HookRun{Stdout: []byte(`{"systemMessage":"careful","hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"careful"}}`)}, verdict: "none"},
		{host: hooks.Codex, run: HookRun{Stderr: "celguard: the policies do not compile\n", Exit: 2}, verdict: "fail-closed", reason: "celguard: the policies do not compile"},
		{host: hooks.Codex, run: HookRun{Stderr: "sh: 1: /gone: not found\n", Exit: 127}, verdict: "fail-open", reason: "exit code 127: sh: 1: /gone: not found"},
		{host: hooks.Codex, run: HookRun{Stdout: []byte("not json")}, err: "not JSON"},
		{host: hooks.Codex, run: HookRun{Exit: -1, Err: errors.New("no answer within 30s")}, err: "no answer"},
		{host: hooks.Gemini, run: HookRun{Stdout: []byte(`{}`)}, verdict: "none"},
		{host: hooks.Gemini, run: HookRun{Stdout: []byte(`{"decision":"deny","reason":"r"}`)}, verdict: "deny", reason: "r"},
		{host: hooks.Gemini, run: HookRun{Stdout: []byte(`{"decision":"deny","reason":"h","continue":false,"stopReason":"h"}`)}, verdict: "deny", reason: "h"},
		{host: hooks.Cursor, run: HookRun{Stdout: []byte(`{"permission":"allow"}`)}, verdict: "allow"},
		{host: hooks.Cursor, run: HookRun{Stdout: []byte(`{"permission":"deny","agent_message":"x"}`), Exit: 2, Stderr: "celguard: failed"}, verdict: "fail-closed", reason: "celguard: failed"},
		{host: hooks.Cursor, run: HookRun{}, err: "Cursor expects JSON"},
		{host: hooks.Cursor, run: HookRun{Stdout: []byte(`{}`)}, err: `no "permission"`},
	} {
		a, err := ReadAnswer(tc.host, tc.run)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%s %+v", tc.host, tc.run)
			continue
		}
		require.NoError(t, err, "%s %+v", tc.host, tc.run)
		assert.Equal(t, tc.verdict, a.Verdict, "%s %s", tc.host, tc.run.Stdout)
		assert.Equal(t, tc.reason, a.Reason, "%s %s", tc.host, tc.run.Stdout)
	}
}

// TestProbeEvents: every host's probe event is one its hook protocol
// decodes as the shell call about to run.
func TestProbeEvents(t *testing.T) {
	for _, host := range hooks.Hosts() {
		data, err := probeEvent(host, "/srv/app", "celguard-doctor-1")
		require.NoError(t, err, host)
		h, err := hooks.New(host, hooks.Options{})
		require.NoError(t, err)
		ev, err := h.Decode(data)
		require.NoError(t, err, host)
		assert.Equal(t, hooks.KindBefore, ev.Kind, host)
		assert.Equal(t, ProbeCommand, ev.Call.Args["command"], host)
		assert.Equal(t, "/srv/app", ev.Call.Cwd, host)
		assert.Equal(t, "celguard-doctor-1", ev.SessionID, host)
	}
}

// TestRunHookCommand runs a command line through the shell as a host does.
func TestRunHookCommand(t *testing.T) {
	dir := t.TempDir()
	r := RunHookCommand(t.Context(), `cat > got.json; echo '{"decision":"deny","reason":"r"}'; echo oops >&2; exit 0`, dir, []byte(`{"x":1}`), probeTimeout)
	require.NoError(t, r.Err)
	assert.Equal(t, 0, r.Exit)
	assert.JSONEq(t, `{"decision":"deny","reason":"r"}`, string(r.Stdout))
	assert.Equal(t, "oops\n", r.Stderr)
	got, err := os.ReadFile(filepath.Join(dir, "got.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"x":1}`, string(got))
	assert.Equal(t, 3, RunHookCommand(t.Context(), "exit 3", dir, nil, probeTimeout).Exit)
}

// TestDoctorProbeAndScopes: doctor reports what the installed command
// answered, in which scope, and fails a hook installed in two scopes.
func TestDoctorProbeAndScopes(t *testing.T) {
	root := t.TempDir()
	project, home, managed := filepath.Join(root, "p"), filepath.Join(root, "h"), filepath.Join(root, "etc", "managed-settings.json")
	install := func(path, command string) {
		t.Helper()
		out, _, err := Install(hooks.ClaudeCode, nil, command)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	var ran []string
	env := DoctorEnv{ProjectDir: project, HomeDir: home,
		LookPath:    func(string) (string, error) { return "", errors.New("none") },
		ManagedPath: func(string) (string, error) { return managed, nil },
		RunHook: func(command, dir string, event []byte) HookRun {
			ran = append(ran, command)
			var ev map[string]any
			require.NoError(t, json.Unmarshal(event, &ev))
			assert.Equal(t, project, dir)
			assert.Equal(t, "PreToolUse", ev["hook_event_name"])
			if strings.Contains(command, "--policy broken") {
				return HookRun{Stderr: "celguard: the policies do not compile: broken.yaml:6:16: ...", Exit: 2}
			}
			return HookRun{}
		},
	}
	install(managed, "/usr/local/bin/celguard hook claude-code --policy broken.yaml")
	checks := Doctor([]string{hooks.ClaudeCode}, true, env)
	assert.Equal(t, []string{"/usr/local/bin/celguard hook claude-code --policy broken.yaml"}, ran)
	var probe *Check
	for i, c := range checks {
		if strings.HasPrefix(c.Message, "the hook refuses every call") {
			probe = &checks[i]
		}
	}
	require.NotNil(t, probe, "%+v", checks)
	assert.Equal(t, LevelFail, probe.Level)
	assert.Equal(t, ScopeManaged, probe.Scope)
	assert.Equal(t, managed, probe.Settings)
	assert.Contains(t, probe.Message, "broken.yaml:6:16")

	install(filepath.Join(home, ".claude", "settings.json"), "/usr/local/bin/celguard hook claude-code")
	checks = Doctor([]string{hooks.ClaudeCode}, true, env)
	var dup []Check
	for _, c := range checks {
		if strings.Contains(c.Message, "installed in 2 scopes") {
			dup = append(dup, c)
		}
	}
	require.Len(t, dup, 1, "%+v", checks)
	assert.Equal(t, LevelFail, dup[0].Level)
	assert.Contains(t, dup[0].Message, "user: "+filepath.Join(home, ".claude", "settings.json"))
	assert.Contains(t, dup[0].Fix, "keep the managed one")
}

// TestManagedPath: the managed settings by host and platform, and a host
// without them says why.
func TestManagedPath(t *testing.T) {
	t.Setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "")
	for _, tc := range []struct{ host, goos, want string }{
		{hooks.ClaudeCode, "linux", "/etc/claude-code/managed-settings.json"},
		{hooks.ClaudeCode, "darwin", "/Library/Application Support/ClaudeCode/managed-settings.json"},
		{hooks.ClaudeCode, "windows", `C:\Program Files\ClaudeCode\managed-settings.json`},
		{hooks.Gemini, "linux", "/etc/gemini-cli/settings.json"},
		{hooks.Gemini, "darwin", "/Library/Application Support/GeminiCli/settings.json"},
	} {
		got, err := ManagedPath(tc.host, tc.goos)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	_, err := ManagedPath(hooks.Codex, "linux")
	assert.ErrorIs(t, err, ErrNoManaged)
	assert.ErrorContains(t, err, "requirements.toml")
	_, err = ManagedPath(hooks.ClaudeCode, "plan9")
	assert.ErrorIs(t, err, ErrNoManaged)
	t.Setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "/srv/gemini.json")
	got, err := ManagedPath(hooks.Gemini, "linux")
	require.NoError(t, err)
	assert.Equal(t, "/srv/gemini.json", got)
}

func TestCodexProjectTrusted(t *testing.T) {
	config := []byte("[projects.\"/srv/a\"]\ntrust_level = \"trusted\"\n[projects.\"/srv/b\"]\ntrust_level = \"untrusted\"\n")
	assert.True(t, CodexProjectTrusted(config, "/srv/a"))
	assert.True(t, CodexProjectTrusted(config, "/srv/a/"))
	assert.False(t, CodexProjectTrusted(config, "/srv/b"))
	assert.False(t, CodexProjectTrusted(config, "/srv/c"))
	assert.False(t, CodexProjectTrusted(nil, "/srv/a"))
}

// TestOpencodePlugin: the plugin install writes carries the command line
// exactly, doctor reads it back, and a file that is not celguard's plugin
// is left alone.
func TestOpencodePlugin(t *testing.T) {
	for _, cmd := range []string{"/usr/local/bin/celguard hook opencode", `'/opt/it'\''s "x"/celguard' hook opencode --policy '/p q'`} {
		out, changed, err := Install(hooks.OpenCode, nil, cmd)
		require.NoError(t, err)
		assert.True(t, changed)
		got, ok := opencodeCommand(out)
		require.True(t, ok, "%s", out)
		assert.Equal(t, cmd, got)
		again, changed, err := Install(hooks.OpenCode, out, cmd)
		require.NoError(t, err)
		assert.False(t, changed)
		assert.Equal(t, out, again)
	}
	_, _, err := Install(hooks.OpenCode, []byte("export const Mine = async () => ({})\n"), "/usr/local/bin/celguard hook opencode")
	assert.ErrorContains(t, err, "not celguard's OpenCode plugin")
	_, ok := opencodeCommand([]byte("// celguard:command\nconst COMMAND = \"/bin/rm -rf x\"\n"))
	assert.False(t, ok, "a command that does not run celguard's hook is not ours")
}
