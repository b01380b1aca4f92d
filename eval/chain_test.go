package eval_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// benignChain is a 200 kB shell command of about 5,000 harmless commands
// joined with &&, as a generated build script is.
func benignChain() string {
	var b strings.Builder
	for i := 0; b.Len() < 200_000; i++ {
		if i > 0 {
			b.WriteString(" && ")
		}
		fmt.Fprintf(&b, "echo step-%d-of-the-build-script", i)
	}
	return b.String()
}

// A long benign chain is decided on its merits, not blocked because rules
// ran out of their cost budget: the parse of the command is charged once
// per call, to the first expression that asks for it, not to every rule
// that reads shell.commands(command) (issue 19).
func TestLongBenignChainIsDecided(t *testing.T) {
	cmd := benignChain()
	require.Greater(t, strings.Count(cmd, "&&"), 4900)
	eng := recommendedEngine(t)
	d, err := eng.NewSession("chain", nil).Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: "/srv/app"})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, d.Verdict, "%s by %s: %s", d.Code, d.RuleID, d.Reason)
}

// Within one call's scope, a shell.commands result returned again costs a
// lookup: evaluating an expression a second time in the same scope costs
// what the first cost less the parse.
func TestMemoisedParseChargedOnce(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	cmd := benignChain()[:20_000]
	ast, iss := env.CEL().Compile(`shell.commands(command).exists(c, c.program == "rm")`)
	require.NoError(t, iss.Err())
	prg, err := env.CEL().Program(ast, env.ProgramOptions()...)
	require.NoError(t, err)
	scope := env.Stdlib().NewCallScope()
	act, err := scope.Activation(map[string]any{"command": cmd})
	require.NoError(t, err)
	var costs []uint64
	for range 2 {
		out, det, err := prg.Eval(act)
		require.NoError(t, err)
		assert.Equal(t, false, out.Value())
		costs = append(costs, *det.ActualCost())
	}
	parse := uint64(3 * len(cmd)) // stdlib's shellParseCostPerByte
	assert.GreaterOrEqual(t, costs[0], costs[1]+parse, "the second evaluation does not pay for the parse: %v", costs)
	assert.Less(t, costs[1], parse, "a lookup, then the comprehension: %v", costs)
}
