package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostTable: every host of the table is complete and New makes it
// under its name.
func TestHostTable(t *testing.T) {
	names := Hosts()
	require.Len(t, HostTable(), len(names))
	for i, info := range HostTable() {
		assert.Equal(t, names[i], info.Name)
		assert.NotEmpty(t, info.Title, info.Name)
		assert.NotEmpty(t, info.Command, info.Name)
		assert.NotEmpty(t, info.SettingsDir, info.Name)
		assert.NotEmpty(t, info.SettingsFile, info.Name)
		assert.NotEmpty(t, info.Events, info.Name)
		assert.NotEmpty(t, info.NoHook, info.Name)
		h, err := New(info.Name, Options{})
		require.NoError(t, err)
		assert.Equal(t, info.Name, h.Name())
		got, err := LookupHost(info.Name)
		require.NoError(t, err)
		got.Events[0] = "changed"
		again, _ := LookupHost(info.Name)
		assert.NotEqual(t, "changed", again.Events[0], "LookupHost hands out the table's own Events")
	}
	_, err := LookupHost("vim")
	assert.ErrorIs(t, err, ErrUnknownHost)
	_, err = New("vim", Options{})
	assert.ErrorIs(t, err, ErrUnknownHost)
	assert.EqualError(t, err, `unknown host "vim": want one of claude-code, codex, gemini, cursor, copilot, opencode`)
}

// TestDocsNameTestedVersions: docs/hooks.md names the version of each host
// the table says the hooks were tested with.
func TestDocsNameTestedVersions(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "hooks.md"))
	require.NoError(t, err)
	for _, h := range HostTable() {
		if h.TestedVersion != "" {
			assert.Contains(t, string(doc), h.Title+" "+h.TestedVersion, "docs/hooks.md does not name the tested version of %s", h.Name)
		}
	}
}
