package compile

import (
	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/policy"
)

// Constant patterns kept in names. cel-go compiles the pattern of `matches`
// once, when it plans the program, only when the pattern is a literal in the
// expression; celenv adds a literal prefilter at the same place. A pattern
// kept in a policy variable (or a cel.bind name) whose value is one string
// literal is a constant all the same, but the planner sees a name, and the
// regular expression was compiled again at every evaluation, without a
// prefilter (secret-redaction's extra_token_pattern: half the time of an
// after-call decision). inlinePatterns plans such a program from a copy of
// its expression where each such pattern argument is the literal itself:
// the same value, so the same answers, compiled once.

// inlinePatterns returns ast with the pattern argument of every `matches`
// call that is a constant string (patterns.go's constEval: a policy
// variable, a cel.bind name, through other variables) but not a literal
// replaced by that literal; ast itself when there is none. info is what the
// policy's variables are.
func inlinePatterns(ast *cel.Ast, info map[string]exprInfo) *cel.Ast {
	ev := constEval{vars: info, posOf: func(int64) policy.Pos { return policy.Pos{} }}
	hits := map[int64]string{}
	walkScoped(ast.NativeRep().Expr(), func(x celast.Expr, names boundNames) bool {
		if x.Kind() != celast.CallKind {
			return true
		}
		call := x.AsCall()
		if call.FunctionName() != overloads.Matches {
			return true
		}
		args := call.Args()
		pattern := len(args) - 1 // s.matches(p) or matches(s, p)
		if pattern < 0 || args[pattern].Kind() == celast.LiteralKind {
			return true
		}
		if v, ok := ev.value(args[pattern], names); ok && !v.list && len(v.strs) == 1 {
			hits[args[pattern].ID()] = v.strs[0].value
		}
		return true
	})
	if len(hits) == 0 {
		return ast
	}
	// A copy: the checked expression itself stays as written, for the
	// explanations, the lint and the cost analysis.
	pb, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		return ast
	}
	cp := cel.CheckedExprToAst(pb)
	native := cp.NativeRep()
	fac := celast.NewExprFactory()
	walkScoped(native.Expr(), func(x celast.Expr, _ boundNames) bool {
		if v, ok := hits[x.ID()]; ok {
			x.SetKindCase(fac.NewLiteral(x.ID(), types.String(v)))
			delete(native.ReferenceMap(), x.ID())
			return false
		}
		return true
	})
	return cp
}
