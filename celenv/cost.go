package celenv

import (
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
)

// linearFunctions are the functions whose work is at most linear in the
// size of their arguments and whose result is no larger than a constant
// times their input: an expression made only of them, with no
// comprehension, cannot run away, so it needs no runtime cost accounting.
// Anything not listed (list ranges, set operations, every comprehension
// macro) keeps the accounting and the cost limit.
var linearFunctions = map[string]bool{
	// operators
	"_&&_": true, "_||_": true, "!_": true, "_?_:_": true, "_==_": true, "_!=_": true,
	"_<_": true, "_<=_": true, "_>_": true, "_>=_": true, "_+_": true, "_-_": true,
	"_*_": true, "_/_": true, "_%_": true, "-_": true, "_[_]": true, "@in": true,
	"_?._": true, "_[?_]": true, "@not_strictly_false": true,
	// standard functions and conversions
	"size": true, "contains": true, "startsWith": true, "endsWith": true, "matches": true,
	"string": true, "int": true, "uint": true, "double": true, "bool": true, "bytes": true,
	"dyn": true, "type": true, "duration": true, "timestamp": true,
	// ext strings
	"lowerAscii": true, "upperAscii": true, "trim": true, "indexOf": true, "lastIndexOf": true,
	"substring": true, "charAt": true, "split": true, "join": true, "reverse": true, "strings.quote": true,
	// optional types
	"optional.of": true, "optional.ofNonZeroValue": true, "optional.none": true,
	"orValue": true, "or": true, "hasValue": true, "value": true,
	// encoders
	"base64.encode": true, "base64.decode": true,
	// celguard stdlib: bounded by the stdlib's own input limits
	"canonical": true,
}

// linearNamespaces are stdlib namespaces whose every function is linear in
// its input (the stdlib bounds shell input and output sizes).
var linearNamespaces = []string{"shell.", "path.", "glob.", "hash.", "secrets.", "url."}

// NeedsCostTracking reports whether a checked expression must be evaluated
// with runtime cost accounting and the cost limit: true when it holds a
// comprehension or calls a function not known to be linear. Expressions for
// which it is false cost at most a constant number of passes over their
// input, and skip the accounting (which is about a third of a rule's
// evaluation time).
func NeedsCostTracking(ast *cel.Ast) bool {
	return NeedsCostTrackingExpr(ast.NativeRep().Expr())
}

// NeedsCostTrackingExpr is NeedsCostTracking of a checked expression's
// native tree.
func NeedsCostTrackingExpr(x celast.Expr) bool {
	needs := false
	celast.PreOrderVisit(x, celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.ComprehensionKind:
			needs = true
		case celast.CallKind:
			fn := e.AsCall().FunctionName()
			if linearFunctions[fn] {
				return
			}
			for _, ns := range linearNamespaces {
				if strings.HasPrefix(fn, ns) {
					return
				}
			}
			needs = true
		}
	}))
	return needs
}

// ProgramOptionsFor returns the program options for a checked expression:
// ProgramOptions when it needs cost tracking, UntrackedProgramOptions
// otherwise.
func (e *Env) ProgramOptionsFor(ast *cel.Ast) []cel.ProgramOption {
	if NeedsCostTracking(ast) {
		return e.ProgramOptions()
	}
	return e.UntrackedProgramOptions()
}

// UntrackedProgramOptions are ProgramOptions without the runtime cost
// accounting and limit: for expressions that cannot run away, or whose
// worst-case cost for the input at hand is proven within the limit.
func (e *Env) UntrackedProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.OptimizeRegex(prefilteredMatches...),
		cel.InterruptCheckFrequency(DefaultInterruptCheckFrequency),
	}
}
