package compile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// A pattern kept in a constant is planned as a literal: the program no
// longer reads the name (evaluating it without the name in the activation
// works), and gives the answers the name would. Names a comprehension binds
// are not the policy's variable.
func TestConstantPatternsPlannedAsLiterals(t *testing.T) {
	src := `apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - {name: pattern, expression: '"rm\\s+-rf"'}
  - {name: alias, expression: pattern}
  - {name: computed, expression: 'tool + "x"'}
rules:
  - {id: by-var, verdict: block, condition: 'args.command.matches(pattern)'}
  - {id: by-alias, verdict: block, condition: 'matches(args.command, alias)'}
  - {id: by-bind, verdict: block, condition: 'cel.bind(p, "^rm", args.command.matches(p))'}
  - {id: shadowed, verdict: block, condition: '["^l"].exists(pattern, args.command.matches(pattern))'}
  - {id: computed, verdict: block, condition: 'args.command.matches(computed)'}
`
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(src)}})
	require.NoError(t, err)
	eval := func(id, cmd string) (bool, error) {
		r, ok := set.Rule(id)
		require.True(t, ok, id)
		out, _, err := r.Condition.Tracked().Eval(map[string]any{"args": map[string]any{"command": cmd}, "tool": "Bash"})
		if err != nil {
			return false, err
		}
		return out.Value().(bool), nil
	}
	got, err := eval("shadowed", "ls")
	require.NoError(t, err)
	assert.True(t, got, "the comprehension's pattern, not the variable")
	got, err = eval("shadowed", "rm  -rf /")
	require.NoError(t, err)
	assert.False(t, got, "the comprehension's pattern, not the variable")
	for _, id := range []string{"by-var", "by-alias", "by-bind"} {
		got, err := eval(id, "rm  -rf /")
		require.NoError(t, err, "%s: the pattern is a literal in the program", id)
		assert.True(t, got, id)
		got, err = eval(id, "ls")
		require.NoError(t, err, id)
		assert.False(t, got, id)
	}
	_, err = eval("computed", "rm")
	assert.Error(t, err, "a computed pattern is read from its variable")
}
