package store_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// TestFileStoreIsTheHookState: the file store writes the state files the
// command hooks read (same names, same MAC), and a file changed outside
// celguard is not trusted: the session starts again fail-closed from it
// (its counters saturate, the decision is marked state_tampered, rule 19),
// and a signed state is written over it.
func TestFileStoreIsTheHookState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "file://"+dir)
	require.NoError(t, err)
	eng := replica(t, capSet(t, "session", 10, ""), st)
	s := eng.NewSession("hook-session", map[string]any{"user": "ana"})
	for range 3 {
		d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		require.Equal(t, policy.Allow, d.Verdict)
	}
	hs := &statedir.Dir{Dir: dir}
	ls, err := hs.Lock(ctx, "hook-session")
	require.NoError(t, err)
	raw, found, err := ls.Load()
	require.NoError(t, err)
	require.True(t, found)
	var got eval.SessionState
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.EqualValues(t, 3, got.Counters["cap/calls"].Keys[0].Count, "the hooks read the counts")
	assert.Equal(t, "ana", got.Meta["user"])
	require.NoError(t, ls.Close())

	data, err := os.ReadFile(hs.Path("hook-session"))
	require.NoError(t, err)
	lowered := strings.Replace(string(data), `"count":3`, `"count":0`, 1)
	require.NotEqual(t, string(data), lowered)
	require.NoError(t, os.WriteFile(hs.Path("hook-session"), []byte(lowered), 0o600))
	d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.True(t, d.StateTampered, "a tampered state file is not trusted")
	assert.Equal(t, policy.Block, d.Verdict, "the lowered count is not trusted: the counter reads at its ceiling")
	assert.Contains(t, d.Reason, "changed outside celguard")

	// The state was written over, signed: the hooks read it again, and
	// it is still saturated, so the cap holds until the counter resets.
	ls, err = hs.Lock(ctx, "hook-session")
	require.NoError(t, err)
	raw, found, err = ls.Load()
	require.NoError(t, err, "the store wrote a signed state over the tampered one")
	require.True(t, found)
	got = eval.SessionState{}
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.NotNil(t, got.Saturated)
	require.NoError(t, ls.Close())
	d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.False(t, d.StateTampered, "the next decision is not made on the tampered state")
	assert.Equal(t, policy.Block, d.Verdict, "the counter stays saturated until it resets")

	// A fresh handle (another hook process) reads the signed state.
	other := replica(t, capSet(t, "session", 10, ""), st).NewSession("hook-session", map[string]any{"user": "ana"})
	d, err = other.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.False(t, d.StateTampered)
	assert.Equal(t, policy.Block, d.Verdict)
}

// TestOpenURLs: the store URLs Open takes and refuses, without a server.
func TestOpenURLs(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"", "memory:", "memory://", "memory:?ttl=1h", "file:///srv/app/state"} {
		st, err := store.Open(ctx, u)
		require.NoError(t, err, u)
		require.NoError(t, st.Close())
	}
	for u, want := range map[string]string{
		"nothing":                     "has no scheme",
		"mongodb://x/y":               `unknown scheme "mongodb"`,
		"memory:?ttl=soon":            "ttl must be a positive duration",
		"file://host/dir":             "file:///ABSOLUTE/DIR",
		"file:":                       "file:///ABSOLUTE/DIR",
		"redis://127.0.0.1:1/0?ttl=0": "ttl must be a positive duration",
		"redis://127.0.0.1:1/0?bogus": "bogus",
		"valkey://:pw@127.0.0.1:1/0":  "valkey://:xxxxx@127.0.0.1:1/0",
	} {
		_, err := store.Open(ctx, u)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), want, u)
		assert.NotContains(t, err.Error(), ":pw@", "the password is never shown")
	}
}

// FuzzOpen: any URL of the schemes that need no server opens or is an
// error, never a panic, and an error never shows a password.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{"memory:", "memory:?ttl=1h", "file:///srv/app", "file://h/x", "mongodb://u:p@h", "memory:?ttl=%zz", "file:///%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if len(u) >= 5 && (u[:5] == "redis" || u[:5] == "valke" || u[:5] == "REDIS" || u[:5] == "VALKE") {
			return // these dial
		}
		st, err := store.Open(context.Background(), u)
		if err == nil {
			st.Close()
		}
	})
}
