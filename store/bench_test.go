package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

// BenchmarkDecision is one before-decision that reads and counts a
// repository counter: on the engine's own state (no store), on a memory
// store, and on a real Redis on loopback (one round trip each). The
// parallel variants decide on 64 sessions of 8 repositories at once.
//
//	go test ./store -run '^$' -bench Decision -benchtime 2s
func BenchmarkDecision(b *testing.B) {
	srv := redistest.Start(b)
	set := capSet(b, "repository", 1<<40, "")
	stores := []struct {
		name string
		open func() state.Store
	}{
		{"none", nil},
		{"memory", func() state.Store { return store.NewMemory(store.DefaultTTL) }},
		{"redis", func() state.Store {
			st, err := store.Open(context.Background(), srv.URL())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
	call := eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}}
	for _, sc := range stores {
		engine := func() *eval.Engine {
			var opts []eval.Option
			if sc.open != nil {
				opts = append(opts, eval.WithStore(sc.open()))
			}
			eng, err := eval.New(set, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return eng
		}
		b.Run(sc.name+"/serial", func(b *testing.B) {
			s := engine().NewSession("bench-"+sc.name, map[string]any{"repository": "bench"})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if d, err := s.Before(ctx, call); err != nil || !d.Allowed() {
					b.Fatalf("%v %+v", err, d)
				}
			}
		})
		b.Run(sc.name+"/parallel", func(b *testing.B) {
			eng := engine()
			var sessions []*eval.Session
			for i := range 64 {
				sessions = append(sessions, eng.NewSession(fmt.Sprint("par-", sc.name, i), map[string]any{"repository": fmt.Sprint("repo-", i%8)}))
			}
			var next atomic.Int64
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				s := sessions[next.Add(1)%int64(len(sessions))]
				for pb.Next() {
					if d, err := s.Before(ctx, call); err != nil || !d.Allowed() {
						b.Errorf("%v %+v", err, d)
						return
					}
				}
			})
		})
	}
}

// BenchmarkStream is the decision of celguard serve's session API on the
// peers workload (bench/peers/loadgen's celguard-api target) without the
// network: the 20-rule policy over benchdata.Stream, one session, before
// each call, on the engine's own state and on a memory store (serve's
// default). The difference is the store path's cost per decision: the
// session state's encoding, the commit and the adoption of its answer.
//
//	go test -c -o store.test ./store && scripts/instr.sh ./store.test 'Stream/memory'
func BenchmarkStream(b *testing.B) {
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		b.Fatal(err)
	}
	calls := benchdata.Stream(1000)
	for _, sc := range []struct {
		name string
		opts []eval.Option
	}{
		{"none", nil},
		{"memory", []eval.Option{eval.WithStore(store.NewMemory(store.DefaultTTL))}},
	} {
		b.Run(sc.name, func(b *testing.B) {
			eng, err := eval.New(set, append(sc.opts, eval.WithApprover(approveAll))...)
			if err != nil {
				b.Fatal(err)
			}
			s := eng.NewSession("w0", nil)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Before(ctx, calls[i%len(calls)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// approveAll answers every ask with an approval, as loadgen's server does.
var approveAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Approve}, nil
})

// storeAllocBudget is what a memory store may add to a decision's
// allocations on the peers workload (serve's session API, BenchmarkStream):
// encoding the session's state, the commit and adopting its answer. It was
// 19 (53 against 34) when a commit encoded a copy of the whole state by
// reflection; allocation counts do not depend on the machine's load.
const storeAllocBudget = 11

// TestStoreAllocs holds the allocations a memory store adds to a decision
// to storeAllocBudget.
func TestStoreAllocs(t *testing.T) {
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		t.Fatal(err)
	}
	calls := benchdata.Stream(1000)
	allocs := func(opts ...eval.Option) float64 {
		eng, err := eval.New(set, append(opts, eval.WithApprover(approveAll))...)
		if err != nil {
			t.Fatal(err)
		}
		s := eng.NewSession("w0", nil)
		ctx := context.Background()
		for _, c := range calls[:100] { // a session with its 16 recent calls
			if _, err := s.Before(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		i := 100
		return testing.AllocsPerRun(400, func() {
			if _, err := s.Before(ctx, calls[i%len(calls)]); err != nil {
				t.Fatal(err)
			}
			i++
		})
	}
	none := allocs()
	memory := allocs(eval.WithStore(store.NewMemory(store.DefaultTTL)))
	t.Logf("allocations per decision: %.1f without a store, %.1f with memory:", none, memory)
	if extra := memory - none; extra > storeAllocBudget+raceAllocSlack {
		t.Errorf("a memory store adds %.1f allocations to a decision, more than %d (race detector's slack %d)", extra, storeAllocBudget, raceAllocSlack)
	}
}
