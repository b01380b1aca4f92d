package stdlib

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// invalidLiteralTag begins the message of every issue a literal validator
// reports, so that a compiler can tell these issues from cel-go's without
// reading their wording: see CutInvalidLiteral.
const invalidLiteralTag = "invalid literal: "

// CutInvalidLiteral reports whether msg, the message of a CEL issue, was
// reported by a stdlib literal validator: a literal glob or domain-pattern
// argument that can never work, reported at the literal. If so it returns
// the message without its tag: the function, a colon and the problem, as in
// `glob.match: invalid glob pattern "["`.
func CutInvalidLiteral(msg string) (string, bool) {
	return strings.CutPrefix(msg, invalidLiteralTag)
}

// literalArgs returns a cel.ASTValidator that checks argument argIdx of every
// call to fn when it is a string literal, or a list literal (each string
// element is checked). A bad literal is reported at its own expression id, so
// the policy compiler can point at the YAML line and column, in a message
// CutInvalidLiteral recognises.
func literalArgs(fn string, argIdx int, check func(string) error) cel.ASTValidator {
	return literalArgsValidator{fn: fn, idx: argIdx, check: check}
}

type literalArgsValidator struct {
	fn    string
	idx   int
	check func(string) error
}

// Name implements cel.ASTValidator.
func (v literalArgsValidator) Name() string {
	return fmt.Sprintf("celguard.validator.%s.%d", v.fn, v.idx)
}

// Validate implements cel.ASTValidator.
func (v literalArgsValidator) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	root := ast.NavigateAST(a)
	for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(v.fn)) {
		args := call.AsCall().Args()
		if v.idx >= len(args) {
			continue
		}
		arg := args[v.idx]
		switch arg.Kind() {
		case ast.LiteralKind:
			v.checkLiteral(arg, iss)
		case ast.ListKind:
			for _, e := range arg.AsList().Elements() {
				if e.Kind() == ast.LiteralKind {
					v.checkLiteral(e, iss)
				}
			}
		}
	}
}

func (v literalArgsValidator) checkLiteral(e ast.Expr, iss *cel.Issues) {
	s, ok := e.AsLiteral().(types.String)
	if !ok {
		return
	}
	if err := v.check(string(s)); err != nil {
		iss.ReportErrorAtID(e.ID(), "%s%s: %v", invalidLiteralTag, v.fn, err)
	}
}
