package eval_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// cwdPolicy has a variable of the working directory alone (place), one of
// a constant (names), and variables that read more than the directory,
// directly or through another variable.
const cwdPolicy = `variables:
  - name: names
    expression: '["secret", "private"]'
  - name: place
    expression: 'names.map(n, path.abs(n, cwd))'
  - name: target
    expression: '"file_path" in args ? [path.abs(string(args.file_path), cwd)] : []'
  - name: place_or_target
    expression: 'place + target'
  - name: parsed
    expression: 'shell.commands(cwd)'
rules:
  - id: guard-place
    match: {tools: [Write]}
    condition: 'target.exists(t, t in place)'
    verdict: block
`

// A variable that reads nothing but cwd (or nothing) is CwdOnly; one that
// reads another built-in, directly or through a variable, is not, nor one
// whose value is not plain data, nor any when path.abs resolves links on
// disk.
func TestCwdOnlyVariables(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": cwdPolicy})
	want := map[string]bool{"names": true, "place": true, "target": false, "place_or_target": false, "parsed": false}
	for _, v := range set.Policies()[0].Variables {
		if got := v.CwdOnly(); got != want[v.Name] {
			t.Errorf("%s: CwdOnly = %t, want %t", v.Name, got, want[v.Name])
		}
	}
	env, err := celenv.New(celenv.WithStdlib(stdlib.WithSymlinks(true)))
	if err != nil {
		t.Fatal(err)
	}
	hdr := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\n"
	linked, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(hdr + cwdPolicy)}}, compile.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range linked.Policies()[0].Variables {
		if v.CwdOnly() {
			t.Errorf("%s: CwdOnly with symlinks resolved on disk", v.Name)
		}
	}
}

// The value kept for one working directory is never used for another:
// the same file is blocked in the directory that protects it and allowed
// in one that does not, in any order, from concurrent sessions.
func TestCwdValuesFollowTheDirectory(t *testing.T) {
	eng, err := eval.New(mustSet(t, map[string]string{"p.yaml": cwdPolicy}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := eng.NewSession(fmt.Sprintf("s%d", g), nil)
			for i := range 50 {
				for _, c := range []struct {
					cwd, file string
					want      policy.Verdict
				}{
					{"/a", "/a/secret", policy.Block},
					{"/b", "/a/secret", policy.Allow},
					{"/b", "private", policy.Block},
					{fmt.Sprintf("/d%d", i), "/a/private", policy.Allow},
					{fmt.Sprintf("/d%d", i), fmt.Sprintf("/d%d/private", i), policy.Block},
					{"/a", "/b/secret", policy.Allow},
				} {
					d, err := s.Before(ctx, eval.Call{Tool: "Write", Cwd: c.cwd, Args: map[string]any{"file_path": c.file}})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Verdict != c.want {
						t.Errorf("Write %s in %s: %s, want %s", c.file, c.cwd, d.Verdict, c.want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// The recommended bundle's places (self-protection's protected places,
// sensitive-files' credential places) are kept by directory; what reads
// the call (its paths, its command) is not.
func TestRecommendedCwdOnly(t *testing.T) {
	srcs, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-", HomeDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := compile.Compile(srcs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"self-protection/protected":     true,
		"self-protection/key_places":    true,
		"sensitive-files/probe_abs":     true,
		"self-protection/file_targets":  false,
		"self-protection/shell_hits":    false,
		"sensitive-files/tree_dir_hits": false,
	}
	seen := 0
	for _, p := range set.Policies() {
		for _, v := range p.Variables {
			if w, ok := want[p.Name+"/"+v.Name]; ok {
				seen++
				if v.CwdOnly() != w {
					t.Errorf("%s/%s: CwdOnly = %t, want %t", p.Name, v.Name, v.CwdOnly(), w)
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d variables", seen, len(want))
	}
}
