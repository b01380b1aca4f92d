package compile

// boundSizes are the input sizes at which the compiler tries to prove an
// expression's worst-case cost within the limit (see Program). Each step is
// 4x the last: a short command and its working directory fit in 64, a long
// command in 4,096. Every step is one cost analysis of the whole set.
var boundSizes = []uint64{16, 64, 256, 1024, MaxProvenInput}

// MaxProvenInput is the largest input size at which a program may skip the
// cost accounting (see Program.For): past it, every program accounts.
const MaxProvenInput = 4096

// proveBounds gives every program that needs runtime cost accounting, and
// whose worst-case cost the static analysis bounds within the limit for
// small inputs, a second program without the accounting (Program.For).
//
// The analysis is the lint's (lint_cost.go) in its strict form: every input
// string, list or map holds at most n code points or entries; constant
// variables have their exact size; other variables, shell results and
// function results the sizes cel-go and the stdlib derive from that; and a
// computed value of unknown size is unbounded (never assumed small). A
// program is proven at n only if it is proven at every smaller size too.
func (c *compiler) proveBounds() {
	env := c.cfg.env
	limit := env.CostLimit()
	lib := env.Stdlib().CostEstimator()
	base := env.CEL()
	consts := map[*Variable]constResult{}
	// open are the programs still proven at every size so far.
	open := map[*Program]bool{}
	for _, p := range c.programs {
		if p.needsTracking {
			open[p] = true
		}
	}
	proven := map[*Program]uint64{}
	for _, n := range boundSizes {
		if len(open) == 0 {
			break
		}
		sizers := map[*Policy]*costSizes{}
		for _, ce := range c.checked {
			sz := sizers[ce.sc.pol]
			if sz == nil {
				sz = newCostSizes(env, ce.sc.pol)
				sz.assumed, sz.consts = n, consts
				sizers[ce.sc.pol] = sz
			}
			p := c.programs[ce.ast]
			v := sz.variable(ce.expr.Pos)
			constant := v != nil && sz.isConstant(ce.ast)
			if constant {
				sz.declare(v, true, ce.ast, nil, nil)
				continue
			}
			if v == nil && !open[p] {
				continue // nothing to prove and no size to record
			}
			est := &sizeAssumptions{assumed: n, strict: true, lib: lib, sizes: sz, shapes: sz.shapesOf(ce.ast)}
			ast := ce.ast
			var probe *probedSize
			if v != nil {
				if wrapped, err := sizeProbe(ce.ast); err == nil {
					ast, probe = wrapped, &probedSize{}
					est.probe = probe
				}
			}
			e, err := base.EstimateCost(ast, est)
			if v != nil {
				sz.declare(v, false, ce.ast, est.shapes, probe)
			}
			if !open[p] {
				continue
			}
			if err != nil || e.Max > limit {
				delete(open, p)
				continue
			}
			proven[p] = n
			p.bound = e.Max
		}
	}
	for p, n := range proven {
		fast, err := base.Program(p.ast, env.UntrackedProgramOptions()...)
		if err != nil {
			continue // keep the accounting
		}
		p.fast, p.fastUpTo = fast, n
	}
}
