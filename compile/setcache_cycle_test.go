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

// A record that pairs a variable with the expression of a later variable
// reading it makes the variable read itself: a cycle the compiler never
// lets a policy write. Evaluated, it recursed until the stack overflowed,
// a fatal error no recover catches (a crashed hook, whose call several
// hosts let through). The cycle is now an error of the rule reading it,
// which its failure policy decides (here: closed, the rule applies).
func TestSetCacheVariableCycleFailsClosed(t *testing.T) {
	srcs := []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - name: a
    expression: args.x == "y"
  - name: b
    expression: a || args.z == "w"
rules:
  - id: r
    condition: b
    verdict: block
    reason: b
`)}}
	c := &compile.MemorySetCache{}
	_, err := compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	compile.PairVariableForTest(t, c, 0, 1)
	set, err := compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	e, err := eval.New(set)
	require.NoError(t, err)
	d, err := e.NewSession("s", nil).Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"x": "n"}, Cwd: "/"})
	t.Logf("%+v %v", d, err)
	assert.Equal(t, policy.Block, d.Verdict)
}
