package daemonwire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
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

// TestIDUnchanged: a daemon's id is the digest of its parts as
// "%d:%s\x00" each, as it always was: a hook and a daemon of two builds
// find the same socket.
func TestIDUnchanged(t *testing.T) {
	for _, parts := range [][]string{nil, {""}, {"/bin/celguard", "/home/u", "", "--state-dir", "/s"}, {strings.Repeat("é", 300), "a:b\x00c"}} {
		h := sha256.New()
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s\x00", len(p), p)
		}
		assert.Equal(t, hex.EncodeToString(h.Sum(nil))[:16], ID(parts...), "%q", parts)
	}
}
