package serve

import (
	"context"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDaemonAnswerLate: a decision that returns only once its context has
// ended is not signed, on either wire's way of running it (inline for
// JSON-RPC, workers.run for HTTP): it is the deadline's error, and the hook
// decides in process. Inline, it was signed whenever the worker wrote
// before the deadline timer's goroutine.
func TestDaemonAnswerLate(t *testing.T) {
	key, err := statedir.LoadKey(t.TempDir())
	require.NoError(t, err)
	decide := func(ctx context.Context, _ hooks.Host, _ []byte, _, _ string) (hooks.Response, string, string) {
		<-ctx.Done() // gives up at its deadline, with an answer
		return hooks.Response{Stdout: []byte("ok")}, "sha256:d", ""
	}
	s, err := New(Config{
		Engine:  celguard.Config{Sources: func() ([]policy.Source, error) { return []policy.Source{benchdata.Source20()}, nil }},
		Timeout: 10 * time.Millisecond,
		Daemon:  &Daemon{Key: key, Decide: decide},
	})
	require.NoError(t, err)
	for name, run := range map[string]func(context.Context, func()) bool{"inline": inline, "workers": s.workers.run} {
		nonce, err := daemonwire.NewNonce()
		require.NoError(t, err)
		res, derr := s.daemonAnswer(context.Background(), s.hosts["codex"], daemonwire.HookParams{Nonce: nonce, Host: "codex", Event: []byte(`{}`)}, run)
		require.NotNil(t, derr, "%s: a late decision was answered: %+v", name, res)
		assert.Equal(t, CodeDeadlineExceeded, derr.code, name)
		assert.Empty(t, res.MAC, name)
	}
}
