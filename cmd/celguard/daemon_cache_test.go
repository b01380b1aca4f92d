package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/store/statedir"
)

// TestDaemonFollowsTheStateFile: the daemon keeps what it last wrote to a
// session's state file (statedir's known files, the decoded recent calls),
// and decides on the file as it is at each call: after another writer's
// counts (the hook deciding in process), after the file was rolled back to
// an older signed state, and after it was edited (restored fail-closed).
func TestDaemonFollowsTheStateFile(t *testing.T) {
	f := newDaemonFixture(t, 4, false)
	ok, out := f.hook("claude-code", f.event("claude-code", "mix", "echo 1"))
	require.True(t, ok, out)
	f.waitDaemon()
	inProcess := func(on bool) {
		if on {
			t.Setenv("CELGUARD_DAEMON", "off")
		} else {
			t.Setenv("CELGUARD_DAEMON", "")
		}
	}

	// Another writer between the daemon's calls: the cap of 4 holds
	// exactly across both.
	var allowed []bool
	for i, cmd := range []string{"echo 2", "echo 3", "echo 4", "echo 5", "echo 6"} {
		inProcess(i%2 == 1)
		ok, _ := f.hook("claude-code", f.event("claude-code", "mix", cmd))
		allowed = append(allowed, ok)
	}
	inProcess(false)
	assert.Equal(t, []bool{true, true, true, false, false}, allowed, "calls 2-6, alternately by the daemon and in process")
	assert.EqualValues(t, 3, f.inProc.Load(), "calls 1, 3 and 5 in process, the others by the daemon: %q", f.refusals)

	// Rolled back: the daemon counts from the older file, not from what it
	// wrote last.
	path := filepath.Join(f.state, statedir.FileName("rb"))
	ok, out = f.hook("claude-code", f.event("claude-code", "rb", "echo 1"))
	require.True(t, ok, out)
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, cmd := range []string{"echo 2", "echo 3"} {
		ok, out = f.hook("claude-code", f.event("claude-code", "rb", cmd))
		require.True(t, ok, out)
	}
	require.NoError(t, os.WriteFile(path, old, 0o600))
	allowed = nil
	for _, cmd := range []string{"echo 4", "echo 5", "echo 6", "echo 7"} {
		ok, _ := f.hook("claude-code", f.event("claude-code", "rb", cmd))
		allowed = append(allowed, ok)
	}
	assert.Equal(t, []bool{true, true, true, false}, allowed, "after the rollback to one call, three more")

	// Edited: restored fail-closed, its counters saturated.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(string(data[:len(data)-2])+" }"), 0o600))
	ok, out = f.hook("claude-code", f.event("claude-code", "rb", "echo 8"))
	assert.False(t, ok, out)
	assert.Contains(t, out, "changed outside celguard")
	assert.EqualValues(t, 3, f.inProc.Load(), "the daemon decided every call after the first part: %q", f.refusals)
}
