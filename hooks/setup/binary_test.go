package setup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/internal/unprivileged"
)

func TestExecutableIsAbsoluteAndResolved(t *testing.T) {
	exe, err := Executable()
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(exe), exe)
	resolved, err := filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	assert.Equal(t, resolved, exe, "symbolic links are resolved")
}

// TestBinaryWarnings: a name on PATH, a missing file and a file the user
// can replace are each warned about; a binary only root can write is not.
func TestBinaryWarnings(t *testing.T) {
	ws := BinaryWarnings("celguard")
	require.Len(t, ws, 1)
	assert.Contains(t, ws[0], "looked up on PATH")

	ws = BinaryWarnings(filepath.Join(t.TempDir(), "missing"))
	require.Len(t, ws, 1)
	assert.Contains(t, ws[0], "cannot be checked")

	dir := t.TempDir()
	bin := filepath.Join(dir, "celguard")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	ws = BinaryWarnings(bin)
	require.Len(t, ws, 1)
	assert.Contains(t, ws[0], "is writable by you")
	assert.Contains(t, ws[0], "/usr/local/bin")

}

// TestBinaryWarningsUnprivileged needs a user root's permissions bind
// (root can write everywhere): it runs as nobody when the tests run as root.
func TestBinaryWarningsUnprivileged(t *testing.T) {
	unprivileged.Run(t, func(t *testing.T) {
		// A read-only file in a read-only directory still warns when a
		// directory above it is the user's: renaming that replaces the
		// binary.
		dir := filepath.Join(t.TempDir(), "bin")
		require.NoError(t, os.Mkdir(dir, 0o755))
		bin := filepath.Join(dir, "celguard")
		require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
		require.NoError(t, os.Chmod(bin, 0o555))
		require.NoError(t, os.Chmod(dir, 0o555))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		ws := BinaryWarnings(bin)
		require.Len(t, ws, 1)
		assert.Contains(t, ws[0], "the directory "+filepath.Dir(dir))

		// A binary only root can write draws no warning.
		sh, err := filepath.EvalSymlinks("/bin/sh")
		require.NoError(t, err)
		require.False(t, writable(sh), "%s is writable by this user", sh)
		assert.Empty(t, BinaryWarnings(sh))
	})
}
