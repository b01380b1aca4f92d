package compile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

func decide(t *testing.T, set *compile.PolicySet, args map[string]any) eval.Decision {
	t.Helper()
	eng, err := eval.New(set)
	require.NoError(t, err)
	d, err := eng.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash", Args: args})
	require.NoError(t, err)
	return d
}

func TestASTCacheGivesTheSameSet(t *testing.T) {
	srcs := []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - {name: cmd, expression: 'has(args.command) ? string(args.command) : ""'}
rules:
  - id: no-rm
    condition: 'cmd.startsWith("rm ")'
    verdict: block
    reason: no rm
`)}}
	cache := &compile.MemoryASTCache{}
	cold, err := compile.Compile(srcs, compile.WithASTCache(cache))
	require.NoError(t, err)
	require.Equal(t, 3, cache.Len(), "the variable, the condition and the set's cost proofs are cached")
	warm, err := compile.Compile(srcs, compile.WithASTCache(cache))
	require.NoError(t, err)
	for _, args := range []map[string]any{{"command": "rm -rf x"}, {"command": "ls"}, {}} {
		assert.Equal(t, decide(t, cold, args).Verdict, decide(t, warm, args).Verdict, "%v", args)
	}
	assert.Equal(t, policy.Block, decide(t, warm, map[string]any{"command": "rm -rf x"}).Verdict)
}

// The same text means different things under different declarations: a
// cached check must not leak from one to the other.
func TestASTCacheKeysCoverDeclarations(t *testing.T) {
	pol := func(varExpr, cond string) []policy.Source {
		return []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - {name: v, expression: '` + varExpr + `'}
rules:
  - {id: r, condition: '` + cond + `', verdict: block, reason: x}
`)}}
	}
	cache := &compile.MemoryASTCache{}
	_, err := compile.Compile(pol(`"a"`, `v == "a"`), compile.WithASTCache(cache))
	require.NoError(t, err)
	// v is now an int: the same condition text must be checked again, and fail.
	_, err = compile.Compile(pol(`1`, `v == "a"`), compile.WithASTCache(cache))
	var ds policy.Diagnostics
	require.ErrorAs(t, err, &ds, "a cached check from another declaration was reused")
	assert.Equal(t, policy.CodeCELType, ds[0].Code)
}

type corruptCache struct{ compile.MemoryASTCache }

func (c *corruptCache) Get(string) ([]byte, bool) { return []byte("not a checked expression"), true }

func TestASTCacheIgnoresCorruptEntries(t *testing.T) {
	srcs := []policy.Source{{Name: "p.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - {id: r, condition: 'tool == \"Bash\"', verdict: block, reason: x}\n")}}
	set, err := compile.Compile(srcs, compile.WithASTCache(&corruptCache{}))
	require.NoError(t, err)
	assert.Equal(t, policy.Block, decide(t, set, nil).Verdict)
	_, err = compile.Compile(srcs, compile.WithASTCache(nil))
	assert.Error(t, err)
}

// The stdlib's declared result types (celguard.shell.Command, ...) survive
// the cache: a warm set reads the same fields, and a variable of a typed
// list keeps its type, so a typo against it is still an error.
func TestASTCacheKeepsResultTypes(t *testing.T) {
	src := func(field string) []policy.Source {
		return []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - {name: cmds, expression: 'has(args.command) ? shell.commands(string(args.command)) : []'}
rules:
  - id: sudo-rm
    condition: 'cmds.exists(c, c.program == "rm" && c.wrappers.exists(w, w.program == "sudo") && c.` + field + `.size() > 0)'
    verdict: block
    reason: no sudo rm
`)}}
	}
	cache := &compile.MemoryASTCache{}
	cold, err := compile.Compile(src("operands"), compile.WithASTCache(cache))
	require.NoError(t, err)
	warm, err := compile.Compile(src("operands"), compile.WithASTCache(cache))
	require.NoError(t, err)
	for _, set := range []*compile.PolicySet{cold, warm} {
		if vs := set.Policies()[0].Variables; assert.Len(t, vs, 1) {
			assert.Equal(t, "list(celguard.shell.Command)", vs[0].Type.String())
		}
	}
	for _, cmd := range []string{"sudo rm -rf x", "rm x", "sudo ls", "sudo rm"} {
		args := map[string]any{"command": cmd}
		assert.Equal(t, decide(t, cold, args).Verdict, decide(t, warm, args).Verdict, cmd)
	}
	assert.Equal(t, policy.Block, decide(t, warm, map[string]any{"command": "sudo rm -rf x"}).Verdict)
	_, err = compile.Compile(src("operandz"), compile.WithASTCache(cache))
	require.ErrorContains(t, err, "undefined field 'operandz'")
}
