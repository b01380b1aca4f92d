package stdlib

import (
	"fmt"
	"regexp"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
)

// patternArg is a function argument that is a pattern: a string, or for
// the functions that take one a list of strings, each checked by check.
type patternArg struct {
	fn    string
	arg   int
	check func(string) error
}

// patternArgs is the one list of which argument of which function is a
// pattern, and of what kind. The stdlib's own functions get a literal
// validator from it (literalValidators); CEL's matches is validated by
// cel-go (s.matches(re)) and by the policy compiler (matches(s, re)), which
// also checks, through LiteralCheck, the patterns kept in constant
// variables.
var patternArgs = []patternArg{
	{"glob.match", 1, validateGlob},
	{"glob.matchAny", 1, validateGlob},
	{"glob.matchName", 1, validateGlob},
	{"glob.couldMatch", 1, validateGlob},
	{"glob.couldMatchShell", 1, validateGlob},
	{"url.hostMatches", 1, validateDomainPattern},
	{overloads.Matches, 1, validateRegex},
}

// LiteralCheck returns the check of argument argIdx of function fn when that
// argument is a pattern (a glob, a domain pattern, a regular expression):
// the check a literal in that place gets when the policy compiles. The
// error says what is wrong with the pattern. Arguments count from 0 as in
// the function form of the call: the target of a method call such as
// s.matches(re) is argument 0.
func LiteralCheck(fn string, argIdx int) (func(string) error, bool) {
	for _, p := range patternArgs {
		if p.fn == fn && p.arg == argIdx {
			return p.check, true
		}
	}
	return nil, false
}

// literalValidators returns the literal validators of the pattern arguments
// of the functions of namespace ns.
func literalValidators(ns string) []cel.ASTValidator {
	var vs []cel.ASTValidator
	for _, p := range patternArgs {
		if strings.HasPrefix(p.fn, ns+".") {
			vs = append(vs, literalArgs(p.fn, p.arg, p.check))
		}
	}
	return vs
}

// validateRegex checks a regular expression as cel-go compiles the pattern
// of matches (RE2 syntax).
func validateRegex(re string) error {
	_, err := regexp.Compile(re)
	return err
}

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
