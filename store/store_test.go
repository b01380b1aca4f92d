package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

// backend opens connections to one store: each replica opens its own.
type backend struct {
	name string
	open func(t testing.TB) state.Store
}

// backends are the stores every scenario runs on: memory (replicas in one
// process share it), the hook state files (one directory) and a real Redis
// server started for the test.
func backends(t *testing.T) []backend {
	mem := store.NewMemory(store.DefaultTTL)
	dir := t.TempDir()
	srv := redistest.Start(t)
	return []backend{
		{"memory", func(testing.TB) state.Store { return mem }},
		{"file", func(testing.TB) state.Store { return store.NewFile(dir) }},
		{"redis", func(t testing.TB) state.Store {
			st, err := store.Open(context.Background(), srv.URL())
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
}

// TestCapAcrossReplicas: two engines (two replicas) on one store, 200
// calls decided at once, split between them, against a cap of 50: exactly
// 50 are allowed, for a session counter (one session, a handle on each
// replica) and for a repository counter (20 sessions of one repository).
func TestCapAcrossReplicas(t *testing.T) {
	for _, b := range backends(t) {
		for _, scope := range []string{"session", "repository"} {
			t.Run(b.name+"/"+scope, func(t *testing.T) {
				set := capSet(t, scope, 50, "")
				a, c := replica(t, set, b.open(t)), replica(t, set, b.open(t))
				var sessions []*eval.Session
				meta := map[string]any{"repository": "github.com/acme/" + b.name}
				for i := range 20 {
					id := "cap-" + scope
					if scope == "repository" {
						id = fmt.Sprint("cap-repo-", i/2)
					}
					eng := a
					if i%2 == 1 {
						eng = c
					}
					sessions = append(sessions, eng.NewSession(id, meta))
				}
				tl := burst(t, 200, sessions)
				t.Logf("%s, %s counter: 200 calls over 2 replicas, cap 50: %s", b.name, scope, tl)
				assert.EqualValues(t, 50, tl.allow.Load(), "allowed")
				assert.Equal(t, 150, tl.get("block/"), "blocked by the cap")
			})
		}
	}
}

// TestHaltAcrossReplicas: a halt decided through one replica stops the
// session on the other; a fleet halt recorded through one stops every
// session of its repository on the other, until it is lifted.
func TestHaltAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			set := capSet(t, "session", 1000, "")
			a, c := replica(t, set, b.open(t)), replica(t, set, b.open(t))
			meta := map[string]any{"repository": "r1"}
			sa, sc := a.NewSession("halt", meta), c.NewSession("halt", meta)
			d, err := sc.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			require.Equal(t, policy.Allow, d.Verdict)
			d, err = sa.Before(ctx, eval.Call{Tool: "Stop"})
			require.NoError(t, err)
			require.Equal(t, policy.Halt, d.Verdict)
			d, err = sc.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.Equal(t, policy.Halt, d.Verdict)
			assert.Equal(t, eval.CodeTurnHalted, d.Code, "the halt through replica A holds on replica B")
			_, err = sc.NextTurn(ctx)
			require.NoError(t, err)
			d, err = sa.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.Equal(t, policy.Allow, d.Verdict, "the turn B started lifted the halt on A")

			// A fleet halt of repository r1.
			other := c.NewSession("halt-other", map[string]any{"repository": "r2"})
			require.NoError(t, a.Halt(ctx, policy.ScopeRepository, "r1", "incident 42"))
			for _, s := range []*eval.Session{sc, c.NewSession("halt-new", meta)} {
				d, err = s.Before(ctx, eval.Call{Tool: "Bash"})
				require.NoError(t, err)
				assert.Equal(t, policy.Halt, d.Verdict, s.ID())
				assert.Equal(t, eval.CodeFleetHalted, d.Code, s.ID())
				assert.Contains(t, d.Reason, "incident 42")
			}
			d, err = other.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.Equal(t, policy.Allow, d.Verdict, "another repository runs on")
			require.NoError(t, c.LiftHalt(ctx, policy.ScopeRepository, "r1"))
			d, err = sa.Before(ctx, eval.Call{Tool: "Bash"})
			require.NoError(t, err)
			assert.Equal(t, policy.Allow, d.Verdict, "lifted through B, A runs again")
		})
	}
}

// TestApprovalAcrossReplicas: an approval remembered through one replica
// is honoured by the other, which has no approver at all.
func TestApprovalAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			set := capSet(t, "session", 1000, "")
			asked := 0
			approver := eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
				asked++
				return eval.Approval{Answer: eval.Approve, Remember: eval.RememberRule}, nil
			})
			a := replica(t, set, b.open(t), eval.WithApprover(approver))
			c := replica(t, set, b.open(t))
			sc := c.NewSession("approve", nil)
			d, err := sc.Before(ctx, eval.Call{Tool: "Deploy"})
			require.NoError(t, err)
			assert.Equal(t, eval.CodeApprovalRequired, d.Code, "B has no approver")
			d, err = a.NewSession("approve", nil).Before(ctx, eval.Call{Tool: "Deploy"})
			require.NoError(t, err)
			require.Equal(t, policy.Allow, d.Verdict)
			require.Equal(t, eval.ApprovalApproved, d.Approval.Outcome)
			d, err = sc.Before(ctx, eval.Call{Tool: "Deploy", Args: map[string]any{"env": "prod"}})
			require.NoError(t, err)
			assert.Equal(t, policy.Allow, d.Verdict, "remembered through A, honoured by B")
			require.NotNil(t, d.Approval)
			assert.Equal(t, eval.ApprovalRemembered, d.Approval.Outcome)
			assert.Equal(t, 1, asked)
		})
	}
}

// TestReplicaRecreated: a replica that is replaced in the middle of a run
// (a new engine, a new connection) loses no count.
func TestReplicaRecreated(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			set := capSet(t, "repository", 50, "")
			meta := map[string]any{"repository": "recreated"}
			a, c := replica(t, set, b.open(t)), replica(t, set, b.open(t))
			allowed := 0
			decide := func(e *eval.Engine, id string) {
				d, err := e.NewSession(id, meta).Before(ctx, eval.Call{Tool: "Bash"})
				require.NoError(t, err)
				if d.Allowed() {
					allowed++
				}
			}
			for i := range 30 {
				decide([]*eval.Engine{a, c}[i%2], fmt.Sprint("s", i%3))
			}
			a = replica(t, set, b.open(t)) // replica A restarts
			for i := range 40 {
				decide([]*eval.Engine{a, c}[i%2], fmt.Sprint("s", i%5))
			}
			t.Logf("%s: 70 calls, replica A recreated after 30, cap 50: %d allowed", b.name, allowed)
			assert.Equal(t, 50, allowed)
		})
	}
}

// TestOneCommitPerDecision: a decision of a handle that holds the current
// state is one commit (one round trip), counters or not; a handle that
// another replica's write made stale needs one more.
func TestOneCommitPerDecision(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory(store.DefaultTTL)
	set := capSet(t, "session", 1000, "")
	a, c := replica(t, set, mem), replica(t, set, mem)
	s := a.NewSession("rt", nil)
	_, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	before := mem.Commits()
	for range 10 {
		_, err := s.Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
	}
	assert.Equal(t, 10, mem.Commits()-before, "one commit per decision")
	_, err = c.NewSession("rt", nil).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	before = mem.Commits()
	d, err := s.Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict)
	assert.Equal(t, 2, mem.Commits()-before, "a stale handle: the commit that finds it out, then the one on the current state")
	st := s.State()
	assert.EqualValues(t, 13, st.Counters["cap/calls"].Keys[0].Count)
}

// TestMemoryBound: a memory store past its bound refuses new entries (the
// decision blocks) until entries expire.
func TestMemoryBound(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	mem := store.NewMemory(time.Hour)
	mem.MaxEntries = 2
	mem.Now = func() time.Time { return now }
	eng := replica(t, capSet(t, "session", 10, ""), mem)
	for _, id := range []string{"a", "b"} {
		d, err := eng.NewSession(id, nil).Before(ctx, eval.Call{Tool: "Bash"})
		require.NoError(t, err)
		require.Equal(t, policy.Allow, d.Verdict, id)
	}
	d, err := eng.NewSession("c", nil).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, eval.CodeStoreUnavailable, d.Code)
	assert.Contains(t, d.Reason, "the memory store is full")
	now = now.Add(2 * time.Hour)
	d, err = eng.NewSession("c", nil).Before(ctx, eval.Call{Tool: "Bash"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "the expired entries made room")
}
