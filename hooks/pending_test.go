package hooks

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
	"github.com/celguard/celguard/store/statedir"
)

// TestAfterEventLockFailureKeepsCounts: an after-event that cannot take its
// session's lock comes after the tool ran. It fails visibly (exit 2, the
// reason on stderr), and its counts are not lost: the next event of the
// session applies them. With the built-in loop detection, five identical
// failures block the sixth attempt, even when two of them were recorded
// while another hook held the lock.
func TestAfterEventLockFailureKeepsCounts(t *testing.T) {
	eng := testEngine(t)
	h, _ := New("claude-code", Options{})
	r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}, Timeout: 100 * time.Millisecond}
	r.Engine = storedEngine(eng.PolicySet(), r, eval.WithApprover(deferAsk))
	event := func(name string, extra map[string]any) []byte {
		ev := claudeEvent(name, extra)
		ev["session_id"] = "s1"
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return b
	}
	input := map[string]any{"command": "make"}
	pre := event("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": input})
	fail := event("PostToolUseFailure", map[string]any{"tool_name": "Bash", "tool_input": input, "error": "make: *** error 1"})
	ctx := context.Background()

	require.Equal(t, 0, r.Run(ctx, event("UserPromptSubmit", map[string]any{"prompt": "build"})).Exit)
	for range 3 {
		got := r.Run(ctx, fail)
		require.Equal(t, 0, got.Exit, got.Stderr)
	}
	held, err := r.Store.Lock(ctx, "s1")
	require.NoError(t, err)
	for range 2 {
		got := r.Run(ctx, fail)
		assert.Equal(t, 2, got.Exit, "a lock failure after the call fails visibly")
		assert.Contains(t, got.Stderr, "cannot lock")
		assert.Contains(t, got.Stderr, "its counts were recorded")
	}
	pending, err := filepath.Glob(r.Store.PendingPrefix("s1") + "*")
	require.NoError(t, err)
	assert.Len(t, pending, 2)
	require.NoError(t, held.Close())

	got := r.Run(ctx, pre)
	assert.Equal(t, 0, got.Exit, got.Stderr)
	assert.Contains(t, string(got.Stdout), `"permissionDecision":"deny"`, "five failures, two of them recorded while the lock was held, block the sixth")
	assert.Contains(t, string(got.Stdout), "failed 5 times")
	pending, err = filepath.Glob(r.Store.PendingPrefix("s1") + "*")
	require.NoError(t, err)
	assert.Empty(t, pending, "applied pending events are removed")
}

// TestPendingFileChangedOutsideCelguard: a pending after-event that fails
// its check is not applied, is removed, and the answer says so.
func TestPendingFileChangedOutsideCelguard(t *testing.T) {
	eng := testEngine(t)
	h, _ := New("claude-code", Options{})
	r := &Runner{Host: h, Store: &statedir.Dir{Dir: t.TempDir()}}
	r.Engine = storedEngine(eng.PolicySet(), r, eval.WithApprover(deferAsk))
	require.NoError(t, recordPending(r.Store, "s1", eval.Call{Tool: "Bash"}, eval.Result{IsError: true}))
	pending, err := filepath.Glob(r.Store.PendingPrefix("s1") + "*")
	require.NoError(t, err)
	require.Len(t, pending, 1)
	data, err := os.ReadFile(pending[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pending[0], []byte(strings.Replace(string(data), "Bash", "Read", 1)), 0o600))

	got := r.Run(context.Background(), []byte(beforeEvents["claude-code"]))
	assert.Equal(t, 0, got.Exit)
	assert.Contains(t, got.Stderr, "was changed outside celguard")
	assert.NoFileExists(t, pending[0])
}
