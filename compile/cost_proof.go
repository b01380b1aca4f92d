package compile

import "cel.dev/cel-go/common/cost"

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
// The analysis is the lint's (cost.go) in its strict form: every input
// string, list or map holds at most n code points or entries; constant
// variables have their exact size; other variables, shell results and
// function results the sizes cel-go and the stdlib derive from that; and a
// computed value of unknown size is unbounded (never assumed small). A
// program is proven at n only if it is proven at every smaller size too.
func (c *compiler) proveBounds() {
	env := c.cfg.env
	limit := env.CostLimit()
	key := c.proofKey() // proof_cache.go
	var progs []*Program
	if key != "" {
		progs = c.accounting()
		if b, ok := c.cfg.cache.Get(key); ok {
			if sizes, bounds, ok := decodeProofs(b, progs, limit); ok {
				for i, p := range progs {
					if sizes[i] > 0 {
						p.setFast(env, sizes[i], bounds[i])
					}
				}
				return
			}
		}
	}
	consts := map[*Variable]constResult{}
	// open are the programs proven at every size so far.
	open := map[*Program]bool{}
	for _, p := range c.programs {
		if p.accounts() {
			open[p] = true
		}
	}
	proven := map[*Program]uint64{}
	bounds := map[*Program]uint64{}
	for _, n := range boundSizes {
		if len(open) == 0 {
			break
		}
		c.costPass(n, true, consts, func(ce checkedExpr) bool { return open[c.programs[ce.ast]] },
			func(ce checkedExpr, e cost.Estimate, err error) {
				p := c.programs[ce.ast]
				if err != nil || e.Max > limit {
					delete(open, p)
					return
				}
				proven[p], bounds[p] = n, e.Max
			})
	}
	for p, n := range proven {
		p.setFast(env, n, bounds[p])
	}
	if key != "" {
		c.cfg.cache.Put(key, encodeProofs(progs, proven))
	}
}
