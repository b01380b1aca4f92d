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
	{0, []string{"policy", "stdlib/shell/...", "stdlib/toolchain/...", "stdlib/sql/...", "internal/atomicfile", "internal/jsonkind", "internal/fileowner", "internal/logfile", "internal/redistest"}},
	{1, []string{"stdlib", "trust"}},
	{2, []string{"celenv", "policies"}},
	{3, []string{"compile"}},
	{4, []string{"eval"}},
	{5, []string{"hooks", "hooks/hostse2e", "judge", "policytest", "conformance", "internal/benchdata", "internal/layering", "python"}},
	// store opens every state store, the hook files among them.
	{6, []string{"store"}},
	// "" is the module root, package celguard: Load composes policies,
	// compile and eval for embedders, above them and below the command line.
	{7, []string{"", "serve", "cmd/celguard/internal/..."}},
	// bench/barehook is the bare Go binary hook latency is measured against.
	{8, []string{"cmd/celguard", "bench/barehook"}},
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
	for rel, want := range map[string]int{"policy": 0, "stdlib/shell": 0, "stdlib": 1, "eval": 4, "store": 6, "cmd/celguard": 8, "cmd/celguard/internal/output": 7} {
		got, ok := rankOf(rel)
		if !ok || got != want {
			t.Errorf("rankOf(%q) = %d, %v; want %d", rel, got, ok, want)
		}
	}
	if _, ok := rankOf("stdlibx"); ok {
		t.Error("rankOf(stdlibx) found a layer; prefixes must stop at a path element")
	}
}
