package compile

import (
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
)

// ArgString is the shape of the most common variable of the policies and
// of the documentation's examples, an argument read as a string with a
// default:
//
//	has(args.command) ? string(args.command) : ""
//	has(args.channel_id) ? string(args.channel_id) : has(args.channel) ? string(args.channel) : ""
//
// Fields are the arguments tried in order (command; channel_id then
// channel), Otherwise the string literal when none is present.
//
// An evaluation can answer such an expression from the call's arguments
// without running the program, for the calls where the answer is plain: the
// first field present holds a Go string (string() of a CEL string is that
// string), or no field is present (the literal). Any other value (a
// number, a list, null) is left to the program, whose conversion decides
// it or fails as it always did.
type ArgString struct {
	Fields    []string
	Otherwise string
}

// ArgString returns the expression's ArgString shape, or nil when it has
// another shape. It is worked out once per program, from the planned tree.
func (p *Program) ArgString() *ArgString {
	p.shapes()
	return p.arg
}

// VarMatches returns the expression's VarMatches shape, or nil when it has
// another shape. It is worked out once per program, from the planned tree.
func (p *Program) VarMatches() *VarMatches {
	p.shapes()
	return p.vm
}

// shapes works out the program's ArgString and VarMatches shapes, once.
func (p *Program) shapes() {
	p.made()
	p.argOnce.Do(func() {
		if p.plan != nil {
			p.arg = argStringOf(p.plan)
			p.vm = varMatchesOf(p.plan)
		}
	})
}

// VarMatches is the shape of most rule conditions over a command or a
// path: a variable (the policy's, or a built-in) matched against a constant
// pattern, VAR.matches("...") or matches(VAR, "..."), the pattern
// possibly kept in a constant of the policy (planned as its literal).
//
// An evaluation can answer it without running the program when the
// variable is a string: Pattern gives the answer the program's matches
// would, through the same literal prefilter. Any other value (an error, a
// number) is left to the program.
type VarMatches struct {
	Name    string
	Pattern *celenv.Pattern
}

// varMatchesOf returns the VarMatches shape of a checked expression, or
// nil: the matches call of the standard overloads on an identifier the
// checker resolved to a variable and a string literal.
func varMatchesOf(a *celast.AST) *VarMatches {
	e := a.Expr()
	if e.Kind() != celast.CallKind {
		return nil
	}
	c := e.AsCall()
	if c.FunctionName() != overloads.Matches {
		return nil
	}
	args := c.Args()
	if c.IsMemberFunction() {
		args = append([]celast.Expr{c.Target()}, args...)
	}
	if len(args) != 2 {
		return nil
	}
	ids := a.GetOverloadIDs(e.ID())
	if len(ids) != 1 || ids[0] != overloads.MatchesString && ids[0] != overloads.Matches {
		return nil
	}
	v, lit := args[0], args[1]
	if v.Kind() != celast.IdentKind || lit.Kind() != celast.LiteralKind {
		return nil
	}
	ref, ok := a.ReferenceMap()[v.ID()]
	if !ok || ref.Name != v.AsIdent() || ref.Value != nil || len(ref.OverloadIDs) != 0 {
		return nil
	}
	pattern, ok := lit.AsLiteral().(types.String)
	if !ok {
		return nil
	}
	pat, err := celenv.NewPattern(string(pattern))
	if err != nil {
		return nil
	}
	return &VarMatches{Name: v.AsIdent(), Pattern: pat}
}

// Value is the expression's value for a call with arguments args, and
// true; false when the arguments are not plain (ArgString) and the
// program must decide.
func (a *ArgString) Value(args map[string]any) (types.String, bool) {
	for _, f := range a.Fields {
		v, ok := args[f]
		if !ok {
			continue
		}
		s, ok := v.(string)
		return types.String(s), ok
	}
	return types.String(a.Otherwise), true
}

// argStringOf returns the ArgString shape of a checked expression, or
// nil. Every name is checked against the checker's references, so that
// `args` is the built-in variable and `string` the standard conversion.
func argStringOf(a *celast.AST) *ArgString {
	out := &ArgString{}
	e := a.Expr()
	for {
		if e.Kind() == celast.LiteralKind {
			s, ok := e.AsLiteral().(types.String)
			if !ok {
				return nil
			}
			out.Otherwise = string(s)
			return out
		}
		if e.Kind() != celast.CallKind {
			return nil
		}
		c := e.AsCall()
		if c.FunctionName() != "_?_:_" || c.IsMemberFunction() || len(c.Args()) != 3 {
			return nil
		}
		cond, then := c.Args()[0], c.Args()[1]
		field, ok := argSelect(a, cond, true)
		if !ok {
			return nil
		}
		if then.Kind() != celast.CallKind {
			return nil
		}
		conv := then.AsCall()
		if conv.FunctionName() != "string" || conv.IsMemberFunction() || len(conv.Args()) != 1 ||
			!stringConversion(a.GetOverloadIDs(then.ID())) {
			return nil
		}
		if f, ok := argSelect(a, conv.Args()[0], false); !ok || f != field {
			return nil
		}
		out.Fields = append(out.Fields, field)
		e = c.Args()[2]
	}
}

// argSelect returns F when e is args.F (has(args.F) when testOnly), args
// being the built-in variable.
func argSelect(a *celast.AST, e celast.Expr, testOnly bool) (string, bool) {
	if e.Kind() != celast.SelectKind {
		return "", false
	}
	s := e.AsSelect()
	if s.IsTestOnly() != testOnly {
		return "", false
	}
	op := s.Operand()
	if op.Kind() != celast.IdentKind || op.AsIdent() != celenv.VarArgs {
		return "", false
	}
	ref, ok := a.ReferenceMap()[op.ID()]
	if !ok || ref.Name != celenv.VarArgs || ref.Value != nil || len(ref.OverloadIDs) != 0 {
		return "", false
	}
	return s.FieldName(), true
}

// stringConversion reports whether the checker resolved a call of string
// to overloads of the standard conversion only (a dyn argument lists all of
// them), one of them being the conversion of a string.
func stringConversion(ids []string) bool {
	hasString := false
	for _, id := range ids {
		switch id {
		case overloads.StringToString:
			hasString = true
		case overloads.IntToString, overloads.UintToString, overloads.DoubleToString, overloads.BytesToString,
			overloads.TimestampToString, overloads.DurationToString, overloads.BoolToString:
		default:
			return false
		}
	}
	return hasString
}
