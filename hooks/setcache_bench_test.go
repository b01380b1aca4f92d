package hooks

import (
	"context"
	"fmt"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/store/statedir"
)

// BenchmarkFirstDecisionReplayed is the in-process part of a warm
// `celguard hook` with no daemon (issue 26's third row) that the
// compiled-set cache decides: read and authenticate the record of the
// recommended bundle from the state directory, replay the compile, and
// decide the first PreToolUse of a new session (Bash `go test ./...`, as
// scripts/bench-hook.sh sends it), which makes and runs the programs the
// call reaches. Package init, flags and the host's own work are not in it.
func BenchmarkFirstDecisionReplayed(b *testing.B) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	key, err := statedir.LoadKey(dir)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := compile.Compile(srcs, compile.WithSetCache(NewSetCache(dir, key, "bench"))); err != nil {
		b.Fatal(err)
	}
	r := testRunner(b, "claude-code", Options{}, nil)
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		set, err := compile.Compile(srcs, compile.WithSetCache(NewSetCache(dir, key, "bench")))
		if err != nil || !set.FromCache() {
			b.Fatal("not replayed", err)
		}
		r.Engine = storedEngine(set, r, eval.WithApprover(deferAsk))
		n++
		ev := fmt.Appendf(nil, `{"session_id":"bench-%d","cwd":"/srv/app","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./...","description":"Run the tests"},"tool_use_id":"toolu_bench"}`, n)
		if resp := r.Run(ctx, ev); resp.Exit != 0 || len(resp.Stdout) != 0 {
			b.Fatalf("not allowed: %d %s %s", resp.Exit, resp.Stdout, resp.Stderr)
		}
	}
}
