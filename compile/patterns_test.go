package compile_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TestPatternVariables checks the patterns kept in constant variables: a
// bad one is an invalid_literal error at its string literal, pointing at
// where it is passed to the function; anything not a constant is left to
// run time, without a diagnostic.
func TestPatternVariables(t *testing.T) {
	tests := []struct {
		name string
		// vars are the expressions of variables v0, v1, ... (line 6, 8, ...).
		vars      []string
		condition string // line 7+2*len(vars)
		// want is the error's column on the line of variable want.v (-1:
		// the condition), with the text of the literal; zero: no error.
		want struct{ v, col int }
		// msg is in the error's message.
		msg string
	}{
		{name: "good list", vars: []string{`["src/**", "*.go", "[abc]"]`}, condition: `glob.matchAny(string(args.path), v0)`},
		{name: "good host patterns", vars: []string{`["github.com", "*.github.com", "*"]`}, condition: `url.hostMatches(string(args.url), v0)`},
		{name: "good regex", vars: []string{`"^rm\\s+-rf"`}, condition: `string(args.command).matches(v0)`},
		{name: "empty list", vars: []string{`[]`}, condition: `glob.matchAny(string(args.path), v0)`},
		{name: "from the call", vars: []string{`has(args.p) ? [string(args.p)] : ["[x"]`}, condition: `glob.matchAny(string(args.path), v0)`},
		{name: "indexed", vars: []string{`["[x"]`}, condition: `glob.match(string(args.path), v0[0])`},
		{name: "joined string", vars: []string{`"src/["`, `v0 + "a]"`}, condition: `glob.match(string(args.path), v1)`},
		{name: "not a pattern argument", vars: []string{`"[x"`}, condition: `glob.match(v0, "*")`},
		{name: "comprehension shadows", vars: []string{`"[x"`}, condition: `["a"].exists(v0, glob.match(string(args.path), v0))`},

		{name: "bad glob", vars: []string{`["ok", "src/[a"]`}, condition: `glob.matchAny(string(args.path), v0)`,
			want: struct{ v, col int }{0, 25}, msg: `variable v0: glob.matchAny: invalid glob pattern "src/[a" (passed to glob.matchAny by rule r condition at p.yaml:9:50)`},
		{name: "bad glob string", vars: []string{`"src/[a"`}, condition: `glob.matchName(string(args.path), v0)`,
			want: struct{ v, col int }{0, 18}, msg: `glob.matchName: invalid glob pattern`},
		{name: "couldMatchShell", vars: []string{`"src/[a"`}, condition: `glob.couldMatchShell(string(args.path), v0)`,
			want: struct{ v, col int }{0, 18}, msg: `glob.couldMatchShell: invalid glob pattern`},
		{name: "url for a host", vars: []string{`"https://example.com/"`}, condition: `url.hostMatches(string(args.url), v0)`,
			want: struct{ v, col int }{0, 18}, msg: `url.hostMatches: domain pattern "https://example.com/"`},
		{name: "regex, function form", vars: []string{`"a("`}, condition: `matches(string(args.command), v0)`,
			want: struct{ v, col int }{0, 18}, msg: "variable v0: matches: error parsing regexp: missing closing ): `a(`"},
		{name: "through a variable", vars: []string{`["[a"]`, `v0`}, condition: `glob.matchAny(string(args.path), v1)`,
			want: struct{ v, col int }{0, 19}, msg: `variable v0: glob.matchAny`},
		{name: "joined lists", vars: []string{`["ok"]`, `["[b"]`, `v0 + v1 + ["c"]`}, condition: `glob.matchAny(string(args.path), v2)`,
			want: struct{ v, col int }{1, 19}, msg: `variable v1:`},
		{name: "in a list literal", vars: []string{`"[a"`}, condition: `glob.matchAny(string(args.path), ["ok", v0])`,
			want: struct{ v, col int }{0, 18}, msg: `variable v0: glob.matchAny`},
		{name: "cel.bind of a variable", vars: []string{`["[a"]`}, condition: `cel.bind(p, v0, glob.matchAny(string(args.path), p))`,
			want: struct{ v, col int }{0, 19}, msg: `variable v0: glob.matchAny`},
		{name: "cel.bind inline", condition: `cel.bind(p, ["[a"], glob.matchAny(string(args.path), p))`,
			want: struct{ v, col int }{-1, 30}, msg: `rule r condition: glob.matchAny: invalid glob pattern "[a" (passed to glob.matchAny at p.yaml:7:70)`},
		{name: "nested cel.bind", condition: `cel.bind(p, ["[a"], cel.bind(q, p + ["b"], glob.matchAny(string(args.path), q)))`,
			want: struct{ v, col int }{-1, 30}, msg: `glob.matchAny`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := header + "name: p\nvariables:\n"
			if len(tt.vars) == 0 {
				body = header + "name: p\nvariables: []\n"
			}
			for i, v := range tt.vars {
				body += fmt.Sprintf("  - name: v%d\n    expression: '%s'\n", i, v)
			}
			body += "rules:\n  - id: r\n    condition: '" + tt.condition + "'\n    verdict: block\n    reason: r\n"
			_, ds, err := compile.Check([]policy.Source{src("p.yaml", body)})
			require.NoError(t, err)
			var errs policy.Diagnostics
			for _, d := range ds {
				if d.Severity == policy.SeverityError {
					errs = append(errs, d)
				}
			}
			if tt.msg == "" {
				assert.Empty(t, errs, "got errors, want none (a pattern that is not a constant is checked at run time)")
				return
			}
			require.Len(t, errs, 1, "got %v, want one invalid_literal", errs)
			line := 6 + 2*tt.want.v
			if tt.want.v < 0 {
				line = 7 + 2*len(tt.vars)
			}
			assert.Equal(t, policy.CodeInvalidLiteral, errs[0].Code)
			assert.Equal(t, policy.Pos{File: "p.yaml", Line: line, Col: tt.want.col}, errs[0].Pos, "at the string literal: %s", errs[0])
			assert.Contains(t, errs[0].Message, tt.msg)
			require.Len(t, errs[0].Related, 1, "the related position is the use")
			assert.Equal(t, 7+2*len(tt.vars), errs[0].Related[0].Line, "the use is in the condition")
		})
	}
}

// TestPatternVariablesCached checks that a compile served from the AST
// cache reports a bad pattern variable as a cold one does: the check reads
// the checked AST, not cel-go's validators.
func TestPatternVariablesCached(t *testing.T) {
	good := src("p.yaml", header+"name: p\nvariables:\n  - {name: v, expression: '[\"ok\"]'}\nrules:\n  - {id: r, condition: 'glob.matchAny(string(args.path), v)', verdict: block, reason: r}\n")
	bad := src("p.yaml", header+"name: p\nvariables:\n  - {name: v, expression: '[\"[a\"]'}\nrules:\n  - {id: r, condition: 'glob.matchAny(string(args.path), v)', verdict: block, reason: r}\n")
	cache := &compile.MemoryASTCache{}
	_, err := compile.Compile([]policy.Source{good}, compile.WithASTCache(cache))
	require.NoError(t, err)
	for range 2 {
		_, err = compile.Compile([]policy.Source{bad}, compile.WithASTCache(cache))
		var ds policy.Diagnostics
		require.ErrorAs(t, err, &ds)
		require.Len(t, ds, 1)
		assert.Equal(t, policy.CodeInvalidLiteral, ds[0].Code)
		assert.Equal(t, policy.Pos{File: "p.yaml", Line: 5, Col: 29}, ds[0].Pos)
	}
}
