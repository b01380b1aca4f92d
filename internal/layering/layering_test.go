package layering_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/celguard/celguard"

// layers ranks every package of the module: a package may import only
// packages of a lower rank. A package missing from the table fails the test,
// so a new package is placed on purpose. A path ending in "/..." also ranks
// the packages below it.
var layers = []struct {
	rank int
	pkgs []string
}{
	// internal/aptget finds or installs the programs the test services
	// run (redistest, registrytest, browsertest), below them all.
	{-1, []string{"internal/aptget"}},
	{0, []string{"policy", "stdlib/shell/...", "stdlib/toolchain/...", "stdlib/sql/...", "internal/atomicfile", "internal/gobuildid", "internal/jsonkind", "internal/fileowner", "internal/logfile", "internal/redistest", "internal/registrytest", "internal/browsertest", "internal/otlptest", "internal/npmhost", "internal/unprivileged", "internal/deadline"}},
	// state is the persistence protocol the evaluator and every store
	// share; store/statedir the signed state directory (the hooks' and the
	// file store's), which knows neither.
	{1, []string{"stdlib", "trust", "state", "store/statedir", "importer"}},
	// store holds every state store (memory, the state directory, Redis)
	// on the protocol alone: ranked below eval and hooks, it cannot import
	// them.
	// internal/mask masks a call's arguments for every output, the judge's
	// prompt among them, so it sits below eval.
	// hooks/daemonwire is the decision daemon's wire protocol (socket,
	// MAC, manifest), on the standard library and store/statedir alone:
	// the lean hook client (cmd/celguard-hook) links nothing else.
	{2, []string{"celenv", "policies", "store", "internal/mask", "hooks/daemonwire"}},
	{3, []string{"compile"}},
	{4, []string{"eval"}},
	{5, []string{"hooks", "serve/client", "hooks/hostse2e", "judge", "decisionlog", "policytest", "conformance", "internal/benchdata", "internal/layering", "python",
		// internal/input reads the JSONL event stream `celguard eval`
		// decides, for the command line and package replay alike.
		"internal/input"}},
	// bundle builds (lint, suites) and verifies distributed policy sets,
	// above policytest and below the composition root that loads them.
	// hooks/setup installs and checks the hooks in the hosts' settings
	// files: it reads hooks' host table, and hooks (which serve links)
	// knows nothing of it.
	// telemetry sends decisions to OpenTelemetry with decisionlog's
	// masking; the composition root links it (Config.Telemetry).
	{6, []string{"bundle", "hooks/setup", "telemetry"}},
	// "" is the module root, package celguard: the composition root
	// (Config.Load) builds every engine, above policies, compile, eval,
	// judge and store, and below serve and the command line.
	{7, []string{"", "cmd/celguard/internal/..."}},
	// serve builds its engine with the composition root; mcpproxy, the
	// MCP front end, builds its engine the same way, beside serve.
	// replay decides recorded sessions with engines the composition root
	// builds, beside serve.
	{8, []string{"serve", "mcpproxy", "replay"}},
	// learn mines approvals (hooks' state, decision logs, Claude Code's
	// settings, sessions replay decides again) into rules with policytest
	// suites, checked against the built-in policies and their corpus.
	{9, []string{"learn"}},
	// bench/barehook is the bare Go binary hook latency is measured against.
	{10, []string{"cmd/celguard", "cmd/celguard-hook", "bench/barehook"}},
}

// rankOf returns the rank of a package path relative to the module.
func rankOf(rel string) (int, bool) {
	for _, l := range layers {
		for _, p := range l.pkgs {
			if prefix, sub := strings.CutSuffix(p, "/..."); sub {
				if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
					return l.rank, true
				}
			} else if rel == p {
				return l.rank, true
			}
		}
	}
	return 0, false
}

func TestImportsFlowOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		n++
		from := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		fromRank, ok := rankOf(from)
		if !ok {
			t.Errorf("package %s has no layer: add it to the table in layering_test.go", from)
			continue
		}
		for _, imp := range fields[1:] {
			rel, ours := strings.CutPrefix(imp, module+"/")
			if !ours {
				continue
			}
			toRank, ok := rankOf(rel)
			if !ok {
				continue // reported as its own package
			}
			if toRank >= fromRank {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must go to a lower layer", from, fromRank, rel, toRank)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list found %d packages; the module has more", n)
	}
}

// TestRankOf pins the table's lookup, so that the test above cannot pass by
// ranking nothing.
func TestRankOf(t *testing.T) {
	for rel, want := range map[string]int{"policy": 0, "stdlib/shell": 0, "stdlib": 1, "eval": 4, "state": 1, "store/statedir": 1, "store": 2, "cmd/celguard": 10, "cmd/celguard/internal/output": 7, "serve": 8, "": 7} {
		got, ok := rankOf(rel)
		if !ok || got != want {
			t.Errorf("rankOf(%q) = %d, %v; want %d", rel, got, ok, want)
		}
	}
	if _, ok := rankOf("stdlibx"); ok {
		t.Error("rankOf(stdlibx) found a layer; prefixes must stop at a path element")
	}
}
