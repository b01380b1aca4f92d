package compile

import (
	"slices"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// refs is what one expression reads itself.
type refs struct {
	vars     []string // policy variables, by name
	counters []string // counters read as counters.x or counters["x"]
	// allCounters is set when the expression uses the counters map other
	// than through a constant key, so any counter may be read.
	allCounters bool
}

// references walks the checked expression for what it reads: result and
// counters, directly or through variables (exprInfo), checking that the
// place allows them and that every counter read is declared in the policy;
// and the policy variables and counters it names, for the lint (refs).
func (c *compiler) references(sc scope, e policy.Expr, ast *cel.Ast, info map[string]exprInfo) (exprInfo, refs, bool) {
	native := ast.NativeRep()
	src := native.SourceInfo()
	var (
		ei exprInfo
		rs refs
		// named are the counters identifiers read as counters.x or
		// counters["x"], which name the counter they read.
		named = map[int64]bool{}
	)
	ok := true
	posOf := func(id int64) policy.Pos {
		loc := src.GetStartLocation(id)
		if loc.Line() <= 0 {
			return e.Pos
		}
		return e.PosAt(loc.Line(), loc.Column())
	}
	declared := func(name string) bool {
		return slices.ContainsFunc(sc.pol.Source.Counters, func(ct policy.Counter) bool { return ct.Name.Value == name })
	}
	checkCounter := func(pos policy.Pos, name string) {
		if !declared(name) {
			c.errorf(policy.CodeUndeclaredCounter, pos, "%s reads counters.%s, but policy %q declares no counter %q", sc.what, name, sc.pol.Name, name)
			ok = false
		}
	}
	consts := constEval{vars: info, posOf: posOf, what: sc.what}
	// Names a comprehension (or cel.bind) binds are its own, not the
	// built-in variables or the policy's: [..].exists(result, ...) reads no
	// result.
	walkScoped(native.Expr(), func(x celast.Expr, names boundNames) bool {
		switch x.Kind() {
		case celast.IdentKind:
			name := x.AsIdent()
			if names.bound(name) {
				return false
			}
			if i, builtin := builtinIndex[name]; builtin {
				ei.builtins |= 1 << i
				if !c.phaseHas(sc, name, posOf(x.ID()), "") {
					ok = false
				}
			}
			switch name {
			case celenv.VarResult:
				ei.result = true
				if sc.noResult {
					c.errorf(policy.CodeResultInBefore, posOf(x.ID()), "%s reads result, but there is no result %s; use phase: after", sc.what, sc.noResultWhen())
					ok = false
				}
			case celenv.VarCounters:
				ei.counters = true
				rs.allCounters = rs.allCounters || !named[x.ID()]
				if sc.noCounters {
					c.errorf(policy.CodeCounterInCounter, posOf(x.ID()), "%s reads counters; counter expressions cannot depend on counters", sc.what)
					ok = false
				}
			case celenv.VarCommand, celenv.VarPaths, celenv.VarClasses:
				c.classReads = append(c.classReads, classRead{pos: posOf(x.ID()), what: sc.what, name: name})
			default:
				if vi, isVar := info[name]; isVar {
					if !slices.Contains(rs.vars, name) {
						rs.vars = append(rs.vars, name)
					}
					if vi.result && sc.noResult {
						c.errorf(policy.CodeResultInBefore, posOf(x.ID()), "%s uses variable %s, which reads result; there is no result %s", sc.what, name, sc.noResultWhen())
						ok = false
					}
					if vi.counters && sc.noCounters {
						c.errorf(policy.CodeCounterInCounter, posOf(x.ID()), "%s uses variable %s, which reads counters; counter expressions cannot depend on counters", sc.what, name)
						ok = false
					}
					for i, v := range celenv.Variables() {
						if vi.builtins&(1<<i) != 0 && !c.phaseHas(sc, v.Name, posOf(x.ID()), name) {
							ok = false
							break // one error per use of the variable
						}
					}
					ei.result = ei.result || vi.result
					ei.counters = ei.counters || vi.counters
					ei.builtins |= vi.builtins
				}
			}
		case celast.SelectKind:
			sel := x.AsSelect()
			if op := sel.Operand(); op.Kind() == celast.IdentKind && op.AsIdent() == celenv.VarCounters && !names.bound(celenv.VarCounters) {
				rs.counters = append(rs.counters, sel.FieldName())
				named[op.ID()] = true
				if !sel.IsTestOnly() {
					pos := e.Pos
					if loc := src.GetStartLocation(x.ID()); loc.Line() > 0 {
						pos = fieldPos(e, loc.Line(), loc.Column())
					}
					checkCounter(pos, sel.FieldName())
				}
			}
		case celast.CallKind:
			call := x.AsCall()
			if call.FunctionName() == operators.Index && len(call.Args()) == 2 {
				m, k := call.Args()[0], call.Args()[1]
				if m.Kind() == celast.IdentKind && m.AsIdent() == celenv.VarCounters && !names.bound(celenv.VarCounters) && k.Kind() == celast.LiteralKind {
					if s, isStr := k.AsLiteral().(types.String); isStr {
						rs.counters = append(rs.counters, string(s))
						named[m.ID()] = true
						checkCounter(posOf(k.ID()), string(s))
					}
				}
			}
			// cel-go validates the regex literal of s.matches(re) but not of
			// matches(s, re).
			if call.FunctionName() == overloads.Matches && !call.IsMemberFunction() && len(call.Args()) == 2 {
				if lit := call.Args()[1]; lit.Kind() == celast.LiteralKind {
					if re, isStr := lit.AsLiteral().(types.String); isStr {
						if err := validRegex(string(re)); err != nil {
							c.errorf(policy.CodeInvalidLiteral, posOf(lit.ID()), "%s: invalid matches argument: %v", sc.what, err)
							ok = false
						}
					}
				}
			}
			if !c.patternConstants(sc, call, names, consts) {
				ok = false
			}
		}
		return true
	})
	if v, isConst := consts.value(native.Expr(), nil); isConst {
		ei.value = &v
	}
	return ei, rs, ok
}

// validRegex is the check of the pattern of matches.
var validRegex, _ = stdlib.LiteralCheck(overloads.Matches, 1)

// walkScoped visits every node of a checked expression, telling visit which
// names the enclosing comprehensions (and cel.bind) bind there. visit
// returns false to skip the node's children.
func walkScoped(x celast.Expr, visit func(x celast.Expr, names boundNames) bool) {
	var walk func(x celast.Expr, names boundNames)
	walk = func(x celast.Expr, names boundNames) {
		if !visit(x, names) {
			return
		}
		switch x.Kind() {
		case celast.SelectKind:
			walk(x.AsSelect().Operand(), names)
		case celast.CallKind:
			call := x.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target(), names)
			}
			for _, a := range call.Args() {
				walk(a, names)
			}
		case celast.ListKind:
			for _, e := range x.AsList().Elements() {
				walk(e, names)
			}
		case celast.MapKind:
			for _, e := range x.AsMap().Entries() {
				me := e.AsMapEntry()
				walk(me.Key(), names)
				walk(me.Value(), names)
			}
		case celast.StructKind:
			for _, f := range x.AsStruct().Fields() {
				walk(f.AsStructField().Value(), names)
			}
		case celast.ComprehensionKind:
			comp := x.AsComprehension()
			walk(comp.IterRange(), names)
			walk(comp.AccuInit(), names)
			inner := slices.Clone(names)
			if celIsBind(comp) {
				inner = append(inner, boundName{name: comp.AccuVar(), value: comp.AccuInit()})
			} else {
				inner = append(inner, boundName{name: comp.IterVar()}, boundName{name: comp.AccuVar()})
				if comp.HasIterVar2() {
					inner = append(inner, boundName{name: comp.IterVar2()})
				}
			}
			walk(comp.LoopCondition(), inner)
			walk(comp.LoopStep(), inner)
			walk(comp.Result(), inner)
		}
	}
	walk(x, nil)
}

// boundNames are the names bound where a node of an expression sits, the
// innermost last: a comprehension's variables, and the name of a cel.bind
// with the expression it is bound to.
type boundNames []boundName

type boundName struct {
	name string
	// value is the expression cel.bind binds the name to; nil for a
	// comprehension's variables.
	value celast.Expr
}

// bound reports whether name is bound here: it is not a built-in or policy
// variable.
func (b boundNames) bound(name string) bool {
	return slices.ContainsFunc(b, func(n boundName) bool { return n.name == name })
}

// binding returns the expression a cel.bind binds name to here, with the
// names bound where that expression sits; false when name is not bound by
// cel.bind here.
func (b boundNames) binding(name string) (celast.Expr, boundNames, bool) {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i].name == name {
			return b[i].value, b[:i], b[i].value != nil
		}
	}
	return nil, nil, false
}
