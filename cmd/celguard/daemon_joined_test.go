package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks/daemonwire"
)

// TestJoinedManifestsIsJoin: the daemon's memory of joined manifests
// answers what daemonwire.Join(set, call).Encode() answers now, whatever
// changed since it was filled: the call's entries (a directory made), its
// roots, the set (another pointer).
func TestJoinedManifestsIsJoin(t *testing.T) {
	dir := t.TempDir()
	snap := func(roots ...string) *daemonwire.Manifest {
		t.Helper()
		var rs []daemonwire.Root
		for _, r := range roots {
			rs = append(rs, daemonwire.Root{Path: r})
		}
		m, err := daemonwire.Snapshot(rs)
		require.NoError(t, err)
		return m
	}
	work, gitDir := filepath.Join(dir, "work"), filepath.Join(dir, "work", ".git")
	require.NoError(t, os.MkdirAll(work, 0o755))
	set1, set2 := snap(filepath.Join(dir, "a")), snap(filepath.Join(dir, "b"))
	j := &joinedManifests{}
	check := func(set, call *daemonwire.Manifest) {
		t.Helper()
		assert.Equal(t, daemonwire.Join(set, call).Encode(), j.encode(set, call))
	}
	call := snap(work, gitDir)
	check(set1, call)
	check(set1, call)
	check(set1, snap(work, gitDir))
	require.NoError(t, os.Mkdir(gitDir, 0o755))
	changed := snap(work, gitDir)
	assert.NotEqual(t, call.Sum(), changed.Sum())
	check(set1, changed)
	check(set1, snap(work))
	check(set2, changed)
	check(set1, changed)
	check(nil, changed)
	check(set1, nil)
	for range maxJoined + 2 {
		check(snap(filepath.Join(dir, "c")), changed)
	}
	assert.LessOrEqual(t, len(j.last), maxJoined)
}
