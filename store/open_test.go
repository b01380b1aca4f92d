package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
)

// TestOpenSharesMetadata: a session started with its repository on one
// replica (Session.Open) and used without metadata on the other counts
// under that repository on both: 40 calls split across the replicas, cap
// 10, exactly 10 allowed. Without Open, the other replica's handle would
// not know the repository until the first replica had committed a
// decision of the session.
func TestOpenSharesMetadata(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			set := capSet(t, "repository", 10, "")
			a, c := replica(t, set, b.open(t)), replica(t, set, b.open(t))
			started := a.NewSession("open-1", map[string]any{"repository": "acme/open-" + b.name})
			require.NoError(t, started.Open(context.Background()))
			bare := c.NewSession("open-1", nil)
			tl := burst(t, 40, []*eval.Session{bare, started})
			assert.EqualValues(t, 10, tl.allow.Load(), "allowed: %s", tl)
			// Resuming without metadata keeps the session's.
			again := c.NewSession("open-1", nil)
			require.NoError(t, again.Open(context.Background()))
			d, err := again.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "true"}})
			require.NoError(t, err)
			assert.False(t, d.Allowed(), "a resumed handle counts under the repository: %+v", d)
		})
	}
}
