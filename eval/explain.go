package eval

import (
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"cel.dev/cel-go/parser"

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
	Rule    string `json:"rule"`
	Policy  string `json:"policy"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Verdict string `json:"verdict"`
	// Outcome is one of the Outcome constants: tool_not_matched, no_match
	// (the condition was false), matched (this rule decided), applied (a
	// modify rule rewrote the call), already_applied (a modify rule skipped
	// on a later pass), error.
	Outcome string `json:"outcome"`
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

// explainer builds an Explanation while the evaluation runs; the evaluator
// reports each rule it considers through step.
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
	if e == nil {
		return
	}
	e.pending, e.pendingRule = e.because(r), r
}

// newExplainer starts an explanation of ev into x; nil when x is nil.
func newExplainer(ev *evaluation, x *Explanation) *explainer {
	if x == nil {
		return nil
	}
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

func stepOf(r *compile.Rule, outcome string) ExplainStep {
	st := ExplainStep{Rule: r.ID, Policy: r.Policy.Name, File: r.Pos.File, Line: r.Pos.Line,
		Verdict: r.Verdict.String(), Outcome: outcome}
	if r.Source != nil && r.Source.Condition != nil {
		st.Condition = r.Source.Condition.Text
	}
	return st
}

// step records one rule the evaluator considered. It runs when the outcome
// is known, so the evaluation's call, variables and counters are still the
// ones the rule saw.
func (e *explainer) step(r *compile.Rule, outcome string, err error) {
	if e == nil {
		return
	}
	st := stepOf(r, outcome)
	st.Pass = e.pass
	if err != nil {
		st.Error = err.Error()
	}
	if e.pending != nil && e.pendingRule == r {
		st.Because = e.pending
	} else if outcome == OutcomeNoMatch || outcome == OutcomeMatched || outcome == OutcomeError {
		st.Because = e.because(r)
	}
	e.pending, e.pendingRule = nil, nil
	e.x.Steps = append(e.x.Steps, st)
	if outcome == OutcomeApplied {
		e.pass++
	}
}

// finish completes the explanation with the decision and the counters.
func (e *explainer) finish(d Decision) {
	if e == nil {
		return
	}
	e.x.Decision = d
	if e.ev.ctx.Err() != nil {
		return
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
}

// because evaluates r's condition again with state tracking and walks its
// AST from the root down to the sub-expressions that decided its value.
func (e *explainer) because(r *compile.Rule) []ExprValue {
	if r.ConditionAST == nil || r.Source == nil || r.Source.Condition == nil {
		return nil
	}
	env := e.ev.set.Env()
	opts := append(env.ProgramOptions(), cel.EvalOptions(cel.OptTrackState))
	prg, err := env.CEL().Program(r.ConditionAST, opts...)
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
	native := r.ConditionAST.NativeRep()
	w := walker{state: details.State(), info: native.SourceInfo(), src: *r.Source.Condition, text: []rune(r.Source.Condition.Text)}
	w.why(native.Expr(), 0)
	return w.out
}

// walker finds the sub-expressions that decided a condition's value.
type walker struct {
	state interpreter.EvalState
	info  *celast.SourceInfo
	src   policy.Expr
	text  []rune
	out   []ExprValue
}

// why explains the value of e: through the logical operators it descends to
// the operands responsible, and reports anything else as a leaf with the
// values of its operands.
func (w *walker) why(e celast.Expr, depth int) {
	if len(w.out) >= maxBecause {
		return
	}
	v, ok := w.state.Value(e.ID())
	if !ok {
		return
	}
	if depth < maxExplainDepth && e.Kind() == celast.CallKind {
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.LogicalAnd, operators.LogicalOr:
			for _, a := range w.decisive(call.FunctionName(), v, args) {
				w.why(a, depth+1)
			}
			return
		case operators.LogicalNot:
			w.why(args[0], depth+1)
			return
		case operators.Conditional:
			w.why(args[0], depth+1)
			switch c, _ := w.state.Value(args[0].ID()); c {
			case types.True:
				w.why(args[1], depth+1)
			case types.False:
				w.why(args[2], depth+1)
			}
			return
		}
	}
	out := w.value(e, v)
	for _, op := range operands(e) {
		if op.Kind() == celast.LiteralKind {
			continue
		}
		if ov, ok := w.state.Value(op.ID()); ok {
			out.Operands = append(out.Operands, w.value(op, ov))
		}
	}
	w.out = append(w.out, out)
}

// decisive picks the operands of && or || that gave it the value v: a false
// && is explained by its false operands, a true || by its true ones, an
// error by the failing ones; otherwise every evaluated operand counts.
func (w *walker) decisive(fn string, v ref.Val, args []celast.Expr) []celast.Expr {
	want := types.False
	if fn == operators.LogicalOr {
		want = types.True
	}
	var pick, evaluated []celast.Expr
	for _, a := range args {
		av, ok := w.state.Value(a.ID())
		if !ok {
			continue
		}
		evaluated = append(evaluated, a)
		switch {
		case types.IsError(v):
			if types.IsError(av) {
				pick = append(pick, a)
			}
		case v == want && av == want:
			pick = append(pick, a)
		}
	}
	if len(pick) == 0 {
		return evaluated
	}
	return pick
}

// operands are the direct sub-expressions whose values explain a leaf.
func operands(e celast.Expr) []celast.Expr {
	switch e.Kind() {
	case celast.CallKind:
		c := e.AsCall()
		var out []celast.Expr
		if c.IsMemberFunction() {
			out = append(out, c.Target())
		}
		return append(out, c.Args()...)
	case celast.ComprehensionKind:
		return []celast.Expr{e.AsComprehension().IterRange()}
	case celast.SelectKind:
		return []celast.Expr{e.AsSelect().Operand()}
	}
	return nil
}

// value renders the value of e.
func (w *walker) value(e celast.Expr, v ref.Val) ExprValue {
	text, start := w.source(e)
	out := ExprValue{Expr: text, Pos: w.src.PosOffset(start)}
	switch {
	case types.IsError(v):
		out.Error = fmt.Sprint(v)
		return out
	case types.IsUnknown(v):
		out.Error = "unknown value"
		return out
	}
	out.Type = v.Type().(ref.Type).TypeName()
	native, err := toNative(v, 0)
	if err != nil {
		out.Value = fmt.Sprint(v.Value())
		return out
	}
	out.Value = native
	return out
}

// source returns the text of e as written in the condition and its rune
// offset: the span of e's own token and all its sub-expressions, widened
// over the closing brackets of calls, indexes and literals. When the span
// cannot be trusted, the expression is printed from the AST instead.
func (w *walker) source(e celast.Expr) (string, int) {
	start, stop, ok := w.span(e, 0)
	if ok && start >= 0 && start < stop && int(stop) <= len(w.text) {
		s, t := widen(w.text, int(start), int(stop))
		if text := strings.TrimSpace(string(w.text[s:t])); text != "" && balanced([]rune(text)) {
			return text, s
		}
	}
	text, err := parser.Unparse(e, w.info)
	if err != nil {
		text = fmt.Sprintf("<expression %d>", e.ID())
	}
	if ok && start >= 0 {
		return text, int(start)
	}
	return text, 0
}

// span is the union of the offset ranges of e and its sub-expressions; a
// macro expansion is measured by the call it was written as.
func (w *walker) span(e celast.Expr, depth int) (start, stop int32, ok bool) {
	if depth > 64 {
		return 0, 0, false
	}
	add := func(s, t int32) {
		if !ok || s < start {
			start = s
		}
		if !ok || t > stop {
			stop = t
		}
		ok = true
	}
	if r, found := w.info.GetOffsetRange(e.ID()); found {
		add(r.Start, r.Stop)
	}
	if m, found := w.info.GetMacroCall(e.ID()); found {
		if s, t, k := w.span(m, depth+1); k {
			add(s, t)
		}
		return start, stop, ok
	}
	var kids []celast.Expr
	switch e.Kind() {
	case celast.CallKind, celast.SelectKind:
		kids = operands(e)
	case celast.ListKind:
		kids = e.AsList().Elements()
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			kids = append(kids, me.Key(), me.Value())
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		kids = []celast.Expr{c.IterRange(), c.LoopStep()}
	}
	for _, k := range kids {
		if s, t, found := w.span(k, depth+1); found {
			add(s, t)
		}
	}
	return start, stop, ok
}

// widen grows the span text[s:t] to whole tokens: back over the name of a
// function whose span starts at its parenthesis, forward over a field name
// after a dot and over the closing brackets the span opened.
func widen(text []rune, s, t int) (int, int) {
	for s > 0 && isIdent(text[s-1]) && (text[s] == '(' || isIdent(text[s])) {
		s--
	}
	for t < len(text) && t > s && (text[t-1] == '.' || isIdent(text[t-1])) && isIdent(text[t]) {
		t++
	}
	return s, closeBrackets(text, s, t)
}

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// closeBrackets extends text[s:t] over the closing brackets (and the spaces
// and commas before them) that its open brackets are missing.
func closeBrackets(text []rune, s, t int) int {
	open := 0
	for _, r := range stripStrings(text[s:t]) {
		switch r {
		case '(', '[', '{':
			open++
		case ')', ']', '}':
			open--
		}
	}
	for open > 0 && t < len(text) {
		switch text[t] {
		case ')', ']', '}':
			open--
		case ' ', '\t', '\n', '\r', ',':
		default:
			return t
		}
		t++
	}
	return t
}

// balanced reports whether the brackets of text pair up outside strings.
func balanced(text []rune) bool {
	var stack []rune
	pair := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for _, r := range stripStrings(text) {
		switch r {
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pair[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0
}

// stripStrings blanks out the contents of quoted strings, so brackets in
// them are not counted.
func stripStrings(text []rune) []rune {
	out := slices.Clone(text)
	var quote rune
	for i := 0; i < len(out); i++ {
		r := out[i]
		switch {
		case quote == 0 && (r == '"' || r == '\''):
			quote = r
		case quote != 0 && r == '\\':
			out[i] = ' '
			if i+1 < len(out) {
				i++
				out[i] = ' '
			}
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			out[i] = ' '
		}
	}
	return out
}
