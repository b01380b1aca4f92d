package compile

import (
	"context"
	"maps"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// This file sizes the values an expression reads, for the cost analysis
// (cost.go): cel-go asks the estimator for the size of every string,
// list or map it cannot size from the expression itself, naming it by its
// expression node and, when it is reached from a variable, by a path
// (["cmds", "@items", "args"]). Without help every such value would be
// CostAssumedSize; these are the cases where more is known:
//
//   - a policy variable whose expression reads no call data is evaluated
//     once, here, and has the exact size of its value (a list of 6 names
//     has 6 entries of at most their longest name's length);
//   - a variable bound to another expression has the size cel-go estimates
//     for that expression's result (found by estimating the expression
//     wrapped in a probe call whose estimator records its argument's size);
//   - the result of shell.parse, shell.commands and shell.programs, and
//     every part of it (a command's args, its redirects' targets), has the
//     bound stdlib.ShellResultSize gives for the size of the command string.

// shape is what the cost analysis knows about a value's size and the sizes
// of its parts.
type shape interface {
	// size is the value's size estimate, with its Elem and Key.
	size() *cost.SizeEstimate
	// child is the shape of a part: "@items" (a list's elements),
	// "@keys", "@values", "@indices", or a map's field; nil if unknown.
	child(step string) shape
}

// treeShape is a size estimate and the estimates of its parts.
type treeShape struct{ est cost.SizeEstimate }

func (t treeShape) size() *cost.SizeEstimate { e := t.est; return &e }

func (t treeShape) child(step string) shape {
	switch step {
	case "@items", "@values":
		if t.est.Elem != nil {
			return treeShape{*t.est.Elem}
		}
	case "@keys":
		if t.est.Key != nil {
			return treeShape{*t.est.Key}
		}
	case "@indices":
		return treeShape{cost.FixedSizeEstimate(1)}
	default: // a map's field: any of its values
		if t.est.Key != nil && t.est.Elem != nil {
			return treeShape{*t.est.Elem}
		}
	}
	return nil
}

// valueShape is a value known at compile time.
type valueShape struct{ v ref.Val }

func (s valueShape) size() *cost.SizeEstimate { return sizeOfValue(s.v) }

func (s valueShape) child(step string) shape {
	if m, isMap := s.v.(traits.Mapper); isMap && step != "" && step[0] != '@' {
		if v, found := m.Find(types.String(step)); found {
			return valueShape{v}
		}
		return nil
	}
	if sz := s.size(); sz != nil {
		return treeShape{*sz}.child(step)
	}
	return nil
}

// sizeOfValue is the exact size of a value, and the range of its parts'.
func sizeOfValue(v ref.Val) *cost.SizeEstimate {
	var est cost.SizeEstimate
	switch x := v.(type) {
	case types.String:
		est = cost.FixedSizeEstimate(uint64(utf8.RuneCountInString(string(x))))
	case types.Bytes:
		est = cost.FixedSizeEstimate(uint64(len(x)))
	case types.Bool, types.Int, types.Uint, types.Double, types.Null, types.Duration, types.Timestamp:
		est = cost.FixedSizeEstimate(1)
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		est = cost.FixedSizeEstimate(uint64(n))
		for it := x.Iterator(); it.HasNext() == types.True; {
			if est.Elem = unionSize(est.Elem, sizeOfValue(it.Next())); est.Elem == nil {
				return nil
			}
		}
	case traits.Mapper:
		n, _ := x.Size().(types.Int)
		est = cost.FixedSizeEstimate(uint64(n))
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			val, _ := x.Find(k)
			est.Key = unionSize(est.Key, sizeOfValue(k))
			est.Elem = unionSize(est.Elem, sizeOfValue(val))
			if est.Key == nil || est.Elem == nil {
				return nil
			}
		}
	default:
		return nil
	}
	return &est
}

// unionSize is the union of two estimates, nil when the second is unknown.
func unionSize(acc, next *cost.SizeEstimate) *cost.SizeEstimate {
	if next == nil {
		return nil
	}
	if acc == nil {
		return next
	}
	u := acc.Union(*next)
	return &u
}

// shellShape is a part of the result of a shell function (shell.parse,
// shell.commands, shell.programs) for a command string of at most n bytes.
//
// share is set for a field of a command read once per iteration of a loop
// over all the commands (see shapesOf): it is charged its share of the sum
// over the commands (stdlib.ShellCommandShare) rather than its own bound,
// so that the loop's estimate, commands × share, bounds the real sum.
type shellShape struct {
	function string
	path     []string
	n        uint64
	share    bool
}

func (s shellShape) size() *cost.SizeEstimate {
	est, ok := stdlib.ShellResultSize(s.function, s.path, s.n)
	if !ok {
		return nil
	}
	if s.share && len(s.path) > 0 {
		if n, ok := stdlib.ShellCommandShare(s.path[len(s.path)-1], s.n); ok && n < est.Max {
			est.Max = n
			est.Min = min(est.Min, n)
		}
	}
	return &est
}

// commandList reports whether s is the full list of commands of a string.
func (s shellShape) commandList() bool {
	return s.function == "shell.commands" && len(s.path) == 0 ||
		s.function == "shell.parse" && len(s.path) == 1 && s.path[0] == "commands"
}

func (s shellShape) child(step string) shape {
	path := append(append(make([]string, 0, len(s.path)+1), s.path...), step)
	if _, ok := stdlib.ShellResultSize(s.function, path, s.n); !ok {
		return nil
	}
	return shellShape{function: s.function, path: path, n: s.n}
}

// costSizes holds the shapes of one policy's variables, filled in
// declaration order as the cost analysis reaches each one.
type costSizes struct {
	env      *celenv.Env
	byPos    map[policy.Pos]*Variable
	vars     map[string]shape   // what is known of each variable's size
	constant map[string]bool    // the variables that read no call data
	values   map[string]ref.Val // the constant variables' values
	// assumed is the input size assumption (CostAssumedSize for the lint).
	assumed uint64
	// consts, when set, holds the constant variables evaluated by an
	// earlier analysis of the same set.
	consts map[*Variable]constResult
}

func newCostSizes(env *celenv.Env, p *Policy) *costSizes {
	s := &costSizes{env: env, byPos: map[policy.Pos]*Variable{}, vars: map[string]shape{},
		constant: map[string]bool{}, values: map[string]ref.Val{}, assumed: CostAssumedSize}
	if p != nil {
		for _, v := range p.Variables {
			s.byPos[v.Expr.Pos] = v
		}
	}
	return s
}

// variable returns the variable an expression defines, or nil.
func (s *costSizes) variable(pos policy.Pos) *Variable { return s.byPos[pos] }

// isConstant reports whether an expression reads no call data: no
// built-in variable (tool, args, cwd, phase, counters, result, session,
// classes, command, paths) and only constant policy variables.
func (s *costSizes) isConstant(a *cel.Ast) bool {
	constant := true
	walkScoped(a.NativeRep().Expr(), func(x celast.Expr, names boundNames) bool {
		if x.Kind() == celast.IdentKind {
			if name := x.AsIdent(); !names.bound(name) && !s.constant[name] {
				constant = false
			}
		}
		return constant
	})
	return constant
}

// constEvalTimeout bounds the evaluation of one constant variable.
const constEvalTimeout = 100 * time.Millisecond

// declare records what is known of a variable's size once its expression
// has been estimated: its value when it is constant, else the shape of its
// expression (a shell function's result, another variable), else the size
// the probe recorded.
func (s *costSizes) declare(v *Variable, constant bool, a *cel.Ast, shapes map[int64]shape, probe *probedSize) {
	if constant && v.Program != nil {
		if val, ok := s.constantValue(v); ok {
			s.constant[v.Name] = true
			s.values[v.Name] = val
			s.vars[v.Name] = valueShape{val}
			return
		}
	}
	if sh := shapes[a.NativeRep().Expr().ID()]; sh != nil {
		s.vars[v.Name] = sh
		return
	}
	if probe != nil && probe.size != nil {
		s.vars[v.Name] = treeShape{*probe.size}
	}
}

// constantValue evaluates a constant variable, once per analysis.
func (s *costSizes) constantValue(v *Variable) (ref.Val, bool) {
	if s.consts == nil {
		return s.evalConstant(v)
	}
	if c, done := s.consts[v]; done {
		return c.val, c.ok
	}
	val, ok := s.evalConstant(v)
	s.consts[v] = constResult{val, ok}
	return val, ok
}

// constResult is a constant variable's value, when it has one.
type constResult struct {
	val ref.Val
	ok  bool
}

func (s *costSizes) evalConstant(v *Variable) (ref.Val, bool) {
	vars := make(map[string]any, len(s.values))
	for k, val := range s.values {
		vars[k] = val
	}
	act, err := s.env.Stdlib().NewCallScope().Activation(vars)
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), constEvalTimeout)
	defer cancel()
	val, _, err := v.Program.Tracked().ContextEval(ctx, act)
	if err != nil || types.IsError(val) || types.IsUnknown(val) {
		return nil, false
	}
	return val, true
}

// shellFunctions are the stdlib functions whose result stdlib.ShellResultSize
// bounds.
var shellFunctions = map[string]bool{"shell.parse": true, "shell.commands": true, "shell.programs": true}

// local is what shapesOf knows of a comprehension's variable.
type local struct {
	sh shape
	// perCommand is set for the variable of a loop over a list of all the
	// commands of a string while no loop nested in it (down to the
	// expression at hand) iterates over something read from the variable:
	// the fields read from it are read once per command.
	perCommand bool
}

// shapesOf finds the shape of every node of a checked expression that reads
// a sized variable or a shell function's result, by expression id.
//
// A command's word lists are charged their share of the sum over the
// commands (shellShape.share) when read from the variable of a loop over
// all the commands and not inside a loop nested in it over something read
// from the same variable: shell.commands(s).exists(c, c.args.exists(...))
// visits every word of every command once, which is linear in s, while
// c.args.exists(a, c.operands.exists(...)) is quadratic for one command
// and the inner loop keeps its full bound. Of two nested loops over parts
// of the same command only the outer one is charged a share, so the
// estimate stays an upper bound: the sum over the commands of f × g is at
// most the sum of f times the largest g.
func (s *costSizes) shapesOf(a *cel.Ast) map[int64]shape {
	native := a.NativeRep()
	out := map[int64]shape{}
	isMap := func(x celast.Expr, sh shape) bool {
		switch native.GetType(x.ID()).Kind() {
		case types.MapKind:
			return true
		case types.ListKind:
			return false
		}
		sz := sh.size()
		return sz != nil && sz.Key != nil
	}
	var walk func(x celast.Expr, locals map[string]local) shape
	walk = func(x celast.Expr, locals map[string]local) shape {
		var sh shape
		switch x.Kind() {
		case celast.IdentKind:
			name := x.AsIdent()
			if l, isLocal := locals[name]; isLocal {
				sh = l.sh
			} else {
				sh = s.vars[name]
			}
		case celast.SelectKind:
			sel := x.AsSelect()
			op := sel.Operand()
			if base := walk(op, locals); base != nil && !sel.IsTestOnly() {
				sh = fieldOf(base, sel.FieldName(), op, locals)
			}
		case celast.CallKind:
			call := x.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target(), locals)
			}
			args := make([]shape, len(call.Args()))
			for i, arg := range call.Args() {
				args[i] = walk(arg, locals)
			}
			fn := call.FunctionName()
			switch {
			case fn == operators.Index && len(args) == 2 && args[0] != nil:
				if k := call.Args()[1]; k.Kind() == celast.LiteralKind {
					if key, isStr := k.AsLiteral().(types.String); isStr {
						sh = fieldOf(args[0], string(key), call.Args()[0], locals)
						break
					}
				}
				if isMap(call.Args()[0], args[0]) {
					sh = args[0].child("@values")
				} else {
					sh = args[0].child("@items")
				}
			case fn == "dyn" && len(args) == 1:
				sh = args[0]
			case shellFunctions[fn] && len(args) == 1 && !call.IsMemberFunction():
				n := s.assumed
				if arg := call.Args()[0]; arg.Kind() == celast.LiteralKind {
					if lit, isStr := arg.AsLiteral().(types.String); isStr {
						n = uint64(utf8.RuneCountInString(string(lit)))
					}
				} else if args[0] != nil {
					if sz := args[0].size(); sz != nil {
						n = sz.Max
					}
				}
				sh = shellShape{function: fn, n: n}
			}
		case celast.ListKind:
			for _, e := range x.AsList().Elements() {
				walk(e, locals)
			}
		case celast.MapKind:
			for _, e := range x.AsMap().Entries() {
				walk(e.AsMapEntry().Key(), locals)
				walk(e.AsMapEntry().Value(), locals)
			}
		case celast.StructKind:
			for _, f := range x.AsStruct().Fields() {
				walk(f.AsStructField().Value(), locals)
			}
		case celast.ComprehensionKind:
			comp := x.AsComprehension()
			rng := walk(comp.IterRange(), locals)
			walk(comp.AccuInit(), locals)
			inner := make(map[string]local, len(locals)+3)
			for name, l := range locals {
				if l.perCommand && refersTo(comp.IterRange(), name) {
					l.perCommand = false // a loop over a part of it
				}
				inner[name] = l
			}
			inner[comp.AccuVar()] = local{}
			var first, second shape
			if rng != nil {
				if isMap(comp.IterRange(), rng) {
					first, second = rng.child("@keys"), rng.child("@values")
				} else if comp.HasIterVar2() {
					first, second = rng.child("@indices"), rng.child("@items")
				} else {
					first = rng.child("@items")
				}
			}
			cl, all := rng.(shellShape)
			inner[comp.IterVar()] = local{sh: first, perCommand: all && cl.commandList() && !comp.HasIterVar2()}
			if comp.HasIterVar2() {
				inner[comp.IterVar2()] = local{sh: second}
			}
			walk(comp.LoopCondition(), inner)
			walk(comp.LoopStep(), inner)
			result := make(map[string]local, len(locals)+1)
			maps.Copy(result, locals)
			result[comp.AccuVar()] = local{}
			walk(comp.Result(), result)
			if isFilter(comp) {
				sh = rng // a sublist: no more elements, the same ones
			}
		}
		if sh != nil {
			out[x.ID()] = sh
		}
		return sh
	}
	walk(native.Expr(), nil)
	return out
}

// fieldOf is the shape of base's field name, read from the expression op:
// a command's field read once per command is charged its share.
func fieldOf(base shape, name string, op celast.Expr, locals map[string]local) shape {
	sh := base.child(name)
	if op.Kind() != celast.IdentKind {
		return sh
	}
	if l := locals[op.AsIdent()]; l.perCommand {
		if ss, isShell := sh.(shellShape); isShell {
			if _, ok := stdlib.ShellCommandShare(name, ss.n); ok {
				ss.share = true
				return ss
			}
		}
	}
	return sh
}

// refersTo reports whether x reads the identifier name (shadowing aside,
// which only makes the answer more cautious).
func refersTo(x celast.Expr, name string) bool {
	found := false
	celast.PreOrderVisit(x, celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind && e.AsIdent() == name {
			found = true
		}
	}))
	return found
}

// isFilter reports whether a comprehension is the filter macro's: its step
// is cond ? accu + [x] : accu.
func isFilter(comp celast.ComprehensionExpr) bool {
	step := comp.LoopStep()
	if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.Conditional || len(step.AsCall().Args()) != 3 {
		return false
	}
	args := step.AsCall().Args()
	isAccu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == comp.AccuVar() }
	add := args[1]
	if !isAccu(args[2]) || add.Kind() != celast.CallKind || add.AsCall().FunctionName() != operators.Add || len(add.AsCall().Args()) != 2 {
		return false
	}
	l, r := add.AsCall().Args()[0], add.AsCall().Args()[1]
	if !isAccu(l) || r.Kind() != celast.ListKind || len(r.AsList().Elements()) != 1 {
		return false
	}
	e := r.AsList().Elements()[0]
	return e.Kind() == celast.IdentKind && e.AsIdent() == comp.IterVar() && !comp.HasIterVar2()
}

// sizeProbeFunction names the call sizeProbe wraps an expression in; it is
// never declared, only estimated.
const sizeProbeFunction = "@celguard_size_probe"

// probedSize receives the size of a probed expression's result.
type probedSize struct{ size *cost.SizeEstimate }

// sizeProbe wraps a checked expression e in a call @celguard_size_probe(e),
// whose estimate (by sizeAssumptions) costs nothing and records the size
// cel-go estimates for e: the only way to read an estimate's result size.
func sizeProbe(a *cel.Ast) (*cel.Ast, error) {
	native := a.NativeRep()
	id := celast.MaxID(native) + 1
	call := celast.NewExprFactory().NewCall(id, sizeProbeFunction, native.Expr())
	typeMap := maps.Clone(native.TypeMap())
	typeMap[id] = types.BoolType
	refMap := maps.Clone(native.ReferenceMap())
	refMap[id] = celast.NewFunctionReference(sizeProbeFunction)
	pb, err := celast.ToProto(celast.NewCheckedAST(celast.NewAST(call, native.SourceInfo()), typeMap, refMap))
	if err != nil {
		return nil, err
	}
	return cel.CheckedExprToAst(pb), nil
}
