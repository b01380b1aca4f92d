package setup

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodexTrustEntries pins Codex's trust key and hash of celguard's hooks;
// hooks/hostse2e checks them against the real Codex, which runs only the
// hooks they trust.
func TestCodexTrustEntries(t *testing.T) {
	settings, _, err := Install("codex", nil, "/usr/local/bin/celguard hook codex")
	require.NoError(t, err)
	got, err := CodexTrustEntries("/home/u/.codex/hooks.json", settings)
	require.NoError(t, err)
	require.Len(t, got, len(HookEvents("codex")))
	assert.Equal(t, "PreToolUse", got[0].Event)
	assert.Equal(t, "/home/u/.codex/hooks.json:pre_tool_use:0:0", got[0].Key)
	// sha256 of {"async":false,"command":"/usr/local/bin/celguard hook codex","event_name":...}
	assert.Equal(t, "sha256:"+sha256hex(`{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"/usr/local/bin/celguard hook codex","timeout":30,"type":"command"}]}`), got[0].Hash)
	assert.Equal(t, "[hooks.state.\"/home/u/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \""+got[0].Hash+"\"\n", got[0].TOML())

	// Another hook first in the event: celguard's group index follows it,
	// and a matcher enters the hash; a different command changes it.
	other := []byte(`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./x.sh"}]},
		{"matcher": "Bash", "hooks": [{"type": "command", "command": "/c/celguard hook codex", "timeout": 30}]}]}}`)
	got2, err := CodexTrustEntries("/p/.codex/hooks.json", other)
	require.NoError(t, err)
	require.Len(t, got2, 1)
	assert.Equal(t, "/p/.codex/hooks.json:pre_tool_use:1:0", got2[0].Key)
	assert.Equal(t, "sha256:"+sha256hex(`{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"/c/celguard hook codex","timeout":30,"type":"command"}],"matcher":"Bash"}`), got2[0].Hash)

	_, err = CodexTrustEntries("/p/hooks.json", []byte(`[`))
	assert.Error(t, err)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
