package eval

import (
	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// Explanation says how one call was decided: every rule of the phase in the
// order it was considered and what came of it, with the values of the
// sub-expressions that gave each condition its value; the counters the call
// saw; and the decision. It answers "which rule decided this call, and why
// didn't mine?". Its JSON field names are stable.
//
// Ask for one with WithExplain. Explaining costs a second, state-tracking
// evaluation of every condition the evaluator ran (against the same call,
// variables and counters, so the values are the ones the rule saw); it is
// meant for people and tools debugging policies, not for every call.
type Explanation struct {
	// Decision is the decision the call got, exactly as Before or After
	// returned it.
	Decision Decision `json:"decision"`
	// Steps are the rules in the order they were considered: first the rules
	// of the phase whose tool matcher excluded the tool (outcome
	// tool_not_matched), then every rule tried, in evaluation order. After a
	// modify rule applied, evaluation starts again from the top and the
	// rules tried again appear again, with the next Pass number.
	Steps []ExplainStep `json:"steps"`
	// Counters are the values of the set's counters for this call, as the
	// rules read them (after the call's own update in the after phase).
	Counters []CounterValue `json:"counters,omitempty"`
	// Halted is set when no rule was tried because an earlier call halted
	// the turn; Decision names the halting rule.
	Halted bool `json:"halted,omitempty"`
}

// ExplainStep is one rule as the evaluator considered it.
type ExplainStep struct {
	// RuleRef identifies the rule (a compiled rule has an id, a policy
	// and a position, so none of its fields is empty).
	compile.RuleRef
	Verdict string `json:"verdict"`
	// Outcome is one of the Outcome constants: tool_not_matched, no_match
	// (the condition was false), matched (this rule decided), applied (a
	// modify rule rewrote the call), already_applied (a modify rule skipped
	// on a later pass), error.
	Outcome Outcome `json:"outcome"`
	// Pass counts evaluation passes from 1; each applied modify rule starts
	// a new pass. Zero for tool_not_matched steps.
	Pass int `json:"pass,omitempty"`
	// Condition is the rule's condition as written; empty for a rule
	// without one (which always matches).
	Condition string `json:"condition,omitempty"`
	// Because holds the sub-expressions that gave the condition its value:
	// for no_match the parts that were false (the false operands of &&,
	// every operand of a false ||, the operand of a true !), for matched and
	// applied the parts that were true, for error the parts that failed.
	// Each comes with the values of its own operands.
	Because []ExprValue `json:"because,omitempty"`
	// Error is the run-time error of an error step.
	Error string `json:"error,omitempty"`
	// Untrusted marks a rule of an untrusted project, whose rules are
	// tried apart, after the trusted ones (docs/layers.md).
	Untrusted bool `json:"untrusted,omitempty"`
}

// ExprValue is the value a sub-expression of a condition had.
type ExprValue struct {
	// Expr is the sub-expression's source text as written in the condition.
	Expr string `json:"expr"`
	// Pos is where it starts in the policy file.
	Pos policy.Pos `json:"pos"`
	// Value is the value in the JSON data model (strings, numbers, booleans,
	// lists, maps, null); absent when Error is set.
	Value any `json:"value,omitempty"`
	// Type is the CEL type of the value, e.g. string, int, bool, map.
	Type string `json:"type,omitempty"`
	// Error is the evaluation error of the sub-expression.
	Error string `json:"error,omitempty"`
	// Operands are the values of the sub-expression's non-constant operands
	// that were evaluated: the sides of a comparison, a function's receiver
	// and arguments, a field selection's operand, a macro's range.
	Operands []ExprValue `json:"operands,omitempty"`
}

// CounterValue is a counter's count for the call.
type CounterValue struct {
	// Counter is the counter's id, "policy/name".
	Counter string `json:"counter"`
	// Key is the counter key computed for the call.
	Key string `json:"key"`
	// Value is the count the rules saw.
	Value int64 `json:"value"`
	// Error is set when the key could not be computed (the count is then
	// unreadable for the call).
	Error string `json:"error,omitempty"`
}

// WithExplain makes Before or After fill *x with the explanation of the
// decision. The call is decided exactly as it would be without the option
// (counters update, halts and approvals are remembered); *x is complete
// when Before or After returns.
func WithExplain(x *Explanation) CallOption {
	return func(c *callConfig) { c.explain = x }
}

// Limits of an explanation, so a pathological condition cannot make it huge.
const (
	maxBecause      = 16
	maxExplainDepth = 32
)

// explainer builds an Explanation while the evaluation runs: it is an
// observer (observe.go) of the decision loop.
type explainer struct {
	x    *Explanation
	ev   *evaluation
	pass int
	// pending is the explanation of pendingRule's condition, taken by
	// conditionDone before a modify rule rewrites the call.
	pending     []ExprValue
	pendingRule *compile.Rule
}

// conditionDone explains r's condition right after the evaluator ran it,
// while the call is still the one the condition saw.
func (e *explainer) conditionDone(r *compile.Rule) {
	e.pending, e.pendingRule = e.because(r), r
}

// startPass implements observer: passes are counted by the rewrites.
func (e *explainer) startPass(bool) {}

// newExplainer starts an explanation of ev into x: first the rules the tool
// matcher excluded.
func newExplainer(ev *evaluation, x *Explanation) *explainer {
	*x = Explanation{Steps: []ExplainStep{}}
	for _, r := range ev.set.Rules() {
		if r.Phase == ev.phase && !r.MatchesTool(ev.call.Tool) {
			x.Steps = append(x.Steps, stepOf(r, OutcomeToolNotMatched))
		}
	}
	return &explainer{x: x, ev: ev, pass: 1}
}

// explainHalted fills x for a call refused because the turn was halted.
func explainHalted(x *Explanation, d Decision) {
	if x == nil {
		return
	}
	*x = Explanation{Decision: d, Steps: []ExplainStep{}, Halted: true}
}

func stepOf(r *compile.Rule, outcome Outcome) ExplainStep {
	st := ExplainStep{RuleRef: r.Ref(),
		Verdict: r.Verdict.String(), Outcome: outcome, Untrusted: r.Policy.Untrusted}
	if r.Source != nil && r.Source.Condition != nil {
		st.Condition = r.Source.Condition.Text
	}
	return st
}

// step records one rule the evaluator considered. It runs when the outcome
// is known, so the evaluation's call, variables and counters are still the
// ones the rule saw.
func (e *explainer) step(r *compile.Rule, outcome Outcome, err error) {
	st := stepOf(r, outcome)
	st.Pass = e.pass
	if err != nil {
		st.Error = err.Error()
	}
	if e.pending != nil && e.pendingRule == r {
		st.Because = e.pending
	} else if outcome == OutcomeNoMatch || outcome == OutcomeMatched || outcome == OutcomeError || outcome == OutcomeMonitored {
		st.Because = e.because(r)
	}
	e.pending, e.pendingRule = nil, nil
	e.x.Steps = append(e.x.Steps, st)
	if outcome == OutcomeApplied {
		e.pass++
	}
}

// finish completes the explanation with the decision and the counters.
func (e *explainer) finish(d Decision) Decision {
	e.x.Decision = d
	if e.ev.ctx.Err() != nil {
		return d
	}
	for _, c := range e.ev.set.Counters() {
		cv := CounterValue{Counter: c.ID}
		key, err := e.ev.counterKey(c)
		if err != nil {
			cv.Error = err.Error()
		} else {
			cv.Key = key
			cv.Value = e.ev.s.counterValue(c, key)
		}
		e.x.Counters = append(e.x.Counters, cv)
	}
	return d
}

// because evaluates r's condition again with state tracking and walks its
// AST from the root down to the sub-expressions that decided its value.
func (e *explainer) because(r *compile.Rule) []ExprValue {
	if r.ConditionAST() == nil || r.Source == nil || r.Source.Condition == nil {
		return nil
	}
	env := e.ev.set.Env()
	opts := append(env.ProgramOptions(), cel.EvalOptions(cel.OptTrackState))
	prg, err := env.CEL().Program(r.ConditionAST(), opts...)
	if err != nil {
		return []ExprValue{{Expr: r.Source.Condition.Text, Pos: r.Source.Condition.Pos, Error: "cannot explain: " + err.Error()}}
	}
	e.ev.cur = r.Policy
	var details *cel.EvalDetails
	if e.ev.ctx.Done() != nil {
		_, details, _ = prg.ContextEval(e.ev.ctx, e.ev)
	} else {
		_, details, _ = prg.Eval(e.ev)
	}
	if details == nil || details.State() == nil {
		return nil
	}
	native := r.ConditionAST().NativeRep()
	w := walker{state: details.State(), info: native.SourceInfo(), src: *r.Source.Condition, text: []rune(r.Source.Condition.Text)}
	w.why(native.Expr(), 0)
	return w.out
}
