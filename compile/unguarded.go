package compile

import (
	"slices"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// unguardedArgs reports the rules that match every tool and read an
// argument (args.X or args["X"]) their condition never tests with
// has(args.X) or "X" in args: on every call of a tool without that argument
// the condition is an error, which the failure policy decides (block by
// default), so a rule meant for Bash blocks every Read. A guard anywhere in
// the condition counts, and args.?X is guarded by construction.
func (l *linter) unguardedArgs() {
	for _, r := range l.c.set.rules {
		if r.Source.Condition == nil || !matchesAll(r) {
			continue
		}
		ce, found := l.byPos[r.Source.Condition.Pos]
		if !found {
			continue
		}
		e := ce.expr
		src := ce.ast.NativeRep().SourceInfo()
		type read struct {
			field string
			pos   policy.Pos
		}
		var reads []read
		guarded := map[string]bool{}
		isArgs := func(x celast.Expr, names boundNames) bool {
			return x.Kind() == celast.IdentKind && x.AsIdent() == celenv.VarArgs && !names.bound(celenv.VarArgs)
		}
		walkScoped(ce.ast.NativeRep().Expr(), func(x celast.Expr, names boundNames) bool {
			switch x.Kind() {
			case celast.SelectKind:
				sel := x.AsSelect()
				if !isArgs(sel.Operand(), names) {
					return true
				}
				if sel.IsTestOnly() {
					guarded[sel.FieldName()] = true
					return false
				}
				pos := e.Pos
				if loc := src.GetStartLocation(x.ID()); loc.Line() > 0 {
					pos = fieldPos(e, loc.Line(), loc.Column())
				}
				reads = append(reads, read{sel.FieldName(), pos})
			case celast.CallKind:
				call := x.AsCall()
				if len(call.Args()) != 2 {
					return true
				}
				a, b := call.Args()[0], call.Args()[1]
				switch call.FunctionName() {
				case operators.In:
					if k, ok := stringLiteral(a); ok && isArgs(b, names) {
						guarded[k] = true
					}
				case operators.Index:
					if k, ok := stringLiteral(b); ok && isArgs(a, names) {
						pos := e.Pos
						if loc := src.GetStartLocation(b.ID()); loc.Line() > 0 {
							pos = e.PosAt(loc.Line(), loc.Column())
						}
						reads = append(reads, read{k, pos})
					}
				}
			}
			return true
		})
		var seen []string
		for _, rd := range reads {
			if guarded[rd.field] || slices.Contains(seen, rd.field) {
				continue
			}
			seen = append(seen, rd.field)
			l.warn(policy.CodeUnguardedArgument, rd.pos, nil,
				"rule %q matches every tool and reads args.%s, which its condition never tests: on a call without %s (a Read, a Write, ...) the condition is an error, which the failure policy decides; test has(args.%s) first, or name the tools in match",
				r.ID, rd.field, rd.field, rd.field)
		}
	}
}

// stringLiteral returns the value of a string literal.
func stringLiteral(x celast.Expr) (string, bool) {
	if x.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := x.AsLiteral().(types.String)
	return string(s), ok
}
