package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/store/statedir"
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
	eng, err := eval.New(set, eval.WithApprover(deferAsk))
	require.NoError(t, err)
	turn := func(calls int) eval.SessionState {
		s := eng.NewSession("long-turn", nil)
		s.StartTurn()
		ctx := context.Background()
		for i := range calls {
			call := eval.Call{Tool: "Read", Args: map[string]any{"file_path": fmt.Sprintf("/srv/app/f%d.go", i)}, Cwd: "/srv/app"}
			res := eval.Result{Content: fmt.Sprintf("package f%d", i), IsError: i%3 == 0}
			_, err := s.After(ctx, call, res)
			require.NoError(t, err)
		}
		return s.State()
	}
	st := turn(calls)
	store := &statedir.Dir{Dir: t.TempDir()}
	ctx := context.Background()
	ls, err := store.Lock(ctx, "long-turn")
	require.NoError(t, err)
	defer ls.Close()
	require.NoError(t, saveState(ls, st))
	fi, err := os.Stat(ls.Path())
	require.NoError(t, err)
	t.Logf("state file after %d calls: %d bytes", calls, fi.Size())
	assert.Less(t, fi.Size(), int64(64<<10), "a hook session's state file stays under 64 KiB")
	raw, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Greater(t, len(raw), 64<<10, "control: the session in process keeps more")

	// The keys kept are the most recent: restored, the last call's count
	// is still there.
	back, _, err := loadState(ls, "long-turn")
	require.NoError(t, err)
	for id, c := range back.Counters {
		assert.LessOrEqual(t, len(c.Keys), statedir.MaxStateCounterKeys, id)
	}
	sess, err := eng.RestoreSession(back)
	require.NoError(t, err)
	bounded := map[string]eval.CounterState{}
	for id, c := range st.Counters {
		c.Keys = c.Keys[:min(len(c.Keys), statedir.MaxStateCounterKeys)]
		bounded[id] = c
	}
	assert.Equal(t, bounded, sess.State().Counters, "unchanged but for the keys dropped, the least recently touched")
}
