package eval_test

import (
	"context"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// The realistic session (benchdata.Session) is benign: the recommended
// bundle allows or warns about every call (asks approved), and redacts the
// two results that carry a credential and no other. So the benchmarks
// below measure the decisions users make, not a halt that ends the session.
func TestBenchSessionIsBenign(t *testing.T) {
	eng := recommendedEngine(t)
	s := eng.NewSession("bench", nil)
	ctx := context.Background()
	modified := 0
	for i, sc := range benchdata.Session() {
		d, err := s.Before(ctx, sc.Call)
		if err != nil {
			t.Fatalf("call %d (%s): %v", i, sc.Call.Tool, err)
		}
		if d.Verdict != policy.Allow && d.Verdict != policy.Warn && d.Verdict != policy.Ask {
			t.Errorf("call %d (%s %v): %s by %s: %s", i, sc.Call.Tool, sc.Call.Args["command"], d.Verdict, d.RuleID, d.Reason)
		}
		d, err = s.After(ctx, sc.Call, sc.Result)
		if err != nil {
			t.Fatalf("result %d (%s): %v", i, sc.Call.Tool, err)
		}
		switch d.Verdict {
		case policy.Modify:
			modified++
		case policy.Allow, policy.Warn:
		default:
			t.Errorf("result %d (%s): %s by %s: %s", i, sc.Call.Tool, d.Verdict, d.RuleID, d.Reason)
		}
	}
	if modified != 2 {
		t.Errorf("%d results redacted, want the 2 with credentials", modified)
	}
}

// BenchmarkSession decides the realistic session (benchdata.Session), one
// call per op, before and after the call, with the recommended bundle and,
// on the same calls, with celguard's own 20-rule peer policy
// (benchdata.Policy20); and scans each result once with stdlib.FindSecrets,
// the floor of the after-call decision. A session lasts the 200 calls, then
// a new one starts (loop detection would otherwise see the same calls over
// and over). The targets (issue 19): before within 6x the 20-rule policy,
// after within 3x one scan.
func BenchmarkSession(b *testing.B) {
	calls := benchdata.Session()
	ctx := context.Background()
	run := func(b *testing.B, eng *eval.Engine, after bool) {
		b.ReportAllocs()
		var s *eval.Session
		i := 0
		for b.Loop() {
			if i%len(calls) == 0 {
				s = eng.NewSession("bench", nil)
			}
			sc := calls[i%len(calls)]
			var err error
			if after {
				_, err = s.After(ctx, sc.Call, sc.Result)
			} else {
				_, err = s.Before(ctx, sc.Call)
			}
			if err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	rec := recommendedEngine(b)
	peer, err := eval.New(bench20Set(b), eval.WithApprover(approveAll))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("before/recommended", func(b *testing.B) { run(b, rec, false) })
	b.Run("before/peer20", func(b *testing.B) { run(b, peer, false) })
	b.Run("after/recommended", func(b *testing.B) { run(b, rec, true) })
	b.Run("after/findsecrets", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = stdlib.FindSecrets(calls[i%len(calls)].Result.Content)
			i++
		}
	})
}
