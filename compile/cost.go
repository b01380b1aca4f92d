package compile

import (
	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
)

// This file is the static cost analysis: cel-go's estimate of an
// expression's worst-case cost, with the stdlib's function costs and what
// is known of the sizes of the values it reads (cost_sizes.go). Two
// things use it: the lint's cost_over_budget warning (linter.costs), under
// the lenient assumption CostAssumedSize, and the proofs that an
// expression cannot reach the cost limit for small inputs, which let a
// program skip the runtime cost accounting (cost_proof.go), under the
// strict one.

// CostAssumedSize is the size assumption of the static cost analysis
// (cost_over_budget). cel-go estimates an expression's worst-case cost from
// the sizes of its inputs, and the inputs of a policy (args, result, session,
// the strings and lists read from them, variables) have no declared bound,
// so the analysis assumes that every string, bytes, list or map whose size
// cel-go cannot infer holds at most this many characters, bytes or entries.
//
// Values known better are sized better (cost_sizes.go): constant policy
// variables have their exact size, other variables the estimated size of
// their expression's result, and shell results the bounds of
// stdlib.ShellResultSize for a command string of the size assumed here.
//
// The assumption is deliberately the same for strings and collections (most
// inputs are dyn, and cel-go sizes a value once however it is used). A single
// linear scan stays far below the budget even for much larger inputs (a
// contains over 1 MB costs about 100,000), so what the analysis finds is
// multiplication: nested comprehensions, a regex or shell parse inside a
// loop, string building in a loop. The runtime budget applies to the actual
// sizes either way.
const CostAssumedSize = 1_000

// CostAssumedEntries is the lint's assumption for the number of entries of
// a list or map whose size cel-go cannot infer (one read from the call
// data, or one an expression iterates over even when typed dyn): at most
// this many, each string among them of up to CostAssumedSize characters. A
// list of 100 strings of 1,000 characters carries 100,000 characters,
// already a large call; assuming 1,000 of each put a megabyte in one
// argument and made a one-level scan over a message list look over budget
// (issue 16). The product still finds what is at real risk: two nested
// loops over lists of this size with string work inside reach the budget.
// The proofs (cost_proof.go) never use it: they assume every input, list
// or string, of the size they prove.
const CostAssumedEntries = 100

// costPass runs the cost analysis over every checked expression, in order,
// with every input assumed to hold at most assumed code points or entries
// (strict: see sizeAssumptions). Each variable's size is recorded for the
// expressions after it; want selects the expressions whose estimate visit
// receives (a non-constant variable is estimated either way, for its
// size). consts, when set, keeps constant variables' values across passes.
func (c *compiler) costPass(assumed uint64, strict bool, consts map[*Variable]constResult,
	want func(checkedExpr) bool, visit func(checkedExpr, cost.Estimate, error)) {
	env := c.cfg.env
	lib := env.Stdlib().CostEstimator()
	sizers := map[*Policy]*costSizes{}
	for _, ce := range c.checked {
		sz := sizers[ce.sc.pol]
		if sz == nil {
			sz = newCostSizes(env, ce.sc.pol)
			sz.assumed, sz.consts = assumed, consts
			sizers[ce.sc.pol] = sz
		}
		v := sz.variable(ce.expr.Pos)
		constant := v != nil && sz.isConstant(ce.ast)
		wanted := want(ce)
		if !wanted && (v == nil || constant) {
			if constant {
				sz.declare(v, true, ce.ast, nil, nil)
			}
			continue
		}
		est := &sizeAssumptions{assumed: assumed, strict: strict, lib: lib, sizes: sz, shapes: sz.shapesOf(ce.ast)}
		if !strict {
			est.ranges = iterationRanges(ce.ast)
		}
		ast := ce.ast
		var probe *probedSize
		if v != nil && !constant {
			if wrapped, err := sizeProbe(ce.ast); err == nil {
				ast, probe = wrapped, &probedSize{}
				est.probe = probe
			}
		}
		e, err := env.CEL().EstimateCost(ast, est)
		if v != nil {
			sz.declare(v, constant, ce.ast, est.shapes, probe)
		}
		if wanted {
			visit(ce, e, err)
		}
	}
}

// sizeAssumptions is the cost estimator of the cost analysis: the stdlib's
// function costs; the sizes of the policy's variables and of the values
// read from them or from a shell function's result (costSizes); and
// CostAssumedSize for every other string, bytes, list or map whose size
// cel-go cannot infer.
type sizeAssumptions struct {
	// assumed bounds every input string, bytes, list or map (see
	// CostAssumedSize).
	assumed uint64
	// strict limits the assumption to the inputs (the built-in variables
	// and their parts): a value an expression computes whose size cel-go
	// cannot bound stays unknown. The proofs of cost_proof.go need it; the lint
	// is lenient.
	strict bool
	lib    cost.Estimator
	sizes  *costSizes
	shapes map[int64]shape // by expression id, from costSizes.shapesOf
	probe  *probedSize     // set while estimating a probed variable
	// ranges are the expressions a comprehension iterates over, by id:
	// the lint (not strict) sizes one of unknown size, even of type dyn,
	// as a collection (CostAssumedEntries).
	ranges map[int64]bool
}

// iterationRanges returns the ids of the expressions the comprehensions of
// a checked expression iterate over.
func iterationRanges(a *cel.Ast) map[int64]bool {
	out := map[int64]bool{}
	walkScoped(a.NativeRep().Expr(), func(x celast.Expr, _ boundNames) bool {
		if x.Kind() == celast.ComprehensionKind {
			out[x.AsComprehension().IterRange().ID()] = true
		}
		return true
	})
	return out
}

// EstimateSize implements cost.Estimator.
func (s *sizeAssumptions) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return nil
	}
	if x := n.Expr(); x != nil {
		if sh := s.shapes[x.ID()]; sh != nil {
			return sh.size()
		}
	}
	if p := n.Path(); len(p) > 0 && s.sizes != nil {
		if sh := s.sizes.vars[p[0]]; sh != nil {
			for _, step := range p[1:] {
				if sh = sh.child(step); sh == nil {
					break
				}
			}
			if sh != nil {
				return sh.size()
			}
		}
	}
	t := n.Type()
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case types.StringKind, types.BytesKind, types.ListKind, types.MapKind, types.DynKind:
	default:
		return nil
	}
	if s.strict && !isInputPath(n.Path()) {
		return nil // a value computed in the expression, of unknown size
	}
	if !s.strict {
		collection := t.Kind() == types.ListKind || t.Kind() == types.MapKind
		if x := n.Expr(); x != nil && s.ranges[x.ID()] {
			collection = true
		}
		if collection {
			return &cost.SizeEstimate{Min: 0, Max: min(s.assumed, CostAssumedEntries)}
		}
	}
	return &cost.SizeEstimate{Min: 0, Max: s.assumed}
}

// EstimateCallCost implements cost.Estimator.
func (s *sizeAssumptions) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	if function == sizeProbeFunction && s.probe != nil && len(args) == 1 {
		s.probe.size = args[0].ComputedSize()
		if s.probe.size == nil {
			s.probe.size = s.EstimateSize(args[0])
		}
		return &cost.CallEstimate{}
	}
	if s.lib == nil {
		return nil
	}
	return s.lib.EstimateCallCost(function, overloadID, target, args)
}

// inputNames are the built-in variables whose size the runtime measures
// (celenv.Variables, Counted): the call's inputs, every part of which eval's
// input size bounds, so the proofs may assume them within the proven size.
var inputNames = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range celenv.Variables() {
		if v.Size == celenv.Counted {
			m[v.Name] = true
		}
	}
	return m
}()

// isInputPath reports whether a cost-analysis path starts at an input.
func isInputPath(p []string) bool { return len(p) > 0 && inputNames[p[0]] }
