package setup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/unprivileged"
	"github.com/celguard/celguard/stdlib/shell"
)

func TestCommandBinary(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/celguard hook codex":          "/usr/local/bin/celguard",
		"'/opt/my dir/celguard' hook gemini":          "/opt/my dir/celguard",
		`'/opt/it'\''s/celguard' hook claude-code`:    "/opt/it's/celguard",
		`"/opt/q d/celguard" hook cursor --fail-open`: "/opt/q d/celguard",
		`/opt/a\ b/celguard hook cursor`:              "/opt/a b/celguard",
		"  celguard":                                  "celguard",
	} {
		assert.Equal(t, want, commandBinary(in), in)
	}
	// What install writes, doctor reads back.
	for _, p := range []string{"/srv/app/bin/celguard", "/srv/it's here/celguard", "/srv/$x/celguard"} {
		assert.Equal(t, p, commandBinary(shell.Quote(p)+" hook codex"))
	}
}

func TestParseCodexConfig(t *testing.T) {
	states, projects := parseCodexConfig(`model = "x"
[hooks.state."/h/.codex/hooks.json:pre_tool_use:0:0"]
trusted_hash = "sha256:aa"  # trusted
[hooks.state.'/h/.codex/hooks.json:stop:0:0']
trusted_hash = 'sha256:bb'
enabled = false
[projects."/srv/app"]
trust_level = "trusted"
[[other]]
trusted_hash = "sha256:zz"
`)
	assert.Equal(t, map[string]codexHookState{
		"/h/.codex/hooks.json:pre_tool_use:0:0": {hash: "sha256:aa"},
		"/h/.codex/hooks.json:stop:0:0":         {hash: "sha256:bb", disabled: true},
	}, states)
	assert.Equal(t, map[string]string{"/srv/app": "trusted"}, projects)
}

func TestCompareVersions(t *testing.T) {
	assert.Equal(t, -1, compareVersions("0.99.0", "0.169.0"))
	assert.Equal(t, 0, compareVersions("codex-cli 0.169.0", "0.169.0"))
	assert.Equal(t, 1, compareVersions("2.1.330 (Claude Code)", "2.1.99"))
}

// TestDoctorVersion: the host's version against the one tested.
func TestDoctorVersion(t *testing.T) {
	env := DoctorEnv{
		LookPath: func(string) (string, error) { return "/x/gemini", nil },
		Version:  func(string) (string, error) { return "0.60.9\n", nil },
	}
	c := versionCheck("gemini", env)
	assert.Equal(t, LevelWarn, c.Level)
	assert.Contains(t, c.Message, "older than "+hostTested(hooks.Gemini))
	env.Version = func(string) (string, error) { return "0.61.0\n", nil }
	assert.Equal(t, LevelOK, versionCheck("gemini", env).Level)
}

// TestDoctorBinaryOutOfReach: a binary only an administrator can change
// passes; one the user owns fails even when its mode forbids writing (the
// owner can change the mode).
func TestDoctorBinaryOutOfReach(t *testing.T) {
	unprivileged.Run(t, func(t *testing.T) {
		sh, err := filepath.EvalSymlinks("/bin/sh")
		require.NoError(t, err)
		ok := binaryChecks("codex", "/h/hooks.json", shell.Quote(sh)+" hook codex", "reinstall")
		require.Len(t, ok, 1)
		assert.Equal(t, LevelOK, ok[0].Level, ok[0].Message)

		dir := t.TempDir()
		bin := filepath.Join(dir, "celguard")
		require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o555))
		for _, d := range []string{dir, filepath.Dir(dir)} {
			require.NoError(t, os.Chmod(d, 0o555))
			t.Cleanup(func() { _ = os.Chmod(d, 0o755) })
		}
		mine := binaryChecks("codex", "/h/hooks.json", bin+" hook codex", "reinstall")
		require.Len(t, mine, 1)
		assert.Equal(t, LevelFail, mine[0].Level)
		assert.Contains(t, mine[0].Message, "is yours")

		gone := binaryChecks("claude-code", "/h/s.json", filepath.Join(dir, "nope", "celguard")+" hook claude-code", "reinstall")
		assert.Contains(t, gone[0].Message, "Claude Code then runs every call unguarded")
	})
}

func hostTested(name string) string {
	info, _ := hooks.LookupHost(name)
	return info.TestedVersion
}
