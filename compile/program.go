package compile

import (
	"math"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// Program is a compiled expression, ready to evaluate.
//
// Every expression that can run away (a comprehension, a function that is
// not linear in its input) is evaluated with cel-go's runtime cost
// accounting and the environment's cost limit, so its work is bounded
// whatever the input. The accounting is a large share of a rule's
// evaluation time (about a third on the recommended bundle), and most calls
// are small, so the compiler also proves, where it can, that the limit
// cannot be reached for small inputs: the static cost analysis (cel-go's
// estimator, with the stdlib's own bounds on what its functions return)
// bounds the expression's worst-case cost when every input string, list and
// map holds at most n code points or entries, at n = 16, 64, 256, ... The
// largest n whose bound is within the limit is the program's FastUpTo, and
// a call whose inputs are all within it is evaluated by a second program
// without the accounting. The choice depends on the input's size alone, so
// a decision never depends on machine load, and the limit holds either way.
type Program struct {
	tracked cel.Program
	// trackedLazy, in a replayed program that needs accounting, plans
	// tracked at its first use (trackedProgram): a call whose inputs are
	// within fastUpTo (most calls) evaluates fast alone, and planning
	// the program with accounting as well was a fifth of a replayed
	// set's planning.
	trackedLazy *lazyProgram
	fast        cel.Program
	// fastUpTo is the largest input size for which fast is used; 0 when
	// there is no fast program, math.MaxUint64 when no accounting is needed.
	fastUpTo uint64
	// bound is the proven worst-case cost at fastUpTo.
	bound uint64
	ast   *cel.Ast
	// planned is ast as planned (inlinePatterns), often ast itself.
	planned *cel.Ast
	// plan is what the programs are planned from: planned's native AST,
	// or in a replayed program the lean one of its record (planAST),
	// whose ast and planned are built at the first AST (makeAST).
	plan *celast.AST
	// astOnce builds a replayed program's ast and planned.
	astOnce sync.Once
	// lazy plans the program without accounting at its first use, when
	// fast is nil and fastUpTo is not 0: a process (a hook) uses a few of
	// the set's programs, and planning the others is wasted.
	lazy *lazyProgram
	// src, in a set compiled from a compiled-set cache (setcache.go),
	// makes the program from its recorded checked expression at its first
	// use: an event's decision evaluates a few of the set's programs, and
	// decoding and planning the others is wasted. nil for a program
	// compiled in full; once makes it at most once (made).
	src  *programSource
	once sync.Once
	// arg and vm are the expression's ArgString and VarMatches shapes
	// (nil: another), worked out once (argOnce).
	arg     *ArgString
	vm      *VarMatches
	argOnce sync.Once
}

// made returns p ready to evaluate: made from its compiled-set cache
// record on first use (setcache.go), p itself otherwise.
func (p *Program) made() *Program {
	if p.src != nil {
		p.once.Do(p.make)
	}
	return p
}

// lazyProgram is a program without cost accounting, planned once when
// first needed.
type lazyProgram struct {
	once sync.Once
	env  *celenv.Env
	prg  cel.Program
}

// get plans the program of plan without accounting, once; nil when that
// fails (the caller keeps the accounting).
func (l *lazyProgram) get(plan *celast.AST) cel.Program {
	l.once.Do(func() {
		if prg, err := l.env.CEL().PlanProgram(plan, l.env.UntrackedProgramOptions()...); err == nil {
			l.prg = prg
		}
	})
	return l.prg
}

// setFast records that p's cost is proven within the limit, bound, for
// every input of size n or less; the program without accounting is planned
// at its first use.
func (p *Program) setFast(env *celenv.Env, n, bound uint64) {
	p.fastUpTo, p.bound = n, bound
	p.lazy = &lazyProgram{env: env}
}

// For returns the program to evaluate for a call whose input size is n: the
// largest size in code points or entries of any string, bytes, list or map
// among the call's inputs (tool, args and everything inside them, cwd,
// phase, session, classes, command, paths, result and everything inside
// it, counters). The caller must not understate n.
func (p *Program) For(n uint64) cel.Program {
	p.made()
	if n <= p.fastUpTo {
		if p.fast != nil {
			return p.fast
		}
		if p.lazy != nil {
			if prg := p.lazy.get(p.plan); prg != nil {
				return prg
			}
		}
	}
	return p.trackedProgram()
}

// Tracked returns the program with runtime cost accounting (the only one
// when the expression needs none: then it has no accounting either).
func (p *Program) Tracked() cel.Program { return p.made().trackedProgram() }

// trackedProgram is tracked, planned now if it is planned at first use;
// when that fails, the full compile's (setcache.go).
func (p *Program) trackedProgram() cel.Program {
	l := p.trackedLazy
	if l == nil {
		return p.tracked
	}
	l.once.Do(func() {
		prg, err := l.env.CEL().PlanProgram(p.plan, l.env.ProgramOptions()...)
		if err != nil {
			prg = p.src.fullTracked(err)
		}
		l.prg = prg
	})
	return l.prg
}

// FastUpTo returns the largest input size for which For returns a program
// without cost accounting (0: none; math.MaxUint64: the expression never
// needs accounting) and the proven worst-case cost at that size.
func (p *Program) FastUpTo() (n, bound uint64) {
	p.made()
	return p.fastUpTo, p.bound
}

// Linear reports whether the expression can never run away: it holds no
// comprehension and calls only functions linear in their input
// (celenv.NeedsCostTracking is false). Such a program is evaluated without
// cost accounting at every input size (For returns Tracked whatever n is),
// and has nothing a context could interrupt: cel-go checks for
// cancellation only between a comprehension's iterations, so evaluating it
// under a context that can end is the same as evaluating it without one.
func (p *Program) Linear() bool {
	p.made()
	return p.fastUpTo == math.MaxUint64 && p.fast != nil && p.fast == p.tracked
}

// accounts reports whether the tracked program carries the cost accounting.
func (p *Program) accounts() bool { return p.fastUpTo != math.MaxUint64 }

// AST returns the checked expression.
func (p *Program) AST() *cel.Ast {
	p.made()
	if p.src != nil {
		p.astOnce.Do(p.makeAST)
	}
	return p.ast
}

// program plans a checked expression. Planning needs the functions, not the
// policy's variable declarations (the checked AST already resolved every
// name), so every program is planned in the base environment.
//
// A pattern kept in a constant is planned as the literal it is
// (inlinePatterns), info saying what the policy's variables are.
func (c *compiler) program(ast *cel.Ast, e policy.Expr, info map[string]exprInfo) *Program {
	env := c.cfg.env
	needs := celenv.NeedsCostTracking(ast)
	planned := inlinePatterns(ast, info)
	prg, err := env.CEL().Program(planned, env.ProgramOptionsFor(planned)...)
	if err != nil {
		c.errorf(policy.CodeCELType, e.Pos, "%v", err)
		return nil
	}
	p := &Program{tracked: prg, ast: ast, planned: planned, plan: planned.NativeRep()}
	if !needs {
		p.fast, p.fastUpTo = prg, math.MaxUint64
	}
	if c.programs == nil {
		c.programs = map[*cel.Ast]*Program{}
	}
	c.programs[ast] = p
	c.made = append(c.made, madeProgram{prg: p, expr: e})
	return p
}
