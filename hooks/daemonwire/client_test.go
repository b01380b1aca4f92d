package daemonwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A daemon decides with the environment of the hook that started it, so a
// hook whose CLAUDE_PROJECT_DIR (or layer environment) differs must find
// another socket; the same environment finds the same one.
func TestSocketCoversTheDecisionEnvironment(t *testing.T) {
	dir := t.TempDir()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	base := map[string]string{"HOME": "/home/u", "CLAUDE_PROJECT_DIR": "/src/p1"}
	a := HookArgs{StateDir: dir}
	s1, _, err := a.Socket("/bin/celguard", env(base))
	require.NoError(t, err)
	same, _, err := a.Socket("/bin/celguard", env(map[string]string{"HOME": "/home/u", "CLAUDE_PROJECT_DIR": "/src/p1"}))
	require.NoError(t, err)
	assert.Equal(t, s1, same)
	for name, kv := range map[string]map[string]string{
		"another project": {"HOME": "/home/u", "CLAUDE_PROJECT_DIR": "/src/p2"},
		"no project":      {"HOME": "/home/u"},
		"another home":    {"HOME": "/home/v", "CLAUDE_PROJECT_DIR": "/src/p1"},
	} {
		other, _, err := a.Socket("/bin/celguard", env(kv))
		require.NoError(t, err)
		assert.NotEqual(t, s1, other, name)
	}
}
