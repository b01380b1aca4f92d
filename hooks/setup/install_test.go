package setup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
)

const existingClaude = `{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    },
    "zz_unknown": {"kept": 1.50}
}
`

// TestInstallMerges: everything already in the file stays, in its order,
// with its indentation; celguard's hooks are added for every event.
func TestInstallMerges(t *testing.T) {
	out, changed, err := Install("claude-code", []byte(existingClaude), "celguard hook claude-code")
	require.NoError(t, err)
	assert.True(t, changed)
	s := string(out)
	for _, keep := range []string{`"model": "opus"`, `"Bash(npm test)"`, `"./guard.sh"`, `"notify-send done"`, `"kept": 1.50`} {
		assert.Contains(t, s, keep)
	}
	assert.Less(t, strings.Index(s, `"model"`), strings.Index(s, `"zz_unknown"`), "key order is kept")
	assert.Contains(t, s, "\n    \"model\"", "indentation is kept")
	var doc struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct{ Type, Command string }
		}
	}
	require.NoError(t, json.Unmarshal(out, &doc))
	for _, ev := range HookEvents("claude-code") {
		n := 0
		for _, g := range doc.Hooks[ev] {
			for _, h := range g.Hooks {
				if h.Command == "celguard hook claude-code" {
					n++
				}
			}
		}
		assert.Equal(t, 1, n, ev)
	}
	assert.Len(t, doc.Hooks["PreToolUse"], 2, "the existing group stays, celguard's is added")

	again, changed, err := Install("claude-code", out, "celguard hook claude-code")
	require.NoError(t, err)
	assert.False(t, changed, "installing twice changes nothing")
	assert.Equal(t, string(out), string(again))

	// A new command line updates celguard's entries in place.
	upd, changed, err := Install("claude-code", out, "/opt/celguard hook claude-code --policy p")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, len(HookEvents("claude-code")), strings.Count(string(upd), "/opt/celguard hook claude-code --policy p"))
	assert.NotContains(t, string(upd), `"celguard hook claude-code"`)
}

// TestInstallRemovesDuplicates: two celguard hooks for the same host become
// one; hooks for another host stay.
func TestInstallRemovesDuplicates(t *testing.T) {
	in := `{"version": 1, "hooks": {"beforeShellExecution": [{"command": "celguard hook cursor"}, {"command": "./other"}, {"command": "celguard hook cursor --fail-open"}, {"command": "celguard hook codex"}]}}`
	out, changed, err := Install("cursor", []byte(in), "celguard hook cursor")
	require.NoError(t, err)
	assert.True(t, changed)
	var doc struct {
		Version int
		Hooks   map[string][]struct{ Command string }
	}
	require.NoError(t, json.Unmarshal(out, &doc))
	assert.Equal(t, 1, doc.Version)
	var cmds []string
	for _, h := range doc.Hooks["beforeShellExecution"] {
		cmds = append(cmds, h.Command)
	}
	assert.Equal(t, []string{"celguard hook cursor", "./other", "celguard hook codex"}, cmds)
	assert.Len(t, doc.Hooks["beforeSubmitPrompt"], 1)
}

// TestInstallNewFiles writes each host's format from nothing.
func TestInstallNewFiles(t *testing.T) {
	for _, host := range hooks.Hosts() {
		if hostConfigs[host].plugin {
			continue // TestOpencodePlugin
		}
		out, changed, err := Install(host, nil, "celguard hook "+host)
		require.NoError(t, err, host)
		assert.True(t, changed)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(out, &doc), host)
		hooks := doc["hooks"].(map[string]any)
		assert.Len(t, hooks, len(HookEvents(host)), host)
		if host == "cursor" {
			assert.Equal(t, float64(1), doc["version"])
		}
		if host == "gemini" {
			assert.Contains(t, string(out), `"timeout": 30000`, "Gemini's timeout is in milliseconds")
		}
	}
}

// TestInstallRejects documents it cannot merge into.
func TestInstallRejects(t *testing.T) {
	for in, want := range map[string]string{
		`{"hooks": `:                    "not valid JSON",
		`[]`:                            "must be a JSON object",
		`{"hooks": []}`:                 `"hooks" must be an object`,
		`{"hooks": {"PreToolUse": {}}}`: `"hooks.PreToolUse": must be an array`,
		`{} {}`:                         "more than one JSON value",
	} {
		_, _, err := Install("claude-code", []byte(in), "celguard hook claude-code")
		assert.ErrorContains(t, err, want, in)
	}
	_, _, err := Install("vim", nil, "x")
	assert.ErrorContains(t, err, `unknown host "vim"`)
}

func TestDiff(t *testing.T) {
	assert.Equal(t, "--- a\n+++ b\n x\n-y\n+z\n", Diff("a", "b", []byte("x\ny\n"), []byte("x\nz\n")))
}

// TestInstallKeepsUntouchedText: what install does not change keeps its
// text exactly, inline arrays and objects on their lines; only what it
// changes is written in its own layout.
func TestInstallKeepsUntouchedText(t *testing.T) {
	in := `{
  "permissions": {"allow": ["Bash(npm test)", "Read"], "deny": []},
  "env": {"A": "1"},
  "hooks": {
    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
  },
  "statusLine": {"type": "command", "command": "x"}
}
`
	out, changed, err := Install("claude-code", []byte(in), "celguard hook claude-code")
	require.NoError(t, err)
	require.True(t, changed)
	s := string(out)
	for _, line := range []string{
		`  "permissions": {"allow": ["Bash(npm test)", "Read"], "deny": []},`,
		`  "env": {"A": "1"},`,
		`    "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],`,
		`  "statusLine": {"type": "command", "command": "x"}`,
		`        "hooks": [{"type": "command", "command": "./guard.sh"}]`,
	} {
		assert.Contains(t, s, line+"\n")
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), s)

	// Updating celguard's command rewrites its entries, and nothing else.
	out2, changed, err := Install("claude-code", out, "/usr/local/bin/celguard hook claude-code")
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, strings.Count(s, "\n"), strings.Count(string(out2), "\n"))
	assert.Equal(t, s, strings.ReplaceAll(string(out2), "/usr/local/bin/celguard hook", "celguard hook"))
}

// TestEveryHostInstalls: install knows how the settings of every host of
// the table register hooks, and of no other.
func TestEveryHostInstalls(t *testing.T) {
	assert.Len(t, hostConfigs, len(hooks.Hosts()), "hostConfigs holds a host that is not in the table")
	for _, h := range hooks.Hosts() {
		_, ok := hostConfigs[h]
		assert.True(t, ok, "no hostConfig for %s", h)
		assert.NotEmpty(t, HookEvents(h), h)
	}
}

// TestInstallReplacesTheLeanClientInPlace: the lean client's command
// (celguard-hook HOST) is celguard's hook too: installing either form
// over the other updates it in place, and another host's stays.
func TestInstallReplacesTheLeanClientInPlace(t *testing.T) {
	in := `{"version": 1, "hooks": {"beforeShellExecution": [{"command": "'/opt/x y/celguard-hook' cursor --fail-open"}, {"command": "./other"}, {"command": "/opt/bin/celguard-hook codex"}]}}`
	for _, command := range []string{"/opt/bin/celguard hook cursor", "/opt/bin/celguard-hook cursor"} {
		out, changed, err := Install("cursor", []byte(in), command)
		require.NoError(t, err)
		assert.True(t, changed)
		var doc struct {
			Hooks map[string][]struct{ Command string }
		}
		require.NoError(t, json.Unmarshal(out, &doc))
		var cmds []string
		for _, h := range doc.Hooks["beforeShellExecution"] {
			cmds = append(cmds, h.Command)
		}
		assert.Equal(t, []string{command, "./other", "/opt/bin/celguard-hook codex"}, cmds)
	}
}

func TestLeanBeside(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "celguard")
	_, ok := LeanBeside(full)
	assert.False(t, ok, "none")
	lean := filepath.Join(dir, LeanName)
	require.NoError(t, os.WriteFile(lean, []byte("#!/bin/sh\n"), 0o644))
	_, ok = LeanBeside(full)
	assert.False(t, ok, "not executable")
	require.NoError(t, os.Chmod(lean, 0o755))
	got, ok := LeanBeside(full)
	assert.True(t, ok)
	assert.Equal(t, lean, got)
	_, ok = LeanBeside("celguard")
	assert.False(t, ok, "a name looked up on PATH")
}
