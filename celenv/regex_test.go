package celenv

import (
	"regexp"
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

// The prefilter must never change an answer.
func FuzzPrefilterAgreesWithRegexp(f *testing.F) {
	for _, p := range []string{`rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)`, `git\s+push\s+.*(--force|-f)\b`, `(?i)SeCrEt`, `a+b{2,3}c`, `(ab)+|cd`, `^(ls|cat)\b`, `\.env(\.[a-z]+)?$`} {
		for _, in := range []string{"", "rm -rf /", "git push --force", "secret", "aabbbc", "ababcd", "ls -la", "x/.env.local"} {
			f.Add(p, in)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, in string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		match, err := compileMatcher(pattern)
		if err != nil {
			t.Fatalf("compileMatcher(%q) failed where regexp.Compile did not: %v", pattern, err)
		}
		if got, want := match(in), re.MatchString(in); got != want {
			t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (literal %q)", pattern, in, got, want, RequiredLiteral(pattern))
		}
	})
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
