package hooks_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
)

func TestASTCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := hooks.LoadASTCache(dir)
	_, ok := c.Get("k")
	assert.False(t, ok, "a missing file is an empty cache")
	require.NoError(t, c.Save(), "nothing to save is not an error")
	_, err := os.Stat(filepath.Join(dir, "ast-cache.json"))
	assert.True(t, os.IsNotExist(err), "an unchanged cache is not written")

	c.Put("k", []byte{1, 2, 3})
	require.NoError(t, c.Save())
	st, err := os.Stat(filepath.Join(dir, "ast-cache.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	v, ok := hooks.LoadASTCache(dir).Get("k")
	require.True(t, ok)
	assert.Equal(t, []byte{1, 2, 3}, v)
}

func TestASTCacheToleratesABadFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ast-cache.json"), []byte("{not json"), 0o600))
	c := hooks.LoadASTCache(dir)
	_, ok := c.Get("k")
	assert.False(t, ok)
	c.Put("k", []byte("v"))
	require.NoError(t, c.Save(), "a bad file is replaced")
	_, ok = hooks.LoadASTCache(dir).Get("k")
	assert.True(t, ok)
}
