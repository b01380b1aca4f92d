package compile

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

func (c *compiler) celIssues(code policy.Code, sc scope, e policy.Expr, iss *cel.Issues) {
	for _, ce := range iss.Errors() {
		pos := e.Pos
		msg := ce.Message
		if ce.Location != nil && ce.Location.Line() > 0 {
			line, col := ce.Location.Line(), ce.Location.Column()
			pos = errorPos(e, line, col, msg)
			if code == policy.CodeCELType {
				var skip bool
				if msg, skip = suggestFunction(sc.env.get(), e.Text, msg, runeOffset(e.Text, line, col)); skip {
					continue
				}
				msg = suggestField(msg)
				if celInvalidRegexLiteral(msg) {
					if why := regexReason(sc.env.get(), e.Text, line, col); why != "" {
						msg += ": " + why
					}
				}
			}
		}
		code, msg := literalCode(code, msg)
		c.errorf(code, pos, "%s: %s", sc.what, msg)
	}
}

// runeOffset turns a cel-go location (1-based line, 0-based rune column) into
// a rune offset in text.
func runeOffset(text string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		off += utf8.RuneCountInString(text[:i+1])
		text = text[i+1:]
	}
	return off + col
}

// errorPos maps a CEL error location to the file. An error naming a function
// (celCalledFunction) points at the function's name rather than at the
// parenthesis after it.
func errorPos(e policy.Expr, line, col int, msg string) policy.Pos {
	if strings.HasPrefix(msg, "undefined field '") {
		// cel-go places a select at its dot: the caret goes on the field.
		return fieldPos(e, line, col)
	}
	off := runeOffset(e.Text, line, col)
	if fn, ok := celCalledFunction(msg); ok {
		rs := []rune(e.Text)
		if off >= 0 && off < len(rs) && rs[off] == '(' {
			i := off
			for i > 0 && unicode.IsSpace(rs[i-1]) {
				i--
			}
			if name := []rune(fn); i >= len(name) && string(rs[i-len(name):i]) == fn {
				return e.PosOffset(i - len(name))
			}
		}
	}
	return e.PosOffset(off)
}

// fieldPos maps the location of a select expression, which cel-go places at
// its dot, to the field name after the dot.
func fieldPos(e policy.Expr, line, col int) policy.Pos {
	off := runeOffset(e.Text, line, col)
	rs := []rune(e.Text)
	i := off
	if i >= 0 && i < len(rs) && rs[i] == '.' {
		i++
		if i < len(rs) && rs[i] == '?' {
			i++
		}
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		if i < len(rs) {
			return e.PosOffset(i)
		}
	}
	return e.PosOffset(off)
}

// literalCode classifies the type errors the literal validators report, the
// stdlib's (tagged: their message loses the tag) and cel-go's for regexes,
// as invalid_literal. Other issues keep code and message.
func literalCode(code policy.Code, msg string) (policy.Code, string) {
	if code != policy.CodeCELType {
		return code, msg
	}
	if m, ok := stdlib.CutInvalidLiteral(msg); ok {
		return policy.CodeInvalidLiteral, m
	}
	if celInvalidRegexLiteral(msg) {
		return policy.CodeInvalidLiteral, msg
	}
	return code, msg
}
