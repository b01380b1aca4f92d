package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/functions"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// evaluation is the state of deciding one call: the activation CEL reads
// (built-in variables, lazily evaluated named variables, counters) and the
// per-call memo of stdlib functions. The verdict rules that drive it are in
// decide.go.
type evaluation struct {
	ctx   context.Context
	s     *Session
	set   *compile.PolicySet
	phase policy.Phase
	call  Call
	res   *Result
	// io is the model's input or output, in those phases.
	io *modelIO
	// obs watches the decision: the trace and the explanation (observe.go).
	obs observer
	// monitored is the first monitored rule that matched (decide.go, rule
	// 16).
	monitored *Monitored
	// labelled are the rules with labels that decided a track (facts.go).
	labelled []*compile.Rule
	// notes are the decision's notes for its DecisionEvent (notes.go),
	// nil when the engine has no sink.
	notes *decisionNotes

	cur  *compile.Policy
	vars []ref.Val
	// depth is how many programs are being evaluated within one another
	// (exec): a rule's, the variables and counter keys it reads. The
	// compiler lets an expression read only what cannot read it back, so
	// more than a program per variable and counter means a cycle (a
	// compiled-set record that pairs a variable with an expression
	// reading it): exec then fails instead of recursing until the stack
	// overflows, which no recover catches.
	depth    int
	counters map[*compile.Policy]map[string]int64
	keys     map[*compile.Counter]string
	result   map[string]any
	scope    *stdlib.CallScope
	// classes holds the tool's classes once computed (classesDone).
	classes     []string
	classesDone bool
	// shaped says some of classes came from the shape of the arguments
	// (compile.PolicySet.ClassesFor): derive reads the classes' shape
	// arguments too, and the rules are CandidatesFor the classes.
	shaped bool
	// derived holds command and paths once computed (they depend on args).
	derived *derivedArgs
	// size is inputSize()+1 once computed, 0 before.
	size uint64
	// box holds the built-in variables as CEL values (ResolveName).
	box [numBoxed]ref.Val
	// last is the policy variable ResolveName returned last: the rules of
	// a policy mostly read the same one (cmd, path), by the same name.
	last lastVariable
	// pooledScope and pooledResult are kept from an earlier call for reuse.
	pooledScope  *stdlib.CallScope
	pooledResult map[string]any
	// frame is the execution frame linear programs are evaluated in
	// (linearFrame): its activation is this evaluation, so it is made
	// once and kept with the pooled evaluation, never shared with another.
	frame *interpreter.ExecutionFrame
	// lits is the literal index of the last long string the prefilters
	// tested (celenv.LiteralIndex), kept with the pooled evaluation when
	// its string is at most 64 KiB (release, LiteralIndex.Kept): it
	// depends on the string alone.
	lits *celenv.LiteralIndex
}

var _ interpreter.FunctionActivation = (*evaluation)(nil)

// evaluations pools the per-call state, so a decision allocates little.
var evaluations = sync.Pool{New: func() any { return new(evaluation) }}

// emptyArgs stands for a call without arguments. It is never written:
// rewrites copy the arguments first.
var emptyArgs = map[string]any{}

func newEvaluation(ctx context.Context, s *Session, set *compile.PolicySet, phase policy.Phase, call Call, res *Result) *evaluation {
	ev := evaluations.Get().(*evaluation)
	scope, vars, result, frame, lits := ev.pooledScope, ev.vars, ev.pooledResult, ev.frame, ev.lits
	*ev = evaluation{ctx: ctx, s: s, set: set, phase: phase, call: call, res: res, obs: noObserver{}, frame: frame, lits: lits}
	if ev.call.Args == nil {
		ev.call.Args = emptyArgs
	}
	if res != nil {
		if result == nil {
			result = make(map[string]any, len(res.Fields)+2)
		}
		maps.Copy(result, res.Fields)
		result["is_error"] = res.IsError
		result["content"] = res.Content
		ev.result = result
	}
	ev.pooledResult = result
	n := set.VariableSlots()
	if cap(vars) < n {
		vars = make([]ref.Val, n)
	}
	ev.vars = vars[:n]
	// A memo scope from an earlier call serves again if the stdlib is the
	// same (a hot swap may bring another).
	if scope != nil && scope.Lib() == set.Env().Stdlib() {
		ev.pooledScope = scope
	}
	return ev
}

// release returns the evaluation to the pool. A Decision never refers to
// pooled state: rewritten arguments are fresh maps and content is copied.
func (ev *evaluation) release() {
	clear(ev.vars)
	if ev.pooledResult != nil {
		clear(ev.pooledResult)
	}
	scope := ev.scope
	if scope == nil {
		scope = ev.pooledScope
	}
	if scope != nil {
		scope.Reset()
	}
	*ev = evaluation{pooledScope: scope, vars: ev.vars[:0], pooledResult: ev.pooledResult, frame: ev.frame, lits: ev.lits.Kept()}
	evaluations.Put(ev)
}

// callScope returns the per-call memo of the stdlib functions, made on
// first use.
func (ev *evaluation) callScope() *stdlib.CallScope {
	if ev.scope == nil {
		if ev.pooledScope != nil {
			ev.scope = ev.pooledScope
		} else {
			ev.scope = ev.set.Env().Stdlib().NewCallScope()
		}
	}
	return ev.scope
}

// resetCall forgets everything derived from the call's arguments or result,
// after a modify rule rewrote them.
func (ev *evaluation) resetCall() {
	clear(ev.vars)
	ev.counters = nil
	ev.keys = nil
	ev.derived = nil
	ev.size = 0
	ev.box = [numBoxed]ref.Val{}
	ev.last = lastVariable{}
	if ev.scope != nil {
		ev.scope.Reset()
	}
}

// toolClasses returns the call's classes, computed once per call from the
// tool's name and, for a tool no class with arguments names, the shape of
// its arguments as the call came (a rewrite does not change them).
func (ev *evaluation) toolClasses() []string {
	if !ev.classesDone {
		ev.classes, ev.shaped = ev.set.ClassesFor(ev.call.Tool, ev.call.Args)
		ev.classesDone = true
	}
	return ev.classes
}

// ResolveName implements interpreter.Activation. The built-in variables
// are celenv's table (celenv.Variables): each has a case here and one in
// sizeOfVariable (size.go). They are handed to CEL as CEL values made once
// per call, so that the dozens of programs reading them do not each convert
// them again.
func (ev *evaluation) ResolveName(name string) (any, bool) {
	if l := &ev.last; l.val != nil && l.cur == ev.cur && l.name == name && !plainLinear {
		return l.val, true
	}
	switch name {
	case celenv.VarTool:
		return ev.boxed(boxTool), true
	case celenv.VarArgs:
		return ev.boxed(boxArgs), true
	case celenv.VarCwd:
		return ev.boxed(boxCwd), true
	case celenv.VarPhase:
		return ev.boxed(boxPhase), true
	case celenv.VarSession:
		return ev.s.sessionValue(), true
	case celenv.VarClasses:
		return ev.boxed(boxClasses), true
	case celenv.VarCommand:
		return ev.boxed(boxCommand), true
	case celenv.VarPaths:
		return ev.boxed(boxPaths), true
	case celenv.VarCall:
		return ev.boxed(boxCall), true
	case celenv.VarAgent:
		return ev.boxed(boxAgent), true
	case celenv.VarMessages:
		if ev.io == nil {
			return nil, false
		}
		return ev.boxed(boxMessages), true
	case celenv.VarOutput:
		if ev.io == nil || ev.io.output == nil {
			return nil, false
		}
		return ev.boxed(boxOutput), true
	case celenv.VarDefinition:
		if ev.io == nil || ev.io.tool == nil {
			return nil, false
		}
		return ev.boxed(boxDefinition), true
	case celenv.VarResource:
		if ev.io == nil || ev.io.resource == nil {
			return nil, false
		}
		return ev.boxed(boxResource), true
	case celenv.VarResult:
		if ev.result == nil {
			return nil, false
		}
		return ev.result, true
	case celenv.VarCounters:
		if ev.cur == nil {
			return nil, false
		}
		return ev.counterValues(ev.cur), true
	}
	return ev.variable(name)
}

// variable resolves a variable of the current policy by name (ResolveName).
func (ev *evaluation) variable(name string) (any, bool) {
	if ev.cur == nil {
		return nil, false
	}
	v, ok := ev.cur.Variable(name)
	if !ok {
		return nil, false
	}
	if val := ev.vars[v.Slot]; val != nil {
		ev.last = lastVariable{name: name, cur: ev.cur, val: val}
		return val, true
	}
	// A variable of the working directory alone (the policy's places made
	// absolute) has the value an earlier call in this directory computed.
	if val, ok := v.CwdValue(ev.call.Cwd); ok {
		ev.vars[v.Slot] = val
		ev.last = lastVariable{name: name, cur: ev.cur, val: val}
		return val, true
	}
	out, err := ev.exec(v.Program)
	if err != nil {
		out = types.NewErr("variable %s: %v", name, err)
	} else {
		v.KeepCwdValue(ev.call.Cwd, out)
	}
	ev.vars[v.Slot] = out
	ev.last = lastVariable{name: name, cur: ev.cur, val: out}
	return out, true
}

// The built-in variables ResolveName converts once per call.
const (
	boxTool = iota
	boxArgs
	boxCwd
	boxPhase
	boxClasses
	boxCommand
	boxPaths
	boxCall
	boxAgent
	boxMessages
	boxOutput
	boxDefinition
	boxResource
	numBoxed
)

// boxed returns the CEL value of a built-in variable, made on first use.
func (ev *evaluation) boxed(i int) ref.Val {
	if v := ev.box[i]; v != nil {
		return v
	}
	var v ref.Val
	switch i {
	case boxTool:
		v = types.String(ev.call.Tool)
	case boxArgs:
		v = types.NewStringInterfaceMap(types.DefaultTypeAdapter, ev.call.Args)
	case boxCwd:
		v = types.String(ev.call.Cwd)
	case boxPhase:
		v = types.String(ev.phase.String())
	case boxClasses:
		v = types.NewStringList(types.DefaultTypeAdapter, ev.toolClasses())
	case boxCommand:
		v = types.String(ev.derive().command)
	case boxPaths:
		v = types.NewStringList(types.DefaultTypeAdapter, ev.derive().paths)
	case boxCall:
		v = types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{"id": ev.call.ID})
	case boxAgent:
		ids := ev.call.Agent.IDs
		if ids == nil {
			ids = map[string]string{}
		}
		v = types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{"name": ev.call.Agent.Name, "ids": ids})
	case boxMessages:
		v = types.DefaultTypeAdapter.NativeToValue(messagesValue(ev.io.messages))
	case boxOutput:
		v = types.NewStringInterfaceMap(types.DefaultTypeAdapter, outputValue(ev.io.output))
	case boxDefinition:
		v = types.NewStringInterfaceMap(types.DefaultTypeAdapter, definitionValue(ev.io.tool))
	case boxResource:
		v = types.NewStringInterfaceMap(types.DefaultTypeAdapter, resourceValue(ev.io.resource))
	}
	ev.box[i] = v
	return v
}

// Parent implements interpreter.Activation.
func (ev *evaluation) Parent() interpreter.Activation { return nil }

// ResolveFunction implements interpreter.FunctionActivation: the late-bound
// stdlib functions, memoised for this call.
func (ev *evaluation) ResolveFunction(name string) (functions.LateBoundOp, bool) {
	return ev.callScope().ResolveFunction(name)
}

// exec evaluates a program against this call. With a context that can end,
// evaluation is interruptible (comprehensions check it); with one that
// cannot, the cheaper Eval is used (the cost limit still bounds the work).
//
// A linear program (compile.Program.Linear: no comprehension, only linear
// functions) is the same program at every input size and has nothing to
// interrupt, so it runs with Eval and without measuring the input: cel-go's
// ContextEval would only add a cancellable child context per evaluation,
// and the size walk builds the session's value.
func (ev *evaluation) exec(p *compile.Program) (ref.Val, error) {
	if ev.depth > len(ev.vars)+len(ev.set.Counters()) {
		return nil, errCycle
	}
	ev.depth++
	out, err := ev.execNested(p)
	ev.depth--
	return out, err
}

// errCycle is exec's error for a program that reads itself through the
// variables and counters it reads (evaluation.depth).
var errCycle = errors.New("the expressions read one another in a cycle")

// execNested is exec within the bound on nesting.
func (ev *evaluation) execNested(p *compile.Program) (ref.Val, error) {
	if p.Linear() {
		if plainLinear {
			out, _, err := p.Tracked().Eval(ev)
			return out, err
		}
		if v, ok := ev.byShape(p); ok {
			return v, nil
		}
		out, _, err := p.Tracked().Eval(ev.linearFrame())
		return out, err
	}
	prg := p.For(ev.inputSize())
	var out ref.Val
	var err error
	if ev.ctx.Done() != nil {
		out, _, err = prg.ContextEval(ev.ctx, ev)
	} else {
		out, _, err = prg.Eval(ev)
	}
	if checkFast != nil && prg != p.Tracked() {
		tracked, det, terr := p.Tracked().Eval(ev)
		checkFast(p, ev.inputSize(), det, out, tracked, err, terr)
	}
	return out, err
}

// checkFast, set by tests only, sees every evaluation that skipped the cost
// accounting, with the same expression evaluated with it.
var checkFast func(p *compile.Program, size uint64, tracked *cel.EvalDetails, fastOut, trackedOut ref.Val, fastErr, trackedErr error)

// eval runs one program for policy p and returns its value.
func (ev *evaluation) eval(p *compile.Policy, prg *compile.Program) (ref.Val, error) {
	ev.cur = p
	out, err := ev.exec(prg)
	if err != nil {
		return nil, err
	}
	if types.IsError(out) {
		return nil, fmt.Errorf("%v", out)
	}
	return out, nil
}

func (ev *evaluation) evalBool(p *compile.Policy, prg *compile.Program) (bool, error) {
	out, err := ev.eval(p, prg)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression returned %s, not a bool", out.Type())
	}
	return bool(b), nil
}
