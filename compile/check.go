package compile

import (
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// checkedExpr is an expression that type-checked, with the scope it was
// checked in and what it reads.
type checkedExpr struct {
	sc    scope
	expr  policy.Expr
	ast   *cel.Ast
	reads refs
}

// scope is what an expression may see: the policy's environment, and what
// the place it is written in allows.
type scope struct {
	env  *lazyEnv
	pol  *Policy
	what string
	// noResult forbids `result` (rules of every phase but after, counter
	// keys, before counters).
	noResult bool
	// phase, when phased, is the phase the expression runs in (a rule's,
	// a counter's): reading a built-in variable the phase does not have
	// (celenv.Variable.In) is an error.
	phase  policy.Phase
	phased bool
	// noCounters forbids `counters` (counter expressions).
	noCounters bool
	want       *cel.Type // nil: any type
}

// noResultWhen says when the expression of sc runs without a result.
func (sc scope) noResultWhen() string {
	if !sc.phased {
		return "before the call"
	}
	switch sc.phase {
	case policy.PhaseTurnEnd:
		return "at turn end"
	case policy.PhaseInput, policy.PhaseOutput, policy.PhaseTools, policy.PhaseResource:
		return "in the " + sc.phase.String() + " phase"
	}
	return "before the call"
}

// exprInfo records which built-ins an expression reads, directly or through
// variables, and its value when it is a constant string or list of strings
// (patterns.go).
type exprInfo struct {
	result, counters bool
	// builtins are the built-in variables read (builtinSet).
	builtins builtinSet
	value    *constValue
}

// builtinSet is a set of built-in variables, by their index in
// celenv.Variables.
type builtinSet uint64

// builtinIndex is the index of each built-in variable in celenv.Variables.
var builtinIndex = func() map[string]int {
	m := map[string]int{}
	for i, v := range celenv.Variables() {
		m[v.Name] = i
	}
	if len(m) > 64 {
		panic("compile: more built-in variables than a builtinSet holds")
	}
	return m
}()

// compileExpr type-checks an expression and builds its program; nil on
// error (already reported).
func (c *compiler) compileExpr(sc scope, e policy.Expr, info map[string]exprInfo) *Program {
	if c.replay != nil {
		return c.replayProgram(e) // setcache.go
	}
	ast, _, ok := c.typeCheck(sc, e, info)
	if !ok {
		return nil
	}
	return c.program(ast, e, info)
}

// typeCheck parses and type-checks one expression, reporting CEL errors at
// their place in the YAML file, then makes the celguard-specific checks: the
// type the place wants, and what the expression reads (references). It
// returns the checked expression even when only the latter checks fail.
func (c *compiler) typeCheck(sc scope, e policy.Expr, info map[string]exprInfo) (*cel.Ast, exprInfo, bool) {
	checked, ok := c.checkedAST(sc, e)
	if !ok {
		return nil, exprInfo{}, false
	}
	if sc.want != nil && !assignable(sc.want, checked.OutputType()) {
		c.errorf(policy.CodeWrongResultType, e.Pos, "%s must be of type %s, but the expression is of type %s",
			sc.what, typeName(sc.want), typeName(checked.OutputType()))
		ok = false
	}
	ei, rs, refsOK := c.references(sc, e, checked, info)
	if ok && refsOK {
		c.checked = append(c.checked, checkedExpr{sc: sc, expr: e, ast: checked, reads: rs})
	}
	return checked, ei, ok && refsOK
}

// checkedAST returns an expression's checked AST: from the AST cache, or by
// parsing and type-checking it with CEL. Only expressions that check are
// cached.
func (c *compiler) checkedAST(sc scope, e policy.Expr) (*cel.Ast, bool) {
	var key string
	if c.cfg.cache != nil {
		key = c.cacheKey(e.Text)
		if b, hit := c.cfg.cache.Get(key); hit {
			if ast, err := decodeAST(b); err == nil && ast.IsChecked() {
				return ast, true
			}
		}
	}
	env := sc.env.get()
	parsed, iss := env.Parse(e.Text)
	if iss.Err() != nil {
		c.celIssues(policy.CodeCELSyntax, sc, e, iss)
		return nil, false
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		c.celIssues(policy.CodeCELType, sc, e, iss)
		return nil, false
	}
	if c.cfg.cache != nil {
		if b, err := encodeAST(checked); err == nil {
			c.cfg.cache.Put(key, b)
		}
	}
	return checked, true
}

func assignable(want, got *cel.Type) bool {
	if got.Kind() == types.DynKind || want.IsAssignableType(got) {
		return true
	}
	return false
}

func typeName(t *cel.Type) string { return t.String() }

// phaseHas reports whether the phase of sc has the built-in variable name,
// and reports an error (variable_phase) where it does not: read directly, or
// through the policy variable via. result is checked apart (noResult).
func (c *compiler) phaseHas(sc scope, name string, pos policy.Pos, via string) bool {
	v, _ := celenv.Lookup(name)
	if !sc.phased || name == celenv.VarResult || v.In(sc.phase) {
		return true
	}
	where := make([]string, len(v.Phases))
	for i, ph := range v.Phases {
		where[i] = ph.String()
	}
	has := "phase: " + strings.Join(where, ", ")
	if via != "" {
		c.errorf(policy.CodeVariablePhase, pos, "%s uses variable %s, which reads %s; the %s phase has no %s (it is read in %s)", sc.what, via, name, sc.phase, name, has)
		return false
	}
	c.errorf(policy.CodeVariablePhase, pos, "%s reads %s, but the %s phase has no %s; it is read in %s", sc.what, name, sc.phase, name, has)
	return false
}
