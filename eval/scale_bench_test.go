package eval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// The benchmarks of this file measure the targets of issue 6 that
// bench_test.go does not: scaling with the size of the policy set, compile
// time, parallel throughput, the recommended bundle and memory. No test here
// asserts a timing; scripts/bench.sh runs them and BENCHMARKS.md records the
// figures.

// BenchmarkScale decides the Bash calls of the stream against sets of 20,
// 1,000 and 10,000 rules of which 20 can match Bash (benchdata.Rules): with
// the tool index, the cost should not grow with the size of the set.
func BenchmarkScale(b *testing.B) {
	calls := benchdata.Shell(benchStream(1000))
	for _, n := range []int{20, 1000, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			set, err := compile.Compile([]policy.Source{benchdata.RulesSource(n, 20)})
			if err != nil {
				b.Fatal(err)
			}
			if got := len(set.Candidates(policy.PhaseBefore, benchdata.ScaleTool)); got != 20 {
				b.Fatalf("%d candidate rules for %s, want 20", got, benchdata.ScaleTool)
			}
			eng, err := eval.New(set, eval.WithApprover(approveAll))
			if err != nil {
				b.Fatal(err)
			}
			decideLoop(b, eng.NewSession("bench", nil), calls)
		})
	}
}

// BenchmarkScaleGlob is BenchmarkScale for an MCP tool that rules match by
// glob (benchdata.GlobRules): 20 rules of the set can match it.
func BenchmarkScaleGlob(b *testing.B) {
	calls := []eval.Call{{Tool: benchdata.GlobTool, Args: map[string]any{"command": "search the docs"}}}
	for _, n := range []int{20, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			set, err := compile.Compile([]policy.Source{benchdata.GlobRules(n, 20)})
			if err != nil {
				b.Fatal(err)
			}
			if got := len(set.Candidates(policy.PhaseBefore, benchdata.GlobTool)); got != 20 {
				b.Fatalf("%d candidate rules for %s, want 20", got, benchdata.GlobTool)
			}
			eng, err := eval.New(set, eval.WithApprover(approveAll))
			if err != nil {
				b.Fatal(err)
			}
			decideLoop(b, eng.NewSession("bench", nil), calls)
		})
	}
}

// decideLoop decides calls in turn, one per op.
func decideLoop(b *testing.B, s *eval.Session, calls []eval.Call) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := s.Before(ctx, calls[i%len(calls)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCompileRules compiles generated sets of 100, 1,000 and 10,000
// rules; ns/rule should stay flat (linear compile time).
func BenchmarkCompileRules(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			srcs := []policy.Source{benchdata.RulesSource(n, 20)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compile.Compile(srcs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/rule")
		})
	}
}

// BenchmarkParallel decides the mixed stream on one goroutine (serial) and
// on GOMAXPROCS goroutines (parallel, one session each; parallel-shared, one
// session for all). Run with -cpu 1,2: the target is serial at -cpu 1 over
// parallel at -cpu 2 of at least 1.8.
func BenchmarkParallel(b *testing.B) {
	calls := benchStream(1000)
	eng, err := eval.New(bench20Set(b), eval.WithApprover(approveAll))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		decideLoop(b, eng.NewSession("bench", nil), calls)
	})
	parallel := func(b *testing.B, shared *eval.Session) {
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			s := shared
			if s == nil {
				s = eng.NewSession("bench", nil)
			}
			i := 0
			for pb.Next() {
				if _, err := s.Before(ctx, calls[i%len(calls)]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	}
	b.Run("parallel", func(b *testing.B) { parallel(b, nil) })
	b.Run("parallel-shared", func(b *testing.B) { parallel(b, eng.NewSession("shared", nil)) })
}

// recommendedEngine compiles the recommended bundle as `celguard eval` would
// with no user or project directory. It skips while the built-in policies do
// not compile.
func recommendedEngine(b testing.TB) *eval.Engine {
	b.Helper()
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Skipf("recommended bundle: %v", err)
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		b.Skipf("recommended bundle does not compile yet: %v", err)
	}
	eng, err := eval.New(set, eval.WithApprover(approveAll))
	if err != nil {
		b.Fatal(err)
	}
	return eng
}

// BenchmarkRecommended decides benign and hostile shell commands, short and
// long (benchdata.Recommended), with the recommended bundle (shell parsing
// included).
func BenchmarkRecommended(b *testing.B) {
	eng := recommendedEngine(b)
	calls := benchdata.Recommended()
	for _, name := range benchdata.RecommendedCases {
		b.Run(name, func(b *testing.B) {
			s := eng.NewSession("bench", nil)
			d, err := s.Before(context.Background(), calls[name])
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: %s by %q", name, d.Verdict, d.RuleID)
			decideLoop(b, s, []eval.Call{calls[name]})
		})
	}
}

// BenchmarkCompileRecommended compiles the recommended bundle.
func BenchmarkCompileRecommended(b *testing.B) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Skipf("recommended bundle: %v", err)
	}
	if _, err := compile.Compile(srcs); err != nil {
		b.Skipf("recommended bundle does not compile yet: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compile.Compile(srcs); err != nil {
			b.Fatal(err)
		}
	}
}

// heapInUse returns the bytes of live heap after a full collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemory reports memory per idle session and per counter key. The
// op is building the whole population (10,000 sessions, 100,000 keys), so
// run it with -benchtime 1x; the figures are the custom metrics.
func BenchmarkMemory(b *testing.B) {
	b.Run("sessions", benchMemorySessions)
	b.Run("sessions-loop-detection", benchMemoryLoopSessions)
	b.Run("keys-count", func(b *testing.B) { benchMemoryKeys(b, "") })
	b.Run("keys-window", func(b *testing.B) { benchMemoryKeys(b, "    window: 1h\n") })
	b.Run("bound", benchMemoryBound)
}

// benchMemorySessions measures idle sessions.
func benchMemorySessions(b *testing.B) {
	eng, err := eval.New(bench20Set(b))
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("session-%05d", i)
	}
	var per float64
	for b.Loop() {
		sessions := make([]*eval.Session, n)
		before := heapInUse()
		for i := range sessions {
			sessions[i] = eng.NewSession(ids[i], nil)
		}
		after := heapInUse()
		runtime.KeepAlive(sessions)
		per = float64(after-before) / n
	}
	b.ReportMetric(per, "B/session")
}

// benchMemoryLoopSessions measures sessions that saw one failing call under
// the built-in loop-detection policy: two counters, one key each.
func benchMemoryLoopSessions(b *testing.B) {
	set, err := compile.Compile(loopSources(b))
	if err != nil {
		b.Fatal(err)
	}
	eng, err := eval.New(set)
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	call := eval.Call{Tool: "Bash", Args: map[string]any{"command": "go test ./..."}, Cwd: "/repo"}
	var per float64
	for b.Loop() {
		sessions := make([]*eval.Session, n)
		before := heapInUse()
		for i := range sessions {
			sessions[i] = eng.NewSession("s", nil)
			if _, err := sessions[i].After(context.Background(), call, eval.Result{IsError: true, Content: "FAIL"}); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		runtime.KeepAlive(sessions)
		per = float64(after-before) / n
	}
	b.ReportMetric(per, "B/session")
}

// benchMemoryKeys measures counter keys; decl is added to the counter's
// declaration.
func benchMemoryKeys(b *testing.B, decl string) {
	const n = 100_000
	src := policy.Source{Name: "keys.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: keys
counters:
  - name: seen
    key: 'string(args.command)'
    increment_when: 'true'
` + decl + `rules:
  - {id: many, phase: after, condition: 'counters.seen > 1000000', verdict: block, reason: never}
`)}
	set, err := compile.Compile([]policy.Source{src})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := eval.New(set, eval.WithMaxCounterKeys(2*n))
	if err != nil {
		b.Fatal(err)
	}
	calls := make([]eval.Call, n)
	for i := range calls {
		calls[i] = eval.Call{Tool: "Bash", Args: map[string]any{"command": fmt.Sprintf("cmd-%06d", i)}}
	}
	ctx := context.Background()
	var per float64
	for b.Loop() {
		s := eng.NewSession("keys", nil)
		before := heapInUse()
		for _, c := range calls {
			if _, err := s.After(ctx, c, eval.Result{}); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		runtime.KeepAlive(s)
		per = float64(after-before) / n
	}
	runtime.KeepAlive(calls)
	b.ReportMetric(per, "B/key")
}

// benchMemoryBound is a long session with the default bound: 200,000
// distinct keys through one window counter. What stays is at most
// DefaultMaxCounterKeys keys.
func benchMemoryBound(b *testing.B) {
	src := policy.Source{Name: "keys.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: keys
counters:
  - name: seen
    key: 'string(args.command)'
    increment_when: 'true'
    window: 1h
rules:
  - {id: many, phase: after, condition: 'counters.seen > 1000000', verdict: block, reason: never}
`)}
	set, err := compile.Compile([]policy.Source{src})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := eval.New(set)
	if err != nil {
		b.Fatal(err)
	}
	const n = 200_000
	ctx := context.Background()
	var grown float64
	for b.Loop() {
		s := eng.NewSession("long", nil)
		before := heapInUse()
		for i := range n {
			c := eval.Call{Tool: "Bash", Args: map[string]any{"command": fmt.Sprintf("cmd-%06d", i)}}
			if _, err := s.After(ctx, c, eval.Result{}); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		runtime.KeepAlive(s)
		grown = float64(after) - float64(before)
		st := s.State()
		if got := len(st.Counters["keys/seen"].Keys); got > eval.DefaultMaxCounterKeys {
			b.Fatalf("%d keys kept, bound %d", got, eval.DefaultMaxCounterKeys)
		}
	}
	b.ReportMetric(grown, "B/session-after-200k-keys")
}

// loopSources returns the built-in loop-detection policy and the built-in
// tool classes it names.
func loopSources(b *testing.B) []policy.Source {
	b.Helper()
	srcs, err := policies.Sources()
	if err != nil {
		b.Fatal(err)
	}
	var out []policy.Source
	for _, s := range srcs {
		if s.Name == "builtin/loop-detection.yaml" || s.Name == "builtin/tool-classes.yaml" {
			out = append(out, s)
		}
	}
	if len(out) != 2 {
		b.Fatalf("built-in loop-detection and tool classes: found %d of 2", len(out))
	}
	return out
}

// BenchmarkBenchEvent decides scripts/bench-hook.sh's PreToolUse (Bash `go
// test ./...` in a git repository) with the recommended bundle: the call is
// allowed, so every reachable rule runs to false. It is the rule-evaluation
// part of the daemon's warm answer (BENCHMARKS.md, issue 26).
func BenchmarkBenchEvent(b *testing.B) {
	eng := recommendedEngine(b)
	repo := b.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	call := eval.Call{Tool: "Bash", Cwd: repo, ID: "toolu_bench",
		Args: map[string]any{"command": "go test ./...", "description": "Run the tests"}}
	s := eng.NewSession("bench", nil)
	d, err := s.Before(context.Background(), call)
	if err != nil || d.Verdict != policy.Allow {
		b.Fatalf("the bench event is not allowed: %v %v", d, err)
	}
	decideLoop(b, s, []eval.Call{call})
}
