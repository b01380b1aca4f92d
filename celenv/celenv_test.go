package celenv_test

import (
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/stdlib"
)

func TestVariablesAndTypes(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	for _, tc := range []struct{ expr, want string }{
		{`tool`, "string"},
		{`args`, "map(string, dyn)"},
		{`cwd`, "string"},
		{`phase`, "string"},
		{`counters`, "map(string, int)"},
		{`result`, "map(string, dyn)"},
		{`session`, "map(string, dyn)"},
		{`classes`, "list(string)"},
		{`command`, "string"},
		{`paths`, "list(string)"},
		{`call.id`, "string"},
		{`agent.name`, "dyn"},
		{`canonical(args)`, "string"},
		{`"a,b".split(",")`, "list(string)"},             // ext strings
		{`[1, 2].distinct()`, "list(int)"},               // ext lists
		{`sets.contains([1, 2], [1])`, "bool"},           // ext sets
		{`math.greatest(1, 2)`, "int"},                   // ext math
		{`base64.encode(b"x")`, "string"},                // ext encoders
		{`cel.bind(x, 1, x + 1)`, "int"},                 // ext bindings
		{`regex.replace("a", "a", "b")`, "string"},       // ext regex
		{`optional.of(1).orValue(2)`, "int"},             // optional types
		{`args.?timeout.orValue(0) > 1.5`, "bool"},       // cross-type numeric comparison
		{`shell.programs(args.command)`, "list(string)"}, // stdlib hook
		{`path.within(args.file_path, cwd)`, "bool"},     // stdlib
	} {
		ast, iss := env.CEL().Compile(tc.expr)
		if !assert.NoError(t, iss.Err(), tc.expr) {
			continue
		}
		assert.Equal(t, tc.want, ast.OutputType().String(), tc.expr)
	}
}

func TestLiteralsAreValidatedAtCompileTime(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	for _, expr := range []string{
		`args.command.matches("(")`,
		`duration("forever") > duration("1s")`,
		`timestamp("yesterday") < timestamp("2026-01-01T00:00:00Z")`,
		`glob.match(args.file_path, "src/[a")`,
	} {
		_, iss := env.CEL().Compile(expr)
		assert.Error(t, iss.Err(), expr)
	}
}

func TestUnknownNamesDoNotCompile(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	_, iss := env.CEL().Compile(`tol == "Bash"`)
	require.Error(t, iss.Err())
	assert.Contains(t, iss.Err().Error(), "undeclared reference to 'tol'")
}

func TestOptionsValidate(t *testing.T) {
	_, err := celenv.New(celenv.WithCostLimit(0))
	assert.Error(t, err)
	_, err = celenv.New(celenv.WithLibrary(nil))
	assert.Error(t, err)
	_, err = celenv.New(celenv.WithStdlib(stdlib.WithHome("relative/dir")))
	assert.Error(t, err)

	env, err := celenv.New(celenv.WithCostLimit(10), celenv.WithStdlib(stdlib.WithHome("/home/agent")),
		celenv.WithLibrary(cel.Function("host.answer", cel.Overload("host_answer", nil, cel.IntType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return types.Int(42) })))))
	require.NoError(t, err)
	assert.Equal(t, uint64(10), env.CostLimit())
	assert.Equal(t, "/home/agent", env.Stdlib().Home())
	_, iss := env.CEL().Compile(`host.answer() == 42`)
	assert.NoError(t, iss.Err(), "an embedding program's library is available")
}

func TestCostLimitStopsRunawayEvaluation(t *testing.T) {
	env, err := celenv.New(celenv.WithCostLimit(1000))
	require.NoError(t, err)
	ast, iss := env.CEL().Compile(`args.items.all(x, args.items.all(y, x != y || true))`)
	require.NoError(t, iss.Err())
	prg, err := env.CEL().Program(ast, env.ProgramOptions()...)
	require.NoError(t, err)
	items := make([]any, 200)
	for i := range items {
		items[i] = i
	}
	_, _, err = prg.Eval(map[string]any{"args": map[string]any{"items": items}})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "cost"), err.Error())
}

// The reserved names are the built-in variables and the stdlib's
// namespaces, as they were when policy kept a list of them by hand.
func TestReservedNames(t *testing.T) {
	assert.ElementsMatch(t, []string{
		"tool", "args", "cwd", "phase", "counters", "result", "session", "classes", "command", "paths", "call", "agent", "messages", "output", "definition", "resource",
		"shell", "path", "glob", "hash", "secrets", "url", "canonical", "mcp", "toolchain", "sql",
	}, celenv.ReservedNames())
}

// Every variable of the table is declared with its type.
func TestVariablesDeclared(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	for _, v := range celenv.Variables() {
		ast, iss := env.CEL().Compile(v.Name)
		require.NoError(t, iss.Err(), v.Name)
		assert.True(t, ast.OutputType().IsExactType(v.Type), "%s is %s, want %s", v.Name, ast.OutputType(), v.Type)
		assert.NotEmpty(t, v.Doc, v.Name)
		assert.NotZero(t, v.Size, "%s must say whether it counts toward the input size", v.Name)
	}
}
