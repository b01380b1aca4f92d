package eval

import (
	"fmt"
	"slices"
	"strings"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
	"cel.dev/cel-go/parser"

	"github.com/celguard/celguard/policy"
)

// This file finds, in a condition evaluated with state tracking, the
// sub-expressions that gave it its value (ExplainStep.Because), and their
// source text.

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
	out.Type = v.Type().TypeName()
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
