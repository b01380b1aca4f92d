package stdlib

import (
	"math"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// fnDef declares one CEL function of the stdlib: its overloads, the version it
// arrived in, whether it is late-bound (implemented by a CallScope) and, per
// overload, a cost model. Everything the libraries install (declarations,
// cost options, the surface test, the docs check) is derived from these.
type fnDef struct {
	ns      string // library namespace: shell, path, ...
	name    string // full CEL name: shell.parse
	version uint32
	late    bool // implemented by CallScope.ResolveFunction
	ovs     []*ovDef
}

type ovDef struct {
	id     string
	args   []*cel.Type
	result *cel.Type
	// Exactly one of unary, binary, fn is set for an eager overload; none for
	// a late-bound one.
	unary  functions.UnaryOp
	binary functions.BinaryOp
	fn     functions.FunctionOp
	cost   costModel
}

// costModel is base + perUnit * size(args[arg]) (+ perUnit2 * size(args[arg2])),
// where the size of a string is its length and of a list or map its number of
// elements. The unit is cel-go's: roughly one simple operation (about 50ns).
type costModel struct {
	base     uint64
	arg      int // -1: no size-proportional part
	perUnit  float64
	arg2     int // -1: none
	perUnit2 float64
	// result, when set, estimates the result size from the scaled argument's
	// size (for lists and strings the function returns).
	result func(in cost.SizeEstimate) *cost.SizeEstimate
	// size, when set (and result is not), bounds the result size from the
	// sizes of all the arguments. Every string or list a function returns
	// should have one: the cost analysis that lets evaluation skip the
	// runtime accounting treats an unsized result as unbounded.
	size func(args []cost.SizeEstimate) cost.SizeEstimate
	// refine, when set, is the runtime cost of a call with these arguments
	// when it is less than the model's (the work a fast path does). The
	// charge is never more than the model's, which the static analysis and
	// the proofs of bounds read.
	refine func(args []ref.Val) uint64
}

// withSize returns the model with a result size bound.
func (m costModel) withSize(f func(args []cost.SizeEstimate) cost.SizeEstimate) costModel {
	m.size = f
	return m
}

// sumSize bounds a string built from its arguments: at most the sum of
// their sizes plus extra code points.
func sumSize(extra uint64) func(args []cost.SizeEstimate) cost.SizeEstimate {
	return func(args []cost.SizeEstimate) cost.SizeEstimate {
		out := cost.FixedSizeEstimate(0)
		for _, a := range args {
			out = out.Add(cost.RangedSizeEstimate(0, a.Max))
		}
		return out.Add(cost.RangedSizeEstimate(0, extra))
	}
}

// firstArgSize bounds a string derived from the first argument alone: at
// most its size plus extra code points.
func firstArgSize(extra uint64) func(args []cost.SizeEstimate) cost.SizeEstimate {
	return func(args []cost.SizeEstimate) cost.SizeEstimate {
		if len(args) == 0 {
			return cost.RangedSizeEstimate(0, extra)
		}
		return cost.RangedSizeEstimate(0, args[0].Max).Add(cost.RangedSizeEstimate(0, extra))
	}
}

// fixedSize bounds a string of at most n code points.
func fixedSize(n uint64) func([]cost.SizeEstimate) cost.SizeEstimate {
	return func([]cost.SizeEstimate) cost.SizeEstimate { return cost.RangedSizeEstimate(0, n) }
}

func fixedCost(n uint64) costModel { return costModel{base: n, arg: -1, arg2: -1} }

func linearCost(base uint64, arg int, perUnit float64) costModel {
	return costModel{base: base, arg: arg, perUnit: perUnit, arg2: -1}
}

func (d *fnDef) option() cel.EnvOption {
	opts := make([]cel.FunctionOpt, 0, len(d.ovs))
	for _, o := range d.ovs {
		var bind cel.OverloadOpt
		switch {
		case d.late:
			bind = cel.LateFunctionBinding()
		case o.unary != nil:
			bind = cel.UnaryBinding(o.unary)
		case o.binary != nil:
			bind = cel.BinaryBinding(o.binary)
		default:
			bind = cel.FunctionBinding(o.fn)
		}
		opts = append(opts, cel.Overload(o.id, o.args, o.result, bind))
	}
	return cel.Function(d.name, opts...)
}

// library is one namespaced cel.Lib (celguard.lib.<ns>) of a Lib.
type library struct {
	l  *Lib
	ns string
}

// LibraryName implements cel.SingletonLibrary.
func (b *library) LibraryName() string { return "celguard.lib." + b.ns }

// CompileOptions implements cel.Library.
func (b *library) CompileOptions() []cel.EnvOption {
	var opts []cel.EnvOption
	switch b.ns {
	case "shell", "url", "secrets", "toolchain", "sql":
		opts = append(opts, resultTypesOption())
	}
	var costs []cost.Option
	for _, d := range b.l.fnsFor(b.ns) {
		opts = append(opts, d.option())
		for _, o := range d.ovs {
			costs = append(costs, cost.OverloadCostEstimate(o.id, o.cost.estimator()))
		}
	}
	if vs := literalValidators(b.ns); len(vs) > 0 {
		opts = append(opts, cel.ASTValidators(vs...))
	}
	if len(costs) > 0 {
		opts = append(opts, cel.CostEstimatorOptions(costs...))
	}
	return opts
}

// ProgramOptions implements cel.Library.
func (b *library) ProgramOptions() []cel.ProgramOption {
	if b.l.cfg.estimatorPrices {
		return nil // the host's ActualCostEstimator prices the calls (WithEstimatorPrices)
	}
	var costs []cost.TrackerOption
	for _, d := range b.l.fnsFor(b.ns) {
		for _, o := range d.ovs {
			m := o.cost
			costs = append(costs, cost.OverloadTracker(o.id, func(args []ref.Val, result ref.Val) *uint64 {
				c := m.actualFor(args, result)
				return &c
			}))
		}
	}
	if len(costs) == 0 {
		return nil
	}
	return []cel.ProgramOption{cel.CostTrackerOptions(costs...)}
}

// estimator adapts the model to a cost.FunctionEstimator.
func (m costModel) estimator() cost.FunctionEstimator {
	return func(est cost.Estimator, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
		all := args
		if target != nil {
			all = append([]cost.AstNode{*target}, args...)
		}
		return m.estimate(est, all)
	}
}

func (m costModel) estimate(est cost.Estimator, args []cost.AstNode) *cost.CallEstimate {
	c := cost.FixedCostEstimate(m.base)
	var in cost.SizeEstimate
	if m.arg >= 0 && m.arg < len(args) {
		in = sizeOf(est, args[m.arg])
		c = c.Add(in.MultiplyByCostFactor(m.perUnit))
	}
	if m.arg2 >= 0 && m.arg2 < len(args) {
		c = c.Add(sizeOf(est, args[m.arg2]).MultiplyByCostFactor(m.perUnit2))
	}
	var rs *cost.SizeEstimate
	switch {
	case m.result != nil && m.arg >= 0:
		rs = m.result(in)
	case m.size != nil:
		sizes := make([]cost.SizeEstimate, len(args))
		for i, a := range args {
			sizes[i] = sizeOf(est, a)
		}
		r := m.size(sizes)
		rs = &r
	}
	return cost.NewCallEstimate(c, rs)
}

func sizeOf(est cost.Estimator, n cost.AstNode) cost.SizeEstimate {
	if s := n.ComputedSize(); s != nil {
		return *s
	}
	if est != nil {
		if s := est.EstimateSize(n); s != nil {
			return *s
		}
	}
	return cost.UnknownSizeEstimate()
}

// actualFor is the runtime cost of one call that returned result: a value
// the call's scope returned before (memoised) costs only the base, a
// lookup, since the parse it stands for was paid for by the first call.
func (m costModel) actualFor(args []ref.Val, result ref.Val) uint64 {
	if memoised(result) {
		return m.base
	}
	return m.actual(args)
}

// actual is the runtime cost of one call.
func (m costModel) actual(args []ref.Val) uint64 {
	c := float64(m.base)
	if m.arg >= 0 && m.arg < len(args) {
		c += float64(actualSize(args[m.arg])) * m.perUnit
	}
	if m.arg2 >= 0 && m.arg2 < len(args) {
		c += float64(actualSize(args[m.arg2])) * m.perUnit2
	}
	if c >= math.MaxUint64 {
		return math.MaxUint64
	}
	if m.refine != nil {
		return min(uint64(math.Ceil(c)), m.refine(args))
	}
	return uint64(math.Ceil(c))
}

func actualSize(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(utf8.RuneCountInString(string(x)))
	case types.Bytes:
		return uint64(len(x))
	case traits.Sizer:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}

// costEstimator is the cost.Estimator returned by Lib.CostEstimator.
type costEstimator struct{ l *Lib }

var _ cost.Estimator = costEstimator{}

func (e costEstimator) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }

func (e costEstimator) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	o := e.l.overload(function, overloadID)
	if o == nil {
		return nil
	}
	all := args
	if target != nil {
		all = append([]cost.AstNode{*target}, args...)
	}
	return o.cost.estimate(nil, all)
}

// actualCost is the cost.ActualCostEstimator returned by
// Lib.ActualCostEstimator.
type actualCost struct{ l *Lib }

var _ cost.ActualCostEstimator = actualCost{}

func (a actualCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	o := a.l.overload(function, overloadID)
	if o == nil {
		return nil
	}
	c := o.cost.actualFor(args, result)
	return &c
}

// overload finds a stdlib overload by id, or by function name when the
// function has a single overload (late-bound calls may report the name).
func (l *Lib) overload(function, overloadID string) *ovDef {
	if o, ok := l.byID[overloadID]; ok {
		if d := l.byName[function]; d == nil || d.version <= l.cfg.version {
			return o
		}
		return nil
	}
	if d, ok := l.byName[function]; ok && d.version <= l.cfg.version && len(d.ovs) > 0 {
		return d.ovs[0]
	}
	return nil
}
