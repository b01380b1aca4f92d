package compile

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/overloads"
)

// The adapters to cel-go's wording. cel-go's issues carry a message and a
// location, nothing typed, so the few places where the compiler must tell
// one issue from another read the message; they are all here, each pinned
// by depmessages_test.go against the cel-go in go.mod, so that an upgrade
// that changes a message fails that test rather than silently moving a
// caret or changing a code. celguard's own validators mark their issues
// instead (stdlib.CutInvalidLiteral).

// celNamedCallRe matches cel-go's type errors about a function: an unknown
// one ("undeclared reference to 'f'") and a call whose arguments fit no
// overload ("found no matching overload for 'f' applied to ..."). cel-go
// places both at the call's opening parenthesis.
var celNamedCallRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:undeclared reference to|found no matching overload for) '([^']+)'`)
})

// celCalledFunction returns the function a cel-go type error is about, if it
// is about one (see celNamedCallRe).
func celCalledFunction(msg string) (string, bool) {
	m := celNamedCallRe().FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// celRegexLiteralMsg is the message of cel.ValidateRegexLiterals, which
// celenv installs: the literal pattern of s.matches(re) does not compile.
var celRegexLiteralMsg = fmt.Sprintf("invalid %s argument", overloads.Matches)

// celInvalidRegexLiteral reports whether a cel-go issue is
// cel.ValidateRegexLiterals' report of a malformed literal pattern.
func celInvalidRegexLiteral(msg string) bool {
	return msg == celRegexLiteralMsg || strings.HasPrefix(msg, celRegexLiteralMsg+": ")
}

// celBindIterVar is the iteration variable of the comprehension cel.bind
// expands to (over an empty list, with the bound name as accumulator).
// cel-go keeps the name unexported; no expression can spell it.
const celBindIterVar = "#unused"

// celIsBind reports whether a comprehension is a cel.bind: its accumulator
// is the bound name, its initial value the bound expression, its result the
// body.
func celIsBind(comp celast.ComprehensionExpr) bool {
	r := comp.IterRange()
	return comp.IterVar() == celBindIterVar && !comp.HasIterVar2() &&
		r.Kind() == celast.ListKind && len(r.AsList().Elements()) == 0
}
