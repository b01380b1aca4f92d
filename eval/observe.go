package eval

import "github.com/celguard/celguard/compile"

// observer watches the decision loop (decide.go) without taking part in it:
// the trace (WithTrace) and the explanation (WithExplain) are observers.
type observer interface {
	// startPass is called before each pass over the candidate rules of a
	// track (the trusted rules, or the untrusted project's): once, and
	// again after each rewrite.
	startPass(untrusted bool)
	// conditionDone is called right after r's condition was evaluated,
	// while the call is still the one the condition saw.
	conditionDone(r *compile.Rule)
	// step reports what came of rule r; err is set for OutcomeError.
	step(r *compile.Rule, outcome Outcome, err error)
	// finish is called with the decision once it is made, and returns it
	// completed (the tracer adds the trace). By value, so the decision does
	// not escape to the heap.
	finish(d Decision) Decision
}

// newObserver returns the observers a call asked for.
func newObserver(ev *evaluation, trace bool, x *Explanation) observer {
	var obs observers
	if trace {
		obs = append(obs, &tracer{ev: ev})
	}
	if x != nil {
		// After the tracer: the explanation's decision includes the trace.
		obs = append(obs, newExplainer(ev, x))
	}
	switch len(obs) {
	case 0:
		return noObserver{}
	case 1:
		return obs[0]
	}
	return obs
}

// noObserver watches nothing: the common case costs nothing.
type noObserver struct{}

func (noObserver) startPass(bool)                     {}
func (noObserver) conditionDone(*compile.Rule)        {}
func (noObserver) step(*compile.Rule, Outcome, error) {}
func (noObserver) finish(d Decision) Decision         { return d }

// observers reports to each observer in turn.
type observers []observer

func (os observers) startPass(untrusted bool) {
	for _, o := range os {
		o.startPass(untrusted)
	}
}

func (os observers) conditionDone(r *compile.Rule) {
	for _, o := range os {
		o.conditionDone(r)
	}
}

func (os observers) step(r *compile.Rule, outcome Outcome, err error) {
	for _, o := range os {
		o.step(r, outcome, err)
	}
}

func (os observers) finish(d Decision) Decision {
	for _, o := range os {
		d = o.finish(d)
	}
	return d
}

// tracer records Decision.Trace: at the start of each pass the rules of the
// phase and track whose tool matcher excludes the tool, then each rule
// considered.
type tracer struct {
	ev    *evaluation
	steps []TraceStep
}

func (t *tracer) startPass(untrusted bool) {
	for _, r := range t.ev.set.Rules() {
		if r.Phase == t.ev.phase && r.Policy.Untrusted == untrusted && !r.MatchesTool(t.ev.call.Tool) {
			t.steps = append(t.steps, traceStep(r, OutcomeToolNotMatched, nil))
		}
	}
}

func (t *tracer) conditionDone(*compile.Rule) {}

func (t *tracer) step(r *compile.Rule, outcome Outcome, err error) {
	t.steps = append(t.steps, traceStep(r, outcome, err))
}

func (t *tracer) finish(d Decision) Decision {
	d.Trace = t.steps
	return d
}

func traceStep(r *compile.Rule, outcome Outcome, err error) TraceStep {
	st := TraceStep{Rule: r.ID, Policy: r.Policy.Name, Verdict: r.Verdict.String(), Outcome: outcome, Untrusted: r.Policy.Untrusted}
	if err != nil {
		st.Error = err.Error()
	}
	return st
}
