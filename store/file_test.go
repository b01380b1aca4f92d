package store_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestFileHold: a session held for one event (a command hook's) is
// committed under the held lock, while another process's store waits for
// it, and a second Hold in the same process waits for the first's
// Release; its pending after-events are handed to the holder, each
// removed once applied, and those that failed their check at Release.
func TestFileHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := store.NewFileDir(&statedir.Dir{Dir: dir})
	require.NoError(t, f.Dir().RecordPending("s1", []byte(`{"call":{"tool":"Bash"}}`)))
	require.NoError(t, f.Dir().RecordPending("s1", []byte(`{"call":{"tool":"Read"}}`)))
	pending, err := filepath.Glob(f.Dir().PendingPrefix("s1") + "*")
	require.NoError(t, err)
	require.Len(t, pending, 2)
	require.NoError(t, os.WriteFile(pending[1], []byte(`{"format":"celguard-pending/1","mac":"00","state":{}}`), 0o600))

	held, err := f.Hold(ctx, "s1")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = f.Hold(short, "s1")
	cancel()
	require.ErrorContains(t, err, "held in this process", "a second Hold waits for the first")
	events, bad, err := held.Pending()
	require.NoError(t, err)
	require.ErrorContains(t, bad, "changed outside celguard")
	require.Len(t, events, 1)
	assert.JSONEq(t, `{"call":{"tool":"Bash"}}`, string(events[0].Event))

	eng := replica(t, capSet(t, "session", 10, ""), f)
	s := eng.NewSession("s1", map[string]any{"user": "ana"})
	d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "the commit uses the held lock")

	other := replica(t, capSet(t, "session", 10, ""), store.NewFile(dir), eval.WithStoreTimeout(50*time.Millisecond))
	d, err = other.NewSession("s1", map[string]any{"user": "ana"}).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, eval.CodeStoreUnavailable, d.Code, "another process waits for the held lock")

	require.NoError(t, held.Applied(events[0]))
	require.NoError(t, held.Release(false))
	pending, err = filepath.Glob(f.Dir().PendingPrefix("s1") + "*")
	require.NoError(t, err)
	assert.Equal(t, []string{pending[0]}, pending, "the applied event removed, the one that failed its check kept: the event was not answered")

	waited := make(chan error, 1)
	held, err = f.Hold(ctx, "s1")
	require.NoError(t, err)
	go func() {
		h, err := f.Hold(ctx, "s1")
		if err == nil {
			err = h.Release(true)
		}
		waited <- err
	}()
	events, _, err = held.Pending()
	require.NoError(t, err)
	require.Empty(t, events)
	require.NoError(t, held.Release(true))
	require.NoError(t, <-waited, "the waiting Hold gets the session once released")
	pending, err = filepath.Glob(f.Dir().PendingPrefix("s1") + "*")
	require.NoError(t, err)
	assert.Empty(t, pending, "answered: the one that failed its check removed")

	d, err = other.NewSession("s1", map[string]any{"user": "ana"}).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "released")
}

// TestFileHoldReadsOnce: while a session is held, its file is read once:
// later commits take the entry as the hold last read or wrote it (no other
// process can change it meanwhile), so a decision costs one read and one
// write, as the command hook's did before it went through the store.
func TestFileHoldReadsOnce(t *testing.T) {
	ctx := context.Background()
	f := store.NewFileDir(&statedir.Dir{Dir: t.TempDir()})
	eng := replica(t, capSet(t, "session", 2, ""), f)
	_, err := eng.NewSession("s1", map[string]any{"user": "ana"}).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)

	held, err := f.Hold(ctx, "s1")
	require.NoError(t, err)
	s, err := eng.ResumeSession(ctx, "s1", nil)
	require.NoError(t, err)
	// Not celguard's from now on: a commit that read the file again would
	// find it tampered.
	require.NoError(t, os.WriteFile(f.Dir().Path("s1"), []byte("{not json"), 0o600))
	d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "decided on the state the hold read: %s", d.Reason)
	assert.False(t, d.StateTampered, "the file was not read again")
	d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Block, d.Verdict, "two calls counted: the cap")
	require.NoError(t, held.Release(true))
}
