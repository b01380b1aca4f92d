package compile

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// Better messages for two cel-go issues whose text says less than a policy
// author needs: a malformed regex literal (cel-go says only "invalid
// matches argument") and a misspelt function (cel-go says "undeclared
// reference", twice for a namespaced one: 'shell' and 'comands').

// regexReason returns why the string literal at line:col (a cel-go
// location) of text does not compile as a regular expression, in regexp's
// words ("error parsing regexp: missing closing ): `a(`"), or "".
func regexReason(env *cel.Env, text string, line, col int) string {
	parsed, iss := env.Parse(text)
	if iss.Err() != nil {
		return ""
	}
	native := parsed.NativeRep()
	src := native.SourceInfo()
	reason := ""
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(x celast.Expr) {
		if reason != "" || x.Kind() != celast.LiteralKind {
			return
		}
		loc := src.GetStartLocation(x.ID())
		if loc.Line() != line || loc.Column() != col {
			return
		}
		if s, ok := x.AsLiteral().(types.String); ok {
			if _, err := regexp.Compile(string(s)); err != nil {
				reason = err.Error()
			}
		}
	}))
	return reason
}

// calledName returns the dotted name written at rune offset off of text
// when a call's parenthesis follows it (shell.comands in
// "shell.comands(x)"), and whether it does.
func calledName(text string, off int) (string, bool) {
	rs := []rune(text)
	if off < 0 || off >= len(rs) {
		return "", false
	}
	end := off
	for end < len(rs) && isNameRune(rs[end]) {
		end++
	}
	i := end
	for i < len(rs) && unicode.IsSpace(rs[i]) {
		i++
	}
	if end == off || i >= len(rs) || rs[i] != '(' {
		return "", false
	}
	return string(rs[off:end]), true
}

// didYouMean returns the declared function closest to name by edit
// distance, when it is close enough to be a typo of it.
func didYouMean(env *cel.Env, name string) (string, bool) {
	var fns []string
	for fn := range env.Functions() {
		if !strings.ContainsAny(fn, "@_!") || strings.Contains(strings.Trim(fn, "_@!"), "_") {
			fns = append(fns, fn) // operators (_+_, !_, @in) are not written by name
		}
	}
	return policy.Closest(name, fns)
}

// suggestFunction rewrites cel-go's "undeclared reference to 'X'" for a
// call of a function that is not declared: it names the whole dotted name
// written and the declared function closest to it. cel-go places the issue
// at the name (a namespace read as a variable) or at the call's
// parenthesis; off is that place, a rune offset in text. skip reports an
// issue that only repeats another: the 'comands' of "shell.comands(", whose
// namespace 'shell' is reported with the suggestion.
func suggestFunction(env *cel.Env, text, msg string, off int) (newMsg string, skip bool) {
	undeclared, ok := strings.CutPrefix(msg, "undeclared reference to '")
	if !ok {
		return msg, false
	}
	undeclared = strings.TrimSuffix(undeclared, "'")
	rs := []rune(text)
	if off >= 0 && off < len(rs) && rs[off] == '(' {
		for off > 0 && unicode.IsSpace(rs[off-1]) {
			off--
		}
		for off > 0 && isNameRune(rs[off-1]) {
			off--
		}
	}
	name, ok := calledName(text, off)
	if !ok {
		return msg, false
	}
	first, _, dotted := strings.Cut(name, ".")
	switch {
	case dotted && isNamespace(env, first) && undeclared != first:
		return msg, true // the namespace's issue names the function
	case dotted && isNamespace(env, first):
		msg = fmt.Sprintf("undeclared reference to '%s'", name)
	case dotted:
		// a method of a value (tool.startsWit): the method's name
		name = name[strings.LastIndexByte(name, '.')+1:]
		if name != undeclared {
			return msg, false
		}
	}
	if fn, ok := didYouMean(env, name); ok {
		return fmt.Sprintf("undeclared reference to '%s'; did you mean '%s'?", name, fn), false
	}
	return msg, false
}

func isNameRune(r rune) bool {
	return r == '.' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isNamespace reports whether functions are declared as ns.name.
func isNamespace(env *cel.Env, ns string) bool {
	for fn := range env.Functions() {
		if strings.HasPrefix(fn, ns+".") {
			return true
		}
	}
	return false
}

// suggestField adds to cel-go's "undefined field 'operandz'" the field of
// the stdlib's result types closest to the one written, when it is close
// enough to be a typo of it ("did you mean 'operands'?"). The only object
// types of the environment are those, so one of them was selected from.
func suggestField(msg string) string {
	name, ok := strings.CutPrefix(msg, "undefined field '")
	if !ok || !strings.HasSuffix(name, "'") {
		return msg
	}
	name = strings.TrimSuffix(name, "'")
	var fields []string
	for _, rt := range stdlib.ResultTypes() {
		for _, f := range rt.Fields {
			fields = append(fields, f.Name)
		}
	}
	if best, ok := policy.Closest(name, fields); ok {
		return fmt.Sprintf("%s; did you mean '%s'?", msg, best)
	}
	return msg
}
