package stdlib

import (
	"math"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStaticCost(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	estimate := func(expr string) cost.Estimate {
		t.Helper()
		a, iss := env.Compile(expr)
		require.NoError(t, iss.Err(), expr)
		est, err := env.EstimateCost(a, l.CostEstimator())
		require.NoError(t, err, expr)
		return est
	}
	short := estimate(`shell.parse("ls -la")`)
	long := estimate(`shell.parse("` + strings.Repeat("x", 1000) + `")`)
	assert.GreaterOrEqual(t, short.Min, uint64(40))
	assert.Less(t, short.Max, uint64(100))
	assert.Greater(t, long.Min, short.Max+1000, "shell.parse cost grows with the command")

	// An unbounded variable keeps an unbounded estimate: no false promise.
	assert.Equal(t, uint64(math.MaxUint64), estimate(`shell.parse(cmd)`).Max)
	for _, expr := range []string{
		`path.normal("a/b", true)`, `glob.match("a/b.go", "**/*.go")`, `url.host("https://x.io")`,
		`hash.short([1, 2])`, `secrets.has("abc")`, `shell.hasFlag({"argv": ["rm"]}, "-r")`,
	} {
		e := estimate(expr)
		assert.Less(t, e.Max, uint64(1000), expr)
		assert.Greater(t, e.Max, uint64(0), expr)
	}
}

func TestCostEstimatorFallsThrough(t *testing.T) {
	l := testLib(t)
	est := l.CostEstimator()
	assert.Nil(t, est.EstimateCallCost("size", "size_string", nil, nil))
	assert.Nil(t, est.EstimateSize(nil))
	n := cost.NewAstNode(ast.NewExprFactory().NewLiteral(1, types.String("ls -la")), nil, cel.StringType, nil)
	ce := est.EstimateCallCost("shell.parse", "shell_parse_string", nil, []cost.AstNode{n})
	require.NotNil(t, ce)
	assert.Greater(t, ce.Max, uint64(40))

	act := l.ActualCostEstimator()
	assert.Nil(t, act.CallCost("size", "size_string", nil, nil))
	c := act.CallCost("shell.parse", "", []ref.Val{types.String("ls -la")}, nil)
	require.NotNil(t, c, "a call reported by function name only is still costed")
	assert.Equal(t, uint64(40+3*6), *c)
}

func TestActualCost(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	a, iss := env.Compile(`shell.commands(cmd).size() > 0`)
	require.NoError(t, iss.Err())
	prg, err := env.Program(a, cel.CostTracking(l.ActualCostEstimator()))
	require.NoError(t, err)
	run := func(cmd string) uint64 {
		s := l.NewCallScope()
		act, err := s.Activation(map[string]any{"cmd": cmd})
		require.NoError(t, err)
		_, det, err := prg.Eval(act)
		require.NoError(t, err)
		return *det.ActualCost()
	}
	small, big := run("ls"), run(strings.Repeat("ls -la; ", 500))
	assert.Greater(t, big, small+4000, "runtime cost grows with the command (%d vs %d)", small, big)

	// The Lib's ActualCostEstimator and the libraries' own trackers agree.
	c := l.ActualCostEstimator().CallCost("shell.commands", "shell_commands_string", []ref.Val{types.String("ls")}, nil)
	require.NotNil(t, c)
	assert.Equal(t, uint64(40+3*2), *c)
}

// WithEstimatorPrices drops the libraries' per-overload trackers; a program
// that tracks cost with the Lib's ActualCostEstimator must cost exactly what
// it cost with them, call for call, and answer the same.
func TestEstimatorPricesSameCost(t *testing.T) {
	with, without := testLib(t), testLib(t, WithEstimatorPrices())
	envWith, envWithout := testEnv(t, with), testEnv(t, without)
	for _, expr := range []string{
		`shell.commands(cmd).size() > 0`,
		`shell.parse(cmd) == shell.parse(cmd)`,
		`shell.programs(cmd).exists(p, p == "rm")`,
		`path.normal(p, true) == "/home/me/x"`,
		`glob.match(p, "**/*.go") || glob.match(p, "~/.ssh/**")`,
		`url.host(text) == "example.com"`,
		`hash.short([cmd, p]) != ""`,
		`secrets.has(text)`,
		`text.matches("^a+b$") && cmd.contains("rm")`,
	} {
		run := func(env *cel.Env, l *Lib, limit uint64) (ref.Val, uint64, error) {
			t.Helper()
			a, iss := env.Compile(expr)
			require.NoError(t, iss.Err(), expr)
			prg, err := env.Program(a, cel.CostTracking(l.ActualCostEstimator()), cel.CostLimit(limit))
			require.NoError(t, err, expr)
			s := l.NewCallScope()
			act, err := s.Activation(map[string]any{
				"cmd": "ls -la; rm -rf build && git push --force " + strings.Repeat("x ", 200), "p": "~/src/a/b.go",
				"text": "https://example.com/a?token=ghp_" + strings.Repeat("a", 36), "cwd": "/home/me", "x": 1,
			})
			require.NoError(t, err)
			v, det, err := prg.Eval(act)
			var c uint64
			if det != nil && det.ActualCost() != nil {
				c = *det.ActualCost()
			}
			return v, c, err
		}
		v1, c1, err1 := run(envWith, with, 10_000_000)
		v2, c2, err2 := run(envWithout, without, 10_000_000)
		require.NoError(t, err1, expr)
		require.NoError(t, err2, expr)
		assert.Equal(t, v1, v2, expr)
		assert.Equal(t, c1, c2, "%s: cost with the trackers %d, with the estimator alone %d", expr, c1, c2)
		assert.Greater(t, c1, uint64(1), expr)
		// The limit cuts both at the same cost.
		_, _, err1 = run(envWith, with, c1-1)
		_, _, err2 = run(envWithout, without, c1-1)
		assert.Error(t, err1, expr)
		assert.Error(t, err2, expr)
	}
}
