package compile

import (
	"fmt"
	"slices"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// Patterns kept in variables. A literal pattern argument (a glob, a domain
// pattern, a regular expression: stdlib.LiteralCheck) is checked where it is
// written by the literal validators. A pattern argument that names a
// constant instead — a policy variable, or a cel.bind name, whose value is a
// string literal or a list of them, directly, through other variables or
// joined with + — gets the same check for each string literal it is made
// of, reported as invalid_literal at that literal: in the variable, once
// however many calls use it.

// constString is one string literal a constant is made of.
type constString struct {
	value string
	pos   policy.Pos
	// what is the expression it is written in, as in "variable globs".
	what string
}

// constValue is the value of an expression that is a constant string or a
// list of strings, as the string literals it is made of (each once: a
// variable joined with itself is checked once).
type constValue struct {
	list bool
	strs []constString
}

// constEval finds the constant values of one expression.
type constEval struct {
	// vars is what the policy's variables declared so far are.
	vars map[string]exprInfo
	// posOf maps a node of the expression to the file.
	posOf func(id int64) policy.Pos
	what  string
}

// value returns the value of x, an expression where names are bound, when
// it is a constant string or list of strings.
func (ev constEval) value(x celast.Expr, names boundNames) (constValue, bool) {
	switch x.Kind() {
	case celast.LiteralKind:
		if s, ok := x.AsLiteral().(types.String); ok {
			return constValue{strs: []constString{{value: string(s), pos: ev.posOf(x.ID()), what: ev.what}}}, true
		}
	case celast.ListKind:
		l := x.AsList()
		if len(l.OptionalIndices()) > 0 {
			return constValue{}, false
		}
		var strs []constString
		for _, e := range l.Elements() {
			ve, ok := ev.value(e, names)
			if !ok || ve.list {
				return constValue{}, false
			}
			strs = append(strs, ve.strs...)
		}
		return constValue{list: true, strs: distinct(strs)}, true
	case celast.IdentKind:
		name := x.AsIdent()
		if names.bound(name) {
			if init, outer, ok := names.binding(name); ok {
				return ev.value(init, outer)
			}
			return constValue{}, false
		}
		if vi, ok := ev.vars[name]; ok && vi.value != nil {
			return *vi.value, true
		}
	case celast.CallKind:
		// Lists joined with +; strings joined with + make a new string,
		// which no literal spells.
		call := x.AsCall()
		if call.FunctionName() != operators.Add || len(call.Args()) != 2 {
			return constValue{}, false
		}
		a, okA := ev.value(call.Args()[0], names)
		b, okB := ev.value(call.Args()[1], names)
		if okA && okB && a.list && b.list {
			return constValue{list: true, strs: distinct(slices.Concat(a.strs, b.strs))}, true
		}
	}
	return constValue{}, false
}

// distinct drops, in place, the literals listed before.
func distinct(strs []constString) []constString {
	seen := make(map[policy.Pos]bool, len(strs))
	return slices.DeleteFunc(strs, func(s constString) bool {
		dup := seen[s.pos]
		seen[s.pos] = true
		return dup
	})
}

// patternConstants checks the pattern arguments of call that are constants
// (see above) and reports each bad literal once; it reports false when one
// is bad, reported here or before. The literals the literal validators see
// — an argument that is a literal, the literal elements of a list literal —
// are left to them.
func (c *compiler) patternConstants(sc scope, call celast.CallExpr, names boundNames, ev constEval) bool {
	args := call.Args()
	if call.IsMemberFunction() {
		args = append([]celast.Expr{call.Target()}, args...)
	}
	ok := true
	for i, arg := range args {
		check, isPattern := stdlib.LiteralCheck(call.FunctionName(), i)
		if !isPattern {
			continue
		}
		for _, x := range unvalidated(arg) {
			v, isConst := ev.value(x, names)
			if !isConst {
				continue
			}
			for _, s := range v.strs {
				err := c.checkPattern(call.FunctionName(), i, s, check)
				if err == nil {
					continue
				}
				ok = false
				if c.patterns.reported[s.pos] {
					continue
				}
				c.patterns.reported[s.pos] = true
				use := ev.posOf(x.ID())
				by := ""
				if s.what != sc.what {
					by = " by " + sc.what
				}
				c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeInvalidLiteral, Severity: policy.SeverityError,
					Pos: s.pos, Related: []policy.Pos{use},
					Message: fmt.Sprintf("%s: %s: %v (passed to %s%s at %s)", s.what, call.FunctionName(), err, call.FunctionName(), by, use)})
			}
		}
	}
	return ok
}

// patternChecks remembers the checks of the literals of constants: a
// variable used by many calls is checked once for each function and
// reported once.
type patternChecks struct {
	// checked is the result of each check made, by literal, function and
	// argument.
	checked map[patternUse]error
	// reported are the literals reported as bad patterns.
	reported map[policy.Pos]bool
}

type patternUse struct {
	pos policy.Pos
	fn  string
	arg int
}

// checkPattern checks literal s as argument arg of function fn, once.
func (c *compiler) checkPattern(fn string, arg int, s constString, check func(string) error) error {
	if c.patterns.checked == nil {
		c.patterns = patternChecks{checked: map[patternUse]error{}, reported: map[policy.Pos]bool{}}
	}
	use := patternUse{s.pos, fn, arg}
	err, done := c.patterns.checked[use]
	if !done {
		err = check(s.value)
		c.patterns.checked[use] = err
	}
	return err
}

// unvalidated returns the parts of a pattern argument no literal validator
// checks: the argument, unless it is a literal; for a list literal, its
// elements that are not literals.
func unvalidated(arg celast.Expr) []celast.Expr {
	switch arg.Kind() {
	case celast.LiteralKind:
		return nil
	case celast.ListKind:
		var out []celast.Expr
		for _, e := range arg.AsList().Elements() {
			if e.Kind() != celast.LiteralKind {
				out = append(out, e)
			}
		}
		return out
	}
	return []celast.Expr{arg}
}
