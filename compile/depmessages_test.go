package compile

import (
	"strings"
	"testing"

	celast "cel.dev/cel-go/common/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// celIssueMessages compiles expr in the default environment with the real
// cel-go and returns the messages of its issues.
func celIssueMessages(t *testing.T, expr string) []string {
	t.Helper()
	env, err := celenv.Default()
	require.NoError(t, err)
	_, iss := env.CEL().Compile(expr)
	require.Error(t, iss.Err(), "%s compiles; the case needs an expression cel-go rejects", expr)
	var msgs []string
	for _, e := range iss.Errors() {
		msgs = append(msgs, e.Message)
	}
	return msgs
}

// TestDepMessages pins each adapter of depmessages.go to the messages the
// cel-go in go.mod really produces. A failure after an upgrade names the
// adapter to update.
func TestDepMessages(t *testing.T) {
	tests := []struct {
		adapter string
		expr    string
		// want is what the adapter makes of the expression's (one) issue:
		// the function named, or "invalid literal"; "" when the adapter must
		// not recognise the issue.
		want string
	}{
		{"celCalledFunction", `foo(1)`, "foo"},
		{"celCalledFunction", `size(1, 2)`, "size"},
		{"celCalledFunction", `tool.startsWith(1)`, "startsWith"},
		{"celCalledFunction", `glob.match(tool)`, "glob.match"},
		{"celCalledFunction", `tool.size`, ""},
		{"celCalledFunction", `tool.matches("(")`, ""},
		{"celInvalidRegexLiteral", `tool.matches("(")`, "invalid literal"},
		{"celInvalidRegexLiteral", `"x".matches("a[")`, "invalid literal"},
		{"celInvalidRegexLiteral", `duration("x") > duration("1s")`, ""},
		{"celInvalidRegexLiteral", `matches(tool, 1)`, ""},
	}
	adapters := map[string]func(msg string) string{
		"celCalledFunction": func(msg string) string {
			fn, _ := celCalledFunction(msg)
			return fn
		},
		"celInvalidRegexLiteral": func(msg string) string {
			if celInvalidRegexLiteral(msg) {
				return "invalid literal"
			}
			return ""
		},
	}
	for _, tc := range tests {
		adapt := adapters[tc.adapter]
		require.NotNil(t, adapt, "no adapter %s", tc.adapter)
		msgs := celIssueMessages(t, tc.expr)
		require.Len(t, msgs, 1, "%s: %s reports %q; the case needs one issue", tc.adapter, tc.expr, msgs)
		if got := adapt(msgs[0]); got != tc.want {
			t.Errorf("%s (compile/depmessages.go) no longer fits the cel-go in go.mod: for %s it reports %q, which the adapter reads as %q, want %q; update the adapter",
				tc.adapter, tc.expr, msgs[0], got, tc.want)
		}
	}
}

// TestLiteralCode: the literal validators' issues are invalid_literal, told
// apart by their tag or adapter, never by words of the message.
func TestLiteralCode(t *testing.T) {
	tests := []struct {
		expr string
		want policy.Code
		msg  string // the diagnostic's message begins so
	}{
		{`tool.matches("(")`, policy.CodeInvalidLiteral, "invalid matches argument"},
		{`glob.match(tool, "[")`, policy.CodeInvalidLiteral, `glob.match: invalid glob pattern "["`},
		{`glob.matchAny(tool, ["a", "{b"])`, policy.CodeInvalidLiteral, `glob.matchAny: invalid glob pattern "{b"`},
		{`url.hostMatches(tool, "")`, policy.CodeInvalidLiteral, "url.hostMatches: empty domain pattern"},
		{`url.hostMatches(tool, "https://x.io/")`, policy.CodeInvalidLiteral, "url.hostMatches: domain pattern"},
		{`url.hostMatches(tool, "a.*.io")`, policy.CodeInvalidLiteral, "url.hostMatches: domain pattern"},
		{`url.hostMatches(tool, "a..io")`, policy.CodeInvalidLiteral, "url.hostMatches: domain pattern"},
		// Words of a literal error in other issues do not make them one.
		{`invalid_regex_pattern`, policy.CodeCELType, "undeclared reference"},
		{`duration("x") > duration("1s")`, policy.CodeCELType, "invalid duration argument"},
	}
	for _, tc := range tests {
		msgs := celIssueMessages(t, tc.expr)
		require.Len(t, msgs, 1, tc.expr)
		code, msg := literalCode(policy.CodeCELType, msgs[0])
		assert.Equal(t, tc.want, code, "%s: %q", tc.expr, msgs[0])
		assert.True(t, strings.HasPrefix(msg, tc.msg), "%s: message %q, want it to begin %q", tc.expr, msg, tc.msg)
		code, _ = literalCode(policy.CodeCELSyntax, msgs[0])
		assert.Equal(t, policy.CodeCELSyntax, code, "%s: only type errors are reclassified", tc.expr)
	}
}

// TestCelIsBind pins celIsBind to the comprehension cel-go's cel.bind
// expands to, and to nothing else.
func TestCelIsBind(t *testing.T) {
	env, err := celenv.Default()
	require.NoError(t, err)
	for expr, want := range map[string]bool{
		`cel.bind(x, ["a"], x.size() > 0)`: true,
		`[].all(x, true)`:                  false,
		`["a"].exists(x, x == tool)`:       false,
	} {
		ast, iss := env.CEL().Compile(expr)
		require.NoError(t, iss.Err(), expr)
		x := ast.NativeRep().Expr()
		require.Equal(t, celast.ComprehensionKind, x.Kind(), "%s is a comprehension", expr)
		assert.Equal(t, want, celIsBind(x.AsComprehension()), "celIsBind(%s) (compile/depmessages.go); update it to the cel-go in go.mod", expr)
	}
}
