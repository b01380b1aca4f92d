package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
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
// per-call memo of stdlib functions.
type evaluation struct {
	ctx   context.Context
	s     *Session
	set   *compile.PolicySet
	phase policy.Phase
	call  Call
	res   *Result
	trace bool
	// explain, when set, records an Explanation (WithExplain).
	explain *explainer

	cur      *compile.Policy
	vars     []ref.Val
	counters map[*compile.Policy]map[string]int64
	keys     map[*compile.Counter]string
	result   map[string]any
	scope    *stdlib.CallScope
	// derived holds command and paths once computed (they depend on args).
	derived *derivedArgs
	// size is inputSize()+1 once computed, 0 before.
	size uint64
	// box holds the built-in variables as CEL values (ResolveName).
	box [numBoxed]ref.Val
	// pooledScope and pooledResult are kept from an earlier call for reuse.
	pooledScope  *stdlib.CallScope
	pooledResult map[string]any
}

var _ interpreter.FunctionActivation = (*evaluation)(nil)

// evaluations pools the per-call state, so a decision allocates little.
var evaluations = sync.Pool{New: func() any { return new(evaluation) }}

// emptyArgs stands for a call without arguments. It is never written:
// rewrites copy the arguments first.
var emptyArgs = map[string]any{}

func newEvaluation(ctx context.Context, s *Session, set *compile.PolicySet, phase policy.Phase, call Call, res *Result, trace bool) *evaluation {
	ev := evaluations.Get().(*evaluation)
	scope, vars, result := ev.pooledScope, ev.vars, ev.pooledResult
	*ev = evaluation{ctx: ctx, s: s, set: set, phase: phase, call: call, res: res, trace: trace}
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
	*ev = evaluation{pooledScope: scope, vars: ev.vars[:0], pooledResult: ev.pooledResult}
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
	if ev.scope != nil {
		ev.scope.Reset()
	}
}

// derivedArgs are the class-driven views of the arguments.
type derivedArgs struct {
	command string
	paths   []string
}

// derive reads the command and the paths from the arguments the tool's
// classes name. A list of strings under a path argument contributes each.
func (ev *evaluation) derive() *derivedArgs {
	if ev.derived != nil {
		return ev.derived
	}
	d := &derivedArgs{paths: []string{}}
	found := false
	for _, name := range ev.set.ClassesOf(ev.call.Tool) {
		cl, ok := ev.set.Class(name)
		if !ok {
			continue
		}
		for _, a := range cl.CommandArgs {
			if found {
				break
			}
			switch v := ev.call.Args[a].(type) {
			case string:
				d.command, found = v, true
			case []any: // an argv array, as Codex's shell tool sends
				if cmd, ok := joinArgv(v); ok {
					d.command, found = cmd, true
				}
			}
		}
		for _, a := range cl.PathArgs {
			switch v := ev.call.Args[a].(type) {
			case string:
				d.paths = appendUnique(d.paths, v)
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok {
						d.paths = appendUnique(d.paths, s)
					}
				}
			}
		}
	}
	ev.derived = d
	return d
}

// joinArgv turns an argv array into one command line, quoting each word for
// the shell so that the shell parser sees the same words.
func joinArgv(argv []any) (string, bool) {
	words := make([]string, 0, len(argv))
	for _, x := range argv {
		s, ok := x.(string)
		if !ok {
			return "", false
		}
		if s != "" && strings.IndexFunc(s, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@' ||
				('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
		}) < 0 {
			words = append(words, s)
			continue
		}
		words = append(words, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	return strings.Join(words, " "), true
}

func appendUnique(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

// ResolveName implements interpreter.Activation. The built-in variables are
// handed to CEL as CEL values made once per call, so that the dozens of
// programs reading them do not each convert them again.
func (ev *evaluation) ResolveName(name string) (any, bool) {
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
		return ev.s.meta, true
	case celenv.VarClasses:
		return ev.boxed(boxClasses), true
	case celenv.VarCommand:
		return ev.boxed(boxCommand), true
	case celenv.VarPaths:
		return ev.boxed(boxPaths), true
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
	if ev.cur == nil {
		return nil, false
	}
	v, ok := ev.cur.Variable(name)
	if !ok {
		return nil, false
	}
	if val := ev.vars[v.Slot]; val != nil {
		return val, true
	}
	out, err := ev.exec(v.Program)
	if err != nil {
		out = types.NewErr("variable %s: %v", name, err)
	}
	ev.vars[v.Slot] = out
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
		v = types.NewStringList(types.DefaultTypeAdapter, ev.set.ClassesOf(ev.call.Tool))
	case boxCommand:
		v = types.String(ev.derive().command)
	case boxPaths:
		v = types.NewStringList(types.DefaultTypeAdapter, ev.derive().paths)
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

// counterKey computes a counter's key for this call.
func (ev *evaluation) counterKey(c *compile.Counter) (string, error) {
	if k, ok := ev.keys[c]; ok {
		return k, nil
	}
	key := ev.call.Tool
	if c.Key != nil {
		saved := ev.cur
		ev.cur = c.Policy
		out, err := ev.exec(c.Key)
		ev.cur = saved
		if err != nil {
			return "", fmt.Errorf("counter %s key: %w", c.ID, err)
		}
		s, ok := out.(types.String)
		if !ok {
			return "", fmt.Errorf("counter %s key is %s, not a string", c.ID, out.Type())
		}
		key = boundKey(string(s))
	}
	if ev.keys == nil {
		ev.keys = map[*compile.Counter]string{}
	}
	ev.keys[c] = key
	return key, nil
}

// maxKeyLen bounds the length of a counter key the session keeps: a longer
// key (a policy keyed on large arguments) is kept as its first 64 bytes and
// the SHA-256 of the whole, so memory and state files stay bounded and keys
// stay distinct.
const maxKeyLen = 256

func boundKey(k string) string {
	if len(k) <= maxKeyLen {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return k[:64] + "#" + hex.EncodeToString(sum[:])
}

// counterValues returns the counts of a policy's counters for this call. A
// counter whose key fails to compute is absent, so reading it is an error
// that the rule's failure policy handles.
func (ev *evaluation) counterValues(p *compile.Policy) map[string]int64 {
	if m, ok := ev.counters[p]; ok {
		return m
	}
	m := make(map[string]int64, len(p.Counters))
	for _, c := range p.Counters {
		key, err := ev.counterKey(c)
		if err != nil {
			continue
		}
		m[c.Name] = ev.s.counterValue(c, key)
	}
	if ev.counters == nil {
		ev.counters = map[*compile.Policy]map[string]int64{}
	}
	ev.counters[p] = m
	return m
}

// run evaluates a program against this call. With a context that can end,
// evaluation is interruptible (comprehensions check it); with one that
// cannot, the cheaper Eval is used (the cost limit still bounds the work).
func (ev *evaluation) exec(p *compile.Program) (ref.Val, error) {
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

// run decides the call.
func (ev *evaluation) run() (Decision, error) {
	d := Decision{Phase: ev.phase, Tool: ev.call.Tool}
	if ev.phase == policy.PhaseAfter {
		if fd, err, failed := ev.updateCounters(); failed {
			return fd, err
		}
	}
	applied := map[*compile.Rule]bool{}
	var modified []string
restart:
	if ev.trace {
		d.Trace = append(d.Trace, ev.traceUnmatched()...)
	}
	for _, r := range ev.set.Candidates(ev.phase, ev.call.Tool) {
		if err := ev.ctx.Err(); err != nil {
			return ev.canceled(d, err)
		}
		if r.Verdict == policy.Modify && applied[r] {
			ev.addTrace(&d, r, OutcomeAlreadyApplied, nil)
			continue
		}
		matched := true
		if r.Condition != nil {
			var err error
			matched, err = ev.evalBool(r.Policy, r.Condition)
			ev.explain.conditionDone(r)
			if err != nil {
				if cerr := ev.ctx.Err(); cerr != nil {
					return ev.canceled(d, cerr)
				}
				ev.addTrace(&d, r, OutcomeError, err)
				if r.FailurePolicy == policy.FailOpen {
					continue
				}
				return ev.policyError(d, r, err, modified), nil
			}
		}
		if !matched {
			ev.addTrace(&d, r, OutcomeNoMatch, nil)
			continue
		}
		if r.Verdict == policy.Modify {
			if err := ev.applyModify(&d, r); err != nil {
				ev.addTrace(&d, r, OutcomeError, err)
				if r.FailurePolicy == policy.FailOpen {
					continue
				}
				return ev.policyError(d, r, err, modified), nil
			}
			ev.addTrace(&d, r, OutcomeApplied, nil)
			applied[r] = true
			modified = append(modified, r.ID)
			ev.resetCall()
			goto restart
		}
		ev.addTrace(&d, r, OutcomeMatched, nil)
		ev.fromRule(&d, r)
		ev.finishModified(&d, modified)
		if r.Verdict == policy.Ask {
			return ev.ask(d, r)
		}
		return d, nil
	}
	// No rule decided. Before the call the set's default verdict applies;
	// after it, the result of a call that was let through passes.
	d.Verdict = policy.Allow
	if ev.phase == policy.PhaseBefore {
		d.Verdict = ev.set.DefaultVerdict()
	}
	if len(modified) > 0 && d.Verdict == policy.Allow {
		// The rewritten call runs: the last rewrite speaks for it.
		last, _ := ev.set.Rule(modified[len(modified)-1])
		ev.fromRule(&d, last)
		d.Verdict = policy.Allow
	}
	ev.finishModified(&d, modified)
	return d, nil
}

// finishModified records the modify rules applied. The rewritten call (or
// result) goes with every verdict that lets it proceed; an allow that
// follows a rewrite is reported as modify, so a host that only applies
// rewrites on modify still applies it.
func (ev *evaluation) finishModified(d *Decision, modified []string) {
	if len(modified) == 0 {
		return
	}
	d.Modified = modified
	if d.Verdict == policy.Block || d.Verdict == policy.Halt {
		d.Args, d.Content = nil, nil
		return
	}
	if d.Verdict == policy.Allow {
		d.Verdict = policy.Modify
	}
	if ev.phase == policy.PhaseBefore {
		d.Args = ev.call.Args
	} else {
		c := ev.res.Content
		d.Content = &c
	}
}

// fromRule fills the decision from the rule that decided.
func (ev *evaluation) fromRule(d *Decision, r *compile.Rule) {
	d.Verdict = r.Verdict
	d.RuleID, d.Policy, d.File, d.Line = r.ID, r.Policy.Name, r.Pos.File, r.Pos.Line
	d.Code = r.Code
	d.Reason = r.Reason
	if r.Message != nil {
		out, err := ev.eval(r.Policy, r.Message)
		if s, ok := out.(types.String); ok && err == nil {
			d.Reason = string(s)
		} else if err != nil {
			d.Reason = strings.TrimSpace(r.Reason + " (message failed: " + err.Error() + ")")
		}
	}
}

func (ev *evaluation) policyError(d Decision, r *compile.Rule, err error, modified []string) Decision {
	d.Trace = append([]TraceStep(nil), d.Trace...)
	d.Verdict = policy.Block
	d.RuleID, d.Policy, d.File, d.Line = r.ID, r.Policy.Name, r.Pos.File, r.Pos.Line
	d.Code = CodePolicyError
	d.Reason = fmt.Sprintf("rule %s of policy %s failed: %v", r.ID, r.Policy.Name, err)
	d.Error = err.Error()
	d.Modified = modified
	d.Args, d.Content = nil, nil
	return d
}

func (ev *evaluation) canceled(d Decision, err error) (Decision, error) {
	d.Verdict, d.Code = policy.Block, CodeCanceled
	d.Reason = "the decision was not finished: " + err.Error()
	d.RuleID, d.Policy, d.File, d.Line, d.Args = "", "", "", 0, nil
	return d, err
}

func (ev *evaluation) addTrace(d *Decision, r *compile.Rule, outcome string, err error) {
	ev.explain.step(r, outcome, err)
	if !ev.trace {
		return
	}
	st := TraceStep{Rule: r.ID, Policy: r.Policy.Name, Verdict: r.Verdict.String(), Outcome: outcome}
	if err != nil {
		st.Error = err.Error()
	}
	d.Trace = append(d.Trace, st)
}

// traceUnmatched lists the rules of the phase the tool matcher excluded.
func (ev *evaluation) traceUnmatched() []TraceStep {
	var out []TraceStep
	for _, r := range ev.set.Rules() {
		if r.Phase == ev.phase && !r.MatchesTool(ev.call.Tool) {
			out = append(out, TraceStep{Rule: r.ID, Policy: r.Policy.Name, Verdict: r.Verdict.String(), Outcome: OutcomeToolNotMatched})
		}
	}
	return out
}

// applyModify rewrites the call's arguments (before) or the result content
// (after).
func (ev *evaluation) applyModify(d *Decision, r *compile.Rule) error {
	m := r.Modify
	if m == nil {
		return errors.New("modify rule without a modify block")
	}
	if ev.phase == policy.PhaseAfter {
		if m.Content == nil {
			return errors.New("after-phase modify without content")
		}
		out, err := ev.eval(r.Policy, m.Content)
		if err != nil {
			return fmt.Errorf("modify.content: %w", err)
		}
		s, ok := out.(types.String)
		if !ok {
			return fmt.Errorf("modify.content returned %s, not a string", out.Type())
		}
		content := string(s)
		ev.res.Content = content
		ev.result["content"] = content
		d.Content = &content
		return nil
	}
	args := maps.Clone(ev.call.Args)
	if m.Args != nil {
		out, err := ev.eval(r.Policy, m.Args)
		if err != nil {
			return fmt.Errorf("modify.args: %w", err)
		}
		native, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.args: %w", err)
		}
		nm, ok := native.(map[string]any)
		if !ok {
			return fmt.Errorf("modify.args returned %s, not a map", out.Type())
		}
		args = nm
	}
	for _, s := range m.Set {
		out, err := ev.eval(r.Policy, s.Program)
		if err != nil {
			return fmt.Errorf("modify.set.%s: %w", s.Key, err)
		}
		v, err := toNative(out, 0)
		if err != nil {
			return fmt.Errorf("modify.set.%s: %w", s.Key, err)
		}
		args[s.Key] = v
	}
	for _, k := range m.Unset {
		delete(args, k)
	}
	ev.call.Args = args
	return nil
}

// updateCounters runs every counter's reset_when and increment_when after a
// call. A counter expression that fails under a closed failure policy blocks
// the result.
func (ev *evaluation) updateCounters() (Decision, error, bool) {
	type update struct {
		c          *compile.Counter
		key        string
		inc, reset bool
		streak     *string
	}
	var updates []update
	for _, c := range ev.set.Counters() {
		if err := ev.ctx.Err(); err != nil {
			d, cerr := ev.canceled(Decision{Phase: ev.phase, Tool: ev.call.Tool}, err)
			return d, cerr, true
		}
		u := update{c: c}
		key, err := ev.counterKey(c)
		if err == nil && c.IncrementWhen != nil {
			u.inc, err = ev.evalBool(c.Policy, c.IncrementWhen)
			if err != nil {
				err = fmt.Errorf("counter %s increment_when: %w", c.ID, err)
			}
		}
		if err == nil && u.inc && c.Streak != nil {
			var out ref.Val
			out, err = ev.eval(c.Policy, c.Streak)
			if err == nil {
				var v string
				if s, isStr := out.(types.String); isStr {
					v = string(s)
				} else {
					v, err = stdlib.Canonical(out)
				}
				u.streak = &v
			}
			if err != nil {
				err = fmt.Errorf("counter %s streak: %w", c.ID, err)
			}
		}
		if err == nil && c.ResetWhen != nil {
			u.reset, err = ev.evalBool(c.Policy, c.ResetWhen)
			if err != nil {
				err = fmt.Errorf("counter %s reset_when: %w", c.ID, err)
			}
		}
		if err != nil {
			if c.Policy.FailurePolicy == policy.FailOpen {
				continue
			}
			d := Decision{Phase: ev.phase, Tool: ev.call.Tool, Verdict: policy.Block, Code: CodePolicyError,
				Policy: c.Policy.Name, File: c.Policy.File, Error: err.Error(),
				Reason: fmt.Sprintf("policy %s failed: %v", c.Policy.Name, err)}
			return d, nil, true
		}
		u.key = key
		updates = append(updates, u)
	}
	s := ev.s
	now := s.eng.cfg.now()
	s.mu.Lock()
	for _, u := range updates {
		cs := s.counterFor(u.c)
		if u.reset {
			cs.reset(u.key)
		}
		if u.inc {
			cs.increment(u.key, u.c.Decl.Window, now, s.eng.cfg.maxCounterKeys, s.eng.cfg.maxWindowEvents, u.streak)
		}
	}
	s.mu.Unlock()
	// After-phase rules see the updated counts.
	ev.counters = nil
	return Decision{}, nil, false
}

// ask settles an ask verdict through remembered approvals or the approver.
func (ev *evaluation) ask(d Decision, r *compile.Rule) (Decision, error) {
	s := ev.s
	callKey, err := approvalKey(r.ID, ev.call)
	if err != nil {
		return ev.policyError(d, r, err, d.Modified), nil
	}
	ruleKey := r.ID + "\x00*"
	s.mu.Lock()
	remembered := s.approvals[callKey] || s.approvals[ruleKey]
	s.mu.Unlock()
	if remembered {
		d.Verdict = approvedVerdict(d)
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "remembered"}
		return d, nil
	}
	a := s.eng.cfg.approver
	if a == nil {
		d.Verdict, d.Code, d.Args = policy.Block, CodeApprovalRequired, nil
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "unavailable"}
		return d, nil
	}
	ans, err := a.Approve(ev.ctx, ApprovalRequest{SessionID: s.id, Rule: r.ID, Policy: r.Policy.Name, Reason: d.Reason, Code: r.Code, Call: ev.call})
	if err != nil {
		d.Verdict, d.Code, d.Args = policy.Block, CodeApprovalRequired, nil
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "error", Reason: err.Error()}
		if cerr := ev.ctx.Err(); cerr != nil {
			return d, cerr
		}
		return d, nil
	}
	switch ans.Answer {
	case Approve:
		d.Verdict = approvedVerdict(d)
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "approved", Remember: ans.Remember.String(), Reason: ans.Reason}
		s.mu.Lock()
		switch ans.Remember {
		case RememberCall:
			s.remember(callKey)
		case RememberRule:
			s.remember(ruleKey)
		}
		s.mu.Unlock()
	case Defer:
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "deferred"}
	default:
		d.Verdict, d.Code, d.Args = policy.Block, CodeApprovalDenied, nil
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: "denied", Reason: ans.Reason}
		if ans.Reason != "" {
			d.Reason = strings.TrimSpace(d.Reason + " (denied: " + ans.Reason + ")")
		}
	}
	return d, nil
}

// approvedVerdict is allow, or modify when a rewrite preceded the ask, so
// a host that applies rewrites only on modify still applies it.
func approvedVerdict(d Decision) policy.Verdict {
	if len(d.Modified) > 0 {
		return policy.Modify
	}
	return policy.Allow
}

// remember records an approval; the caller holds s.mu. The set is bounded:
// past the bound it is cleared, so the user is asked again (never allowed
// without asking).
func (s *Session) remember(key string) {
	if len(s.approvals) >= DefaultMaxApprovals {
		clear(s.approvals)
	}
	s.approvals[key] = true
}

func approvalKey(rule string, call Call) (string, error) {
	c, err := stdlib.CanonicalNative(call.Args)
	if err != nil {
		return "", fmt.Errorf("approval key: %w", err)
	}
	return rule + "\x00" + call.Tool + "\x00" + c, nil
}
