package peers

import (
	"context"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
)

type peer struct {
	name  string
	build func(tb testing.TB) Decider
}

var peers = []peer{
	{"handwritten", func(testing.TB) Decider { return NewHandwritten() }},
	{"celgo", func(tb testing.TB) Decider {
		d, err := NewCelGo()
		if err != nil {
			tb.Fatal(err)
		}
		return d
	}},
	{"opa", func(tb testing.TB) Decider {
		d, err := NewRego(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		return d
	}},
	{"celguard", func(tb testing.TB) Decider {
		d, err := NewCelguard()
		if err != nil {
			tb.Fatal(err)
		}
		return d
	}},
}

// TestSameDecisions checks that the four implementations give the same
// verdict and rule for every call of the stream, so that the benchmarks
// compare the same work, and that the stream exercises every rule verdict.
func TestSameDecisions(t *testing.T) {
	calls := benchdata.Stream(1000)
	extra := []eval.Call{ // one call for each rule the stream never triggers
		{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "mkfs.ext4 /dev/sda1"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "dd if=/dev/zero of=/dev/sda"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": ":(){ :|:& };:"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "chmod -R 777 /"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "git reset --hard HEAD~1"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "git commit -m x --no-verify"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "npm publish"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "ls; sudo reboot"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{"command": "git diff HEAD"}, Cwd: "/repo"},
		{Tool: "Bash", Args: map[string]any{}, Cwd: "/repo"},
		{Tool: "Write", Args: map[string]any{}, Cwd: "/repo"},
		{Tool: "Edit", Args: map[string]any{"file_path": "/repo/id.key"}, Cwd: "/repo"},
		{Tool: "WebFetch", Args: map[string]any{"url": "https://x"}, Cwd: "/repo"},
	}
	calls = append(calls, extra...)
	ds := make([]Decider, len(peers))
	for i, p := range peers {
		ds[i] = p.build(t)
	}
	rules := map[string]int{}
	for _, c := range calls {
		wantV, wantR := ds[0].Decide(c)
		rules[wantR]++
		for i, d := range ds[1:] {
			if v, r := d.Decide(c); v != wantV || r != wantR {
				t.Errorf("%s %v: %s says %s by %q, %s says %s by %q", c.Tool, c.Args, peers[0].name, wantV, wantR, peers[i+1].name, v, r)
			}
		}
	}
	for _, r := range celRules {
		if rules[r.id] == 0 {
			t.Errorf("no call decided by %s", r.id)
		}
	}
	t.Logf("decisions by rule over %d calls: %v", len(calls), rules)
}

func benchDecide(b *testing.B, calls []eval.Call) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			d := p.build(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d.Decide(calls[i%len(calls)])
				i++
			}
		})
	}
}

// BenchmarkStream is one decision per op over the mixed stream.
func BenchmarkStream(b *testing.B) { benchDecide(b, benchdata.Stream(1000)) }

// BenchmarkReadOnly is one decision per op over the Read/Glob/Grep calls.
func BenchmarkReadOnly(b *testing.B) { benchDecide(b, benchdata.ReadOnly(benchdata.Stream(1000))) }

// BenchmarkBuild builds the policy: compiling regexes, CEL programs, Rego
// (PrepareForEval), or celguard's compile and engine.
func BenchmarkBuild(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.build(b)
			}
		})
	}
}
