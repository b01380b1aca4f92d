package stdlib

import (
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOptimizedPrograms: celenv plans programs with OptOptimize, which folds
// constant calls at plan time. Late-bound calls on literals must not be
// folded (there is no scope then), eager ones may be.
func TestOptimizedPrograms(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	for _, expr := range []string{
		`shell.programs("cd x && git push") == ["cd", "git"]`,
		`secrets.has("key=AKIAIOSFODNN7EXAMPLE")`,
		`shell.hasFlag(shell.commands("rm -rf /")[0], "-r")`,
		`path.within("/a/b", "/a") && glob.match("a.go", "*.go")`,
	} {
		a, iss := env.Compile(expr)
		require.NoError(t, iss.Err())
		prg, err := env.Program(a, cel.EvalOptions(cel.OptOptimize), cel.CostTracking(l.ActualCostEstimator()), cel.CostLimit(1_000_000))
		require.NoError(t, err, expr)
		s := l.NewCallScope()
		act, err := s.Activation(map[string]any{})
		require.NoError(t, err)
		out, _, err := prg.Eval(act)
		require.NoError(t, err, expr)
		assert.Equal(t, types.True, out, expr)
	}
}
