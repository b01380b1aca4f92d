package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/redistest"
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
