package eval

import (
	"context"
	"fmt"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// manyPaths is the size of the call issue 15 timed: 3×10^5 paths took 118 s
// to de-duplicate pairwise, far past every host's hook deadline.
const manyPaths = 300_000

// recommendedSet compiles the recommended bundle as `celguard eval` would
// with no user or project directory.
func recommendedSet(tb testing.TB) *compile.PolicySet {
	tb.Helper()
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		tb.Fatal(err)
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

// readCall is a Read call whose paths argument holds n distinct paths, each
// given twice, and a file_path that is the first of them.
func readCall(n int) Call {
	paths := make([]any, 0, 2*n)
	for i := range n {
		paths = append(paths, fmt.Sprintf("src/f%d.go", i))
	}
	paths = append(paths, paths...)
	return Call{Tool: "Read", Cwd: "/work", Args: map[string]any{"file_path": "src/f0.go", "paths": paths}}
}

// deriveOf returns the derived arguments of call under the recommended
// bundle.
func deriveOf(t *testing.T, call Call) *derivedArgs {
	t.Helper()
	set := recommendedSet(t)
	eng, err := New(set)
	if err != nil {
		t.Fatal(err)
	}
	return newEvaluation(context.Background(), eng.NewSession("s", nil), set, policy.PhaseBefore, call, nil).derive()
}

// TestDerivePaths pins the de-duplication of class path arguments: first-seen
// order, duplicates dropped, on both sides of the small-list threshold.
func TestDerivePaths(t *testing.T) {
	for _, n := range []int{1, smallPathList - 1, smallPathList, smallPathList + 1, 100} {
		d := deriveOf(t, readCall(n))
		if len(d.paths) != n {
			t.Fatalf("n=%d: %d paths, want %d", n, len(d.paths), n)
		}
		for i, p := range d.paths {
			if want := fmt.Sprintf("src/f%d.go", i); p != want {
				t.Fatalf("n=%d: path %d is %q, want %q", n, i, p, want)
			}
		}
	}
}

// TestDeriveManyPathsLinear: de-duplicating the 6×10^5 path arguments of a
// call with 3×10^5 distinct paths takes a number of steps linear in their
// count (a work counter, not a clock: the pairwise scan it replaces would
// count about 10^11).
func TestDeriveManyPathsLinear(t *testing.T) {
	d := deriveOf(t, readCall(manyPaths))
	if len(d.paths) != manyPaths {
		t.Fatalf("%d paths, want %d", len(d.paths), manyPaths)
	}
	args := 2*manyPaths + 1
	if bound := 2*args + smallPathList*smallPathList; d.work > bound {
		t.Fatalf("de-duplicating %d path arguments took %d steps, want at most %d", args, d.work, bound)
	}
}

// TestDecideManyPaths decides a Read call with 3×10^5 paths through the
// recommended bundle: the cost limit stops the rules that walk the paths and
// the call is blocked (fail closed, policy_error), not allowed; and the
// per-call allocations grow no faster than the number of paths (a call with
// ten times the paths allocates within fifteen times as much).
func TestDecideManyPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("decides a call with 3×10^5 paths")
	}
	set := recommendedSet(t)
	eng, err := New(set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := eng.NewSession("s", nil).Before(context.Background(), readCall(manyPaths))
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != policy.Block || d.Code != CodePolicyError {
		t.Fatalf("a call with %d paths: %s (%s) by %s, want block (policy_error)", manyPaths, d.Verdict, d.Code, d.RuleID)
	}
	allocs := func(n int) float64 {
		call := readCall(n)
		return testing.AllocsPerRun(1, func() {
			if _, err := eng.NewSession("s", nil).Before(context.Background(), call); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(manyPaths/10), allocs(manyPaths)
	t.Logf("allocations: %d paths %.0f, %d paths %.0f", manyPaths/10, small, manyPaths, large)
	if large > 15*small {
		t.Fatalf("allocations grew from %.0f to %.0f for ten times the paths", small, large)
	}
}

// BenchmarkDecideManyPaths decides a Read call with 3×10^5 paths (each given
// twice) through the recommended bundle.
func BenchmarkDecideManyPaths(b *testing.B) {
	set := recommendedSet(b)
	eng, err := New(set)
	if err != nil {
		b.Fatal(err)
	}
	call := readCall(manyPaths)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.NewSession("s", nil).Before(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}
