package hooks

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/internal/gobuildid"
)

// The compiled-set cache names a binary by its Go build ID: a copy of the
// same build elsewhere, touched, keeps the identity (and the cache); a
// binary with another build ID gets another; a binary without one falls
// back to its path, size and modification time.
func TestBinaryIdentity(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	id, err := gobuildid.Read(exe)
	require.NoError(t, err)
	self := BinaryIdentity(exe)
	assert.Equal(t, "go-build-id\x00"+id, self)

	data, err := os.ReadFile(exe)
	require.NoError(t, err)
	dir := t.TempDir()
	cp := filepath.Join(dir, "celguard-copy")
	require.NoError(t, os.WriteFile(cp, data, 0o700))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(cp, later, later))
	assert.Equal(t, self, BinaryIdentity(cp), "a copy of the same build, touched")

	// Another build: the same bytes but for the build ID.
	other := []byte(strings.Repeat("x", len(id)))
	require.True(t, bytes.Contains(data, []byte(id)))
	rebuilt := filepath.Join(dir, "celguard-other")
	require.NoError(t, os.WriteFile(rebuilt, bytes.ReplaceAll(data, []byte(id), other), 0o700))
	assert.Equal(t, "go-build-id\x00"+string(other), BinaryIdentity(rebuilt))

	// No build ID: path, size and modification time.
	script := filepath.Join(dir, "celguard-script")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o700))
	before := BinaryIdentity(script)
	assert.True(t, strings.HasPrefix(before, "file\x00"+script+"\x00"), "%q", before)
	require.NoError(t, os.Chtimes(script, later, later))
	assert.NotEqual(t, before, BinaryIdentity(script), "a binary without a build ID, touched")

	assert.Empty(t, BinaryIdentity(filepath.Join(dir, "missing")))
	assert.Empty(t, BinaryIdentity(dir), "a directory")
}
