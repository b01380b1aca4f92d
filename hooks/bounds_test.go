package hooks

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
)

// A turn of 100,000 calls, each with its own arguments and result (some
// failing), leaves a state file under 64 KiB with the hook's bounds: the
// file a hook reads and rewrites at every event. The counters that grow
// with distinct calls are loop-detection's (keyed by the call's arguments);
// the rest of the recommended bundle keeps nothing per call.
func TestStateBoundedPerTurn(t *testing.T) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	require.NoError(t, err)
	set, err := compile.Compile(srcs)
	require.NoError(t, err)
	calls := 100_000
	if testing.Short() {
		calls = 5_000
	}
	size := func(calls int, opts ...eval.Option) int64 {
		eng, err := eval.New(set, append([]eval.Option{eval.WithApprover(deferAsk)}, opts...)...)
		require.NoError(t, err)
		s := eng.NewSession("long-turn", nil)
		s.StartTurn()
		ctx := context.Background()
		for i := range calls {
			call := eval.Call{Tool: "Read", Args: map[string]any{"file_path": fmt.Sprintf("/srv/app/f%d.go", i)}, Cwd: "/srv/app"}
			res := eval.Result{Content: fmt.Sprintf("package f%d", i), IsError: i%3 == 0}
			_, err := s.After(ctx, call, res)
			require.NoError(t, err)
		}
		store := &Store{Dir: t.TempDir()}
		ls, err := store.Lock(ctx, "long-turn")
		require.NoError(t, err)
		defer ls.Close()
		require.NoError(t, ls.Save(s.State()))
		fi, err := os.Stat(ls.Path())
		require.NoError(t, err)
		return fi.Size()
	}
	bounded := size(calls, EngineOptions()...)
	t.Logf("state file after %d calls: %d bytes", calls, bounded)
	assert.Less(t, bounded, int64(64<<10), "a hook session's state file stays under 64 KiB")
	if !testing.Short() {
		assert.Greater(t, size(10_000), int64(64<<10), "control: with the in-process bounds a shorter turn grows past it")
	}
}
