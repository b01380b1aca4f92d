package stdlib

import (
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
)

// testLib is a Lib with a fixed home, so results do not depend on the host.
func testLib(t testing.TB, opts ...Option) *Lib {
	t.Helper()
	l, err := New(append([]Option{WithHome("/home/me")}, opts...)...)
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	return l
}

func testEnv(t testing.TB, l *Lib) *cel.Env {
	t.Helper()
	opts := append([]cel.EnvOption{
		cel.Variable("cmd", cel.StringType),
		cel.Variable("p", cel.StringType),
		cel.Variable("cwd", cel.StringType),
		cel.Variable("text", cel.StringType),
		cel.Variable("x", cel.DynType),
		ext.Strings(), // as in celenv; the tests use substring
	}, l.EnvOptions()...)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		t.Fatalf("cel.NewEnv() error: %v", err)
	}
	return env
}

func compile(t testing.TB, env *cel.Env, expr string) cel.Program {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("Compile(%q) error: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatalf("Program(%q) error: %v", expr, err)
	}
	return prg
}

// evalIn evaluates expr with vars and the scope's late-bound functions.
func evalIn(t testing.TB, env *cel.Env, scope *CallScope, expr string, vars map[string]any) ref.Val {
	t.Helper()
	prg := compile(t, env, expr)
	if vars == nil {
		vars = map[string]any{}
	}
	act, err := cel.FunctionVars(vars, scope.Functions())
	if err != nil {
		t.Fatalf("FunctionVars() error: %v", err)
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		t.Fatalf("Eval(%q) error: %v", expr, err)
	}
	return out
}
