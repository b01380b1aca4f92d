package celenv

import (
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/stretchr/testify/assert"
)

func TestRequiredLiteral(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{`rm\s+-rf`, "-rf"},
		{`git\s+push\s+.*--force`, "--force"},
		{`(curl|wget)[^|]*\|\s*sh`, "sh"},
		{`^abc$`, "abc"},
		{`(?i)secret`, ""},
		{`a|b`, ""},
		{`x*`, ""},
		{`(ab)+cd`, "ab"},
		{`(?:npm){2,}\s+publish`, "publish"},
		{`[a-z]+`, ""},
		{`(`, ""},
	} {
		assert.Equal(t, tc.want, RequiredLiteral(tc.pattern), tc.pattern)
	}
}

func TestRequiredLiterals(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{`rm\s+-rf`, []string{"-rf"}},
		{`a|b`, nil},
		{`foo|bar`, []string{"foo", "bar"}},
		{`\b(?:foo\d+|ba[rz]_x|qux)`, []string{"foo", "ba", "qux"}},
		{`(?:foo|bar)?x`, []string{"x"}},
		{`(?i)foo|bar`, nil},
		{`x(?:foo|bar)y`, []string{"foo", "bar"}},
		{`a|bc|de|fg|hi|jk|lm|no|pq|rs`, nil},
		// The extra tokens of secret-redaction: one literal per kind.
		{`\b(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-)?[A-Za-z0-9_-]{32,}|AIza[0-9A-Za-z_-]{35}|(?:sk|rk)_live_[0-9A-Za-z]{24,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,})`,
			[]string{"sk-", "AIza", "_live_", "npm_", "pypi-", "hf_"}},
	} {
		assert.Equal(t, tc.want, RequiredLiterals(tc.pattern), tc.pattern)
	}
}

// Through CEL: both forms of matches use the prefilter and keep the
// standard answers, including errors from the operand.
func TestMatchesThroughCEL(t *testing.T) {
	env, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr    string
		want    any
		wantErr bool
	}{
		{`args.command.matches("rm\\s+-rf")`, true, false},
		{`matches(args.command, "git\\s+push")`, false, false},
		{`args.command.matches("^rm")`, true, false},
		{`args.missing.matches("rm")`, nil, true},
	} {
		ast, iss := env.CEL().Compile(tc.expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", tc.expr, iss.Err())
		}
		for _, opts := range [][]cel.ProgramOption{env.ProgramOptions(), env.ProgramOptionsFor(ast)} {
			prg, err := env.CEL().Program(ast, opts...)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := prg.Eval(map[string]any{"args": map[string]any{"command": "rm  -rf build"}})
			if tc.wantErr {
				assert.Error(t, err, tc.expr)
				continue
			}
			if assert.NoError(t, err, tc.expr) {
				assert.Equal(t, tc.want, out.Value(), tc.expr)
			}
		}
	}
}

// A constant pattern that does not compile is still refused when the
// program is planned (not at its first evaluation), with regexp.Compile's
// error: here on an expression only parsed, so that no check-time
// validator sees the literal first.
func TestInvalidPatternRefusedAtPlan(t *testing.T) {
	env, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{`"x".matches("(")`, `matches("x", "a**")`} {
		ast, iss := env.CEL().Parse(expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		_, err := env.CEL().Program(ast, env.ProgramOptions()...)
		if assert.Error(t, err, expr) {
			assert.Contains(t, err.Error(), "error parsing regexp", expr)
		}
	}
}
