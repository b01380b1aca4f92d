package eval

import (
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
)

// The cheaper paths of a linear program's evaluation (execNested), of a
// variable's lookup (ResolveName) and of the prefilters' searches of a long
// string (LiteralIndex). Each gives the answer the plain path gives;
// plainLinear turns them off for the differential tests
// (TestLinearFastPathsDifferential).

// plainLinear, set by tests only, evaluates linear programs as before
// ArgString and linearFrame, each through cel-go with a frame of its own,
// looks every variable up by name (lastVariable) and searches strings
// without a literal index (LiteralIndex). The differential
// tests decide the same calls both ways.
var plainLinear bool

// linearFrame returns what a linear program is evaluated with: an
// execution frame over this evaluation, made at the first one and used by
// every linear program after it, including one evaluated within another (a
// variable a rule reads). cel-go's Eval takes a frame in place of an
// activation and then neither makes nor closes one: making and closing a
// frame per program was 2.3k of the 41.5k instructions of a decision of the
// loadgen stream (BENCHMARKS.md). Sharing it is sound for linear
// programs only: they are planned without cost accounting or state
// tracking and hold no comprehension, so their evaluation reads the frame
// (its activation and late-bound functions, both this evaluation) and
// never writes it. Programs with accounting or comprehensions keep a frame
// of their own per evaluation (cel-go's Eval and ContextEval of ev).
//
// A frame cel-go refuses (it never does for this activation) falls back to
// the evaluation itself, so the answer is the same either way.
func (ev *evaluation) linearFrame() any {
	if ev.frame == nil {
		f, err := interpreter.NewExecutionFrame(ev)
		if err != nil {
			return ev
		}
		ev.frame = f
	}
	return ev.frame
}

// LiteralIndex implements celenv.LiteralIndexHolder: the index the
// prefilters of a call's rules share for a long string they all test.
func (ev *evaluation) LiteralIndex() *celenv.LiteralIndex {
	if plainLinear {
		return nil
	}
	if ev.lits == nil {
		ev.lits = new(celenv.LiteralIndex)
	}
	return ev.lits
}

// byShape answers a linear program of a known shape without running it,
// when the call's values are plain; false leaves it to the program, which
// answers as it always did. An argument read as a string
// (compile.ArgString) is answered from the arguments; a variable matched
// against a constant pattern (compile.VarMatches) by the pattern, when the
// variable is a string (anything else, an error among them, is the
// program's to report).
func (ev *evaluation) byShape(p *compile.Program) (ref.Val, bool) {
	if m := p.VarMatches(); m != nil {
		v, ok := ev.ResolveName(m.Name)
		if !ok {
			return nil, false
		}
		s, ok := v.(types.String)
		if !ok {
			return nil, false
		}
		matched, err := m.Pattern.Match(string(s), ev)
		if err != nil {
			return nil, false
		}
		return types.Bool(matched), true
	}
	if a := p.ArgString(); a != nil {
		if v, ok := a.Value(ev.call.Args); ok {
			return v, true
		}
	}
	return nil, false
}

// lastVariable is the policy variable ResolveName returned last, with
// its value and policy cur: until the call changes (resetCall, which clears the
// slots), the same name in the same policy is the same slot with the same
// value, and a policy variable never has a built-in variable's name
// (compile refuses reserved names), so ResolveName answers it first.
type lastVariable struct {
	name string
	cur  *compile.Policy
	val  ref.Val
}
