package eval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
)

// benchStream is the shared benchmark workload (internal/benchdata): a
// third Read/Glob/Grep, a fifth Write/Edit, the rest shell commands, 2.5% of
// all calls over 2000 characters; deterministic.
func benchStream(n int) []eval.Call { return benchdata.Stream(n) }

// bench20Set compiles the 20-rule benchmark policy (benchdata.Policy20).
func bench20Set(b *testing.B) *compile.PolicySet {
	b.Helper()
	set, err := compile.Compile([]policy.Source{benchdata.Source20()})
	if err != nil {
		b.Fatal(err)
	}
	return set
}

// approveAll keeps ask decisions cheap and deterministic in benchmarks.
var approveAll = eval.ApproverFunc(func(context.Context, eval.ApprovalRequest) (eval.Approval, error) {
	return eval.Approval{Answer: eval.Approve}, nil
})

func runStream(b *testing.B, calls []eval.Call) {
	eng, err := eval.New(bench20Set(b), eval.WithApprover(approveAll))
	if err != nil {
		b.Fatal(err)
	}
	decideLoop(b, eng.NewSession("bench", nil), calls)
}

// BenchmarkDecide20Rules is one decision per op over the mixed stream.
func BenchmarkDecide20Rules(b *testing.B) { runStream(b, benchStream(1000)) }

// BenchmarkDecideReadOnly is one decision per op for Read/Glob/Grep calls
// only: the tool index leaves one candidate rule.
func BenchmarkDecideReadOnly(b *testing.B) {
	runStream(b, benchdata.ReadOnly(benchStream(1000)))
}

// BenchmarkDecideAllow is an allow decision on a short shell command that
// passes every block and ask rule.
func BenchmarkDecideAllow(b *testing.B) {
	runStream(b, []eval.Call{{Tool: "Bash", Args: map[string]any{"command": "git status"}, Cwd: "/repo"}})
}

// BenchmarkAfterWithCounters is one after-phase decision per op with the
// built-in loop-detection counters updating.
func BenchmarkAfterWithCounters(b *testing.B) {
	set, err := compile.Compile(loopSources(b))
	if err != nil {
		b.Fatal(err)
	}
	eng, _ := eval.New(set)
	s := eng.NewSession("bench", nil)
	ctx := context.Background()
	calls := benchStream(1000)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i%20 == 0 {
			s.StartTurn()
		}
		_, _ = s.After(ctx, calls[i%len(calls)], eval.Result{IsError: i%3 == 0, Content: "out"})
		i++
	}
}

// BenchmarkCompile20Rules compiles the 20-rule policy.
func BenchmarkCompile20Rules(b *testing.B) {
	srcs := []policy.Source{benchdata.Source20()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile.Compile(srcs); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchStreamShape(t *testing.T) {
	calls := benchStream(1000)
	counts := map[string]int{}
	long := 0
	for _, c := range calls {
		counts[c.Tool]++
		if s, ok := c.Args["command"].(string); ok && len(s) > 2000 {
			long++
		}
	}
	read := counts["Read"] + counts["Glob"] + counts["Grep"]
	write := counts["Write"] + counts["Edit"]
	if read < 280 || read > 390 || write < 150 || write > 250 || long < 10 || long > 45 {
		t.Errorf("stream shape read=%d write=%d long=%d: %s", read, write, long, fmt.Sprint(counts))
	}
}
