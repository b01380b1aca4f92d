package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/internal/redistest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store"
)

// TestStoredStateStream: the state a store keeps after each decision is
// json.Marshal of the session's state, byte for byte, and each decision is
// the one an engine without a store makes, on the peers stream (serve's
// workload: benchdata.Policy20 and Stream) with calls before and after they
// ran, call ids, id-like arguments, errors and strings JSON escapes, through
// the memory store and through Redis. The store path encodes only what
// changed (eval/stateenc.go); this holds it to the plain encoding.
func TestStoredStateStream(t *testing.T) {
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	for _, sc := range []struct {
		name string
		open func() state.Store
	}{
		{"memory", func() state.Store { return store.NewMemory(store.DefaultTTL) }},
		{"redis", func() state.Store {
			st, err := store.Open(context.Background(), srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open()
			ref, err := eval.New(set, eval.WithApprover(approveAll))
			if err != nil {
				t.Fatal(err)
			}
			eng, err := eval.New(set, eval.WithApprover(approveAll), eval.WithStore(st))
			if err != nil {
				t.Fatal(err)
			}
			for _, meta := range []map[string]any{nil, streamMeta} {
				streamState(t, st, ref, eng, "stream-"+sc.name+fmt.Sprint(len(meta)), meta)
			}
		})
	}
}

// streamMeta is host metadata for the stream's second session: the stored
// state's meta member is encoded once and kept (eval's metaMemberLocked).
var streamMeta = map[string]any{"host": "claude-code", "agent": map[string]any{"name": "claude", "n": 7.5}, "repository": "github.com/acme/<api>", "é": "ü\u2028"}

// streamState runs 400 stream calls through session id of eng (with the
// store st) and of ref (without a store), both started with meta, and
// fails unless after each call the stored bytes are json.Marshal of the
// session's state and equal the store-less session's.
func streamState(t *testing.T, st state.Store, ref, eng *eval.Engine, id string, meta map[string]any) {
	t.Helper()
	ctx := context.Background()
	want, got := ref.NewSession(id, meta), eng.NewSession(id, meta)
	r := rand.New(rand.NewPCG(26, 8))
	for i, call := range benchdata.Stream(400) {
		call.Args = maps2(call.Args)
		if r.IntN(3) == 0 {
			call.ID = fmt.Sprint("toolu_", i)
		}
		if r.IntN(5) == 0 {
			call.Args["issue_id"] = float64(i % 7)
		}
		if r.IntN(6) == 0 && call.Tool == "Bash" {
			call.Args["command"] = fmt.Sprint(call.Args["command"], ` > "out é" <in`)
		}
		after := r.IntN(2) == 0
		res := eval.Result{IsError: r.IntN(4) == 0, Content: "done"}
		for _, phase := range []string{"before", "after"} {
			var dw, dg eval.Decision
			var ew, eg error
			if phase == "before" {
				dw, ew = want.Before(ctx, call)
				dg, eg = got.Before(ctx, call)
			} else {
				if !after {
					continue
				}
				dw, ew = want.After(ctx, call, res)
				dg, eg = got.After(ctx, call, res)
			}
			if (ew == nil) != (eg == nil) || dw.Verdict != dg.Verdict || dw.RuleID != dg.RuleID || dw.Code != dg.Code || dw.Reason != dg.Reason {
				t.Fatalf("call %d %s: with the store %+v %v, without %+v %v", i, phase, dg, eg, dw, ew)
			}
			kept := stored(t, st, id)
			plain, err := json.Marshal(got.State())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kept, plain) {
				t.Fatalf("call %d %s: the store keeps\n%s\njson.Marshal of the state is\n%s", i, phase, kept, plain)
			}
			if refJS, _ := json.Marshal(want.State()); !bytes.Equal(kept, refJS) {
				t.Fatalf("call %d %s: the store keeps\n%s\nthe state without a store is\n%s", i, phase, kept, refJS)
			}
		}
	}
}

// TestStoredMetaAdopted: a handle opened without metadata on a session
// another replica started takes that session's metadata, and the state it
// stores from then on carries it (the kept meta member is made anew).
func TestStoredMetaAdopted(t *testing.T) {
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := store.NewMemory(store.DefaultTTL)
	a, err := eval.New(set, eval.WithApprover(approveAll), eval.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.New(set, eval.WithApprover(approveAll), eval.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	calls := benchdata.Stream(6)
	sa := a.NewSession("adopt", streamMeta)
	sb := b.NewSession("adopt", nil)
	// sb commits first, with no metadata, and encodes its meta member
	// (none); sa's commits then carry its metadata, which sb takes when it
	// syncs: its kept member must be made again.
	for i, call := range calls {
		s := sb
		if i%2 == 1 {
			s = sa
		} else if i > 0 {
			if err := sb.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Before(ctx, call); err != nil {
			t.Fatal(err)
		}
		kept := stored(t, st, "adopt")
		plain, err := json.Marshal(s.State())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept, plain) {
			t.Fatalf("call %d: the store keeps\n%s\njson.Marshal of the state is\n%s", i, kept, plain)
		}
		if i > 0 && !bytes.Contains(kept, []byte(`"meta":{"agent":`)) {
			t.Fatalf("call %d: the stored state lost the session's metadata: %s", i, kept)
		}
	}
}

// stored is the state st keeps for session id, read with a version it
// cannot have.
func stored(t *testing.T, st state.Store, id string) []byte {
	t.Helper()
	ok, cur, err := st.Commit(context.Background(), []state.Op{{Key: state.Key{Scope: policy.ScopeSession, ID: id}, Version: "not-a-version"}})
	if err != nil || ok || len(cur) != 1 {
		t.Fatalf("reading the state of %s: %v %v %+v", id, ok, err, cur)
	}
	return cur[0].State
}

// maps2 is a copy of args, which the test changes.
func maps2(args map[string]any) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	return out
}
