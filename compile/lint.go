package compile

import (
	"fmt"
	"slices"
	"strings"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/policy"
)

// lint runs the analyses of a set that compiled without error: they reason
// about evaluation order, checked expressions and the references between
// them, none of which is reliable while errors remain (a condition that
// failed to compile would look absent, a variable read only by a broken
// expression would look unused). Every finding is a warning.
func (c *compiler) lint() {
	byPos := make(map[policy.Pos]checkedExpr, len(c.checked))
	for _, ce := range c.checked {
		byPos[ce.expr.Pos] = ce
	}
	l := &linter{c: c, byPos: byPos}
	l.rules()
	for _, p := range c.set.policies {
		l.references(p)
	}
	l.costs()
	l.unguardedArgs() // unguarded.go
}

type linter struct {
	c     *compiler
	byPos map[policy.Pos]checkedExpr
}

func (l *linter) warn(code policy.Code, pos policy.Pos, related []policy.Pos, format string, args ...any) {
	l.c.ds = append(l.c.ds, policy.Diagnostic{Code: code, Severity: policy.SeverityWarning, Pos: pos,
		Related: related, Message: fmt.Sprintf(format, args...)})
}

// literalBool reports the value of an expression that is a bool literal
// (`true`, `false`, with or without parentheses).
func (l *linter) literalBool(e *policy.Expr) (value, ok bool) {
	if e == nil {
		return false, false
	}
	ce, found := l.byPos[e.Pos]
	if !found {
		return false, false
	}
	x := ce.ast.NativeRep().Expr()
	if x.Kind() != celast.LiteralKind {
		return false, false
	}
	b, isBool := x.AsLiteral().(types.Bool)
	return bool(b), isBool
}

// unconditional reports whether a rule's condition always holds: it has
// none, or it is the literal true.
func (l *linter) unconditional(r *Rule) bool {
	if r.Source.Condition == nil {
		return true
	}
	v, ok := l.literalBool(r.Source.Condition)
	return ok && v
}

// rules reports rules that can never fire (false_condition, shadowed_rule)
// and rules that stop a call without saying why (missing_reason).
func (l *linter) rules() {
	for _, rules := range l.sequences() { // crosslayer.go
		l.shadowing(rules)
		l.duplicateConditions(rules) // duplicates.go
	}
	for _, r := range l.c.set.rules {
		src := r.Source
		if src.Phase == policy.PhaseTools {
			for _, name := range src.Tools {
				if !strings.HasPrefix(name.Value, "mcp__") && !strings.ContainsAny(name.Value, "*?[") {
					l.warn(policy.CodeToolsPhaseNotMCP, name.Pos, nil,
						"rule %q of phase tools names %s, which is not an MCP tool (mcp__SERVER__TOOL): only the MCP proxy decides which tools a client is shown, and no hook host lets a hook hide a tool, so this rule hides nothing; refuse its calls with a rule of phase before instead", r.ID, name.Value)
				}
			}
		}
		switch r.Verdict {
		case policy.Block, policy.Halt, policy.Ask:
			if strings.TrimSpace(src.Reason) == "" && src.Message == nil {
				l.warn(policy.CodeMissingReason, src.VerdictPos, nil,
					"rule %q decides %s with neither reason nor message: the model and the user are not told why", r.ID, r.Verdict)
			}
		}
	}
}

// shadowBudget bounds the glob comparisons of the shadowing analysis, so a
// set of many thousands of unconditional glob rules stays fast to lint; past
// it, only match-all and exact-name shadowing is reported.
const shadowBudget = 1 << 20

// shadowing reports, for the rules of one sequence (one phase of the
// trusted or of the untrusted rules, see sequences) in evaluation order,
// each rule an earlier rule always decides first: a rule with no condition
// (or the condition true) and a verdict other than modify stops evaluation
// for every tool its matcher admits, so a later rule whose tools are all
// among those can never fire. The tools of the later rule may be covered by
// several earlier rules together; each is named.
func (l *linter) shadowing(rules []*Rule) {
	var (
		matchAll *Rule                // the first unconditional rule that matches every tool
		exact    = map[string]*Rule{} // the first unconditional rule naming a tool exactly
		globbed  []*Rule              // unconditional rules with a glob or a class, in order
		budget   = shadowBudget
	)
	for _, r := range rules {
		if v, ok := l.literalBool(r.Source.Condition); ok && !v {
			l.warn(policy.CodeFalseCondition, r.Source.Condition.Pos, nil,
				"rule %q can never fire: its condition is the literal false", r.ID)
			continue
		}
		if by := l.coveredBy(r, matchAll, exact, globbed, &budget); len(by) > 0 {
			l.reportShadowed(r, by)
		}
		if r.Verdict == policy.Modify || !l.unconditional(r) {
			continue
		}
		switch {
		case matchesAll(r):
			if matchAll == nil {
				matchAll = r
			}
		default:
			if len(r.Classes) > 0 {
				globbed = append(globbed, r)
			}
			for _, t := range r.Tools {
				if isGlob(t) {
					if !slices.Contains(globbed, r) {
						globbed = append(globbed, r)
					}
				} else if _, seen := exact[t]; !seen {
					exact[t] = r
				}
			}
		}
	}
}

// probeTool is a tool name no matcher names and no class holds: a rule
// without tools that does not admit it is narrowed by something other than
// its tool list (its classes).
const probeTool = "\x00celguard-lint-probe"

// matchesAll reports whether a rule admits every tool.
func matchesAll(r *Rule) bool { return len(r.Tools) == 0 && r.MatchesTool(probeTool) }

// coveredBy returns the earlier unconditional rules that together admit
// every tool r admits, or nil when some tool of r may reach r.
func (l *linter) coveredBy(r *Rule, matchAll *Rule, exact map[string]*Rule, globbed []*Rule, budget *int) []*Rule {
	if matchAll != nil {
		return []*Rule{matchAll}
	}
	patterns := r.Tools
	if len(patterns) == 0 || len(r.Classes) > 0 {
		// Every tool: a rule without a matcher admits them all, and one
		// with classes admits their tools too, which only a match-all
		// rule is sure to cover.
		patterns = []string{"**"}
	}
	var by []*Rule
	for _, p := range patterns {
		var cover *Rule
		if !isGlob(p) {
			cover = exact[p]
		}
		for _, g := range globbed {
			if cover != nil && cover.Order < g.Order {
				break // the earliest covering rule is enough
			}
			if *budget <= 0 {
				break
			}
			*budget -= len(g.Tools) + 1
			if ruleCovers(g, p) {
				cover = g
				break
			}
		}
		if cover == nil {
			return nil
		}
		if !slices.Contains(by, cover) {
			by = append(by, cover)
		}
	}
	slices.SortFunc(by, func(a, b *Rule) int { return a.Order - b.Order })
	return by
}

// ruleCovers reports whether rule g admits every tool pattern p admits: a
// name by MatchesTool (tools, globs and classes), a glob by g's own tools
// (its classes are not counted, so coverage is never overstated).
func ruleCovers(g *Rule, p string) bool {
	if !isGlob(p) {
		return g.MatchesTool(p)
	}
	for _, t := range g.Tools {
		if globCovers(t, p) {
			return true
		}
	}
	return false
}

// globCovers reports whether glob g matches every name glob p matches. It is
// exact for the common shapes (the same glob, "**", "*", a literal prefix
// followed by "*") and says false for the others: a shadowed rule is only
// reported when it certainly is.
func globCovers(g, p string) bool {
	switch {
	case g == p, g == "**":
		return true
	case !strings.HasSuffix(g, "*"):
		return false
	}
	lit := strings.TrimRight(g, "*")
	if isGlob(lit) || (lit == "" && g != "*") {
		return false
	}
	// g is lit followed by "*" (or "**" inside a name, which doublestar
	// reads as "*"): it matches every name that starts with lit and has no
	// "/". p must start with the same literal text, and none of its names
	// may hold a "/" (a literal one, or one matched by "**" or a class).
	return strings.HasPrefix(p, lit) && !strings.ContainsAny(p, "/[\\") && !strings.Contains(p, "**")
}

func (l *linter) reportShadowed(r *Rule, by []*Rule) {
	cross := crossLayer(r, by) // crosslayer.go
	related := make([]policy.Pos, 0, len(by))
	names := make([]string, 0, len(by))
	for _, b := range by {
		related = append(related, b.Source.ID.Pos)
		where := b.Source.ID.Pos.String()
		if cross {
			where = fmt.Sprintf("%s layer, %s", b.Policy.Layer, where)
		}
		names = append(names, fmt.Sprintf("%q (%s, verdict %s)", b.ID, where, b.Verdict))
	}
	subject := "rule " + names[0] + " comes"
	if len(names) > 1 {
		subject = "rules " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " come"
	}
	if cross {
		l.warn(policy.CodeCrossLayerShadowed, r.Source.ID.Pos, related,
			"rule %q (%s layer) can never decide: %s first in the order the layers are tried in, with no condition and a matcher that covers every tool this rule matches",
			r.ID, r.Policy.Layer, subject)
		return
	}
	l.warn(policy.CodeShadowedRule, r.Source.ID.Pos, related,
		"rule %q can never fire: %s first in evaluation order, with no condition and a matcher that covers every tool this rule matches",
		r.ID, subject)
}

// references reports the variables and counters of a policy that nothing
// reads, and the counters read but never incremented. A variable is used
// when a rule or counter expression reads it, or a used variable does.
func (l *linter) references(p *Policy) {
	src := p.Source
	defOf := map[policy.Pos]string{} // a variable's expression → its name
	for _, v := range src.Variables {
		defOf[v.Expr.Pos] = v.Name.Value
	}
	varRefs := map[string]refs{}
	var roots []refs
	for _, ce := range l.c.checked {
		if ce.sc.pol != p {
			continue
		}
		rs := ce.reads
		if name, isDef := defOf[ce.expr.Pos]; isDef {
			varRefs[name] = rs
		} else {
			roots = append(roots, rs)
		}
	}
	// Liveness: from the rules and counters through the variables they read.
	used := map[string]bool{}
	readBy := map[string][]string{} // variable → the variables reading it
	var queue []string
	mark := func(rs refs) {
		for _, v := range rs.vars {
			if !used[v] {
				used[v] = true
				queue = append(queue, v)
			}
		}
	}
	for _, rs := range roots {
		mark(rs)
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		mark(varRefs[v])
	}
	for name, rs := range varRefs {
		for _, v := range rs.vars {
			readBy[v] = append(readBy[v], name)
		}
	}
	for _, v := range src.Variables {
		if used[v.Name.Value] {
			continue
		}
		if rb := readBy[v.Name.Value]; len(rb) > 0 {
			slices.Sort(rb)
			l.warn(policy.CodeUnusedVariable, v.Name.Pos, nil,
				"variable %q is only read by variables nothing uses (%s)", v.Name.Value, strings.Join(rb, ", "))
			continue
		}
		l.warn(policy.CodeUnusedVariable, v.Name.Pos, nil,
			"variable %q is never read: no rule, counter or other variable of policy %q refers to it", v.Name.Value, p.Name)
	}

	// Counters read by the rules, the counters' own expressions (which may
	// not read counters) and the used variables.
	readCounters := map[string]bool{}
	all := false
	note := func(rs refs) {
		all = all || rs.allCounters
		for _, c := range rs.counters {
			readCounters[c] = true
		}
	}
	for _, rs := range roots {
		note(rs)
	}
	for v := range used {
		note(varRefs[v])
	}
	for _, ct := range src.Counters {
		if !all && !readCounters[ct.Name.Value] {
			l.warn(policy.CodeUnusedCounter, ct.Name.Pos, nil,
				"counter %q is never read: no rule or used variable reads counters.%s, so counting has no effect", ct.Name.Value, ct.Name.Value)
			continue
		}
		if v, ok := l.literalBool(&ct.IncrementWhen); ok && !v {
			l.warn(policy.CodeCounterNeverIncremented, ct.IncrementWhen.Pos, nil,
				"counter %q is read but never incremented: its increment_when is the literal false, so it is always 0", ct.Name.Value)
		}
	}
}

// costs reports the expressions whose worst-case cost, as the static cost
// analysis (cost.go) estimates it under CostAssumedSize, exceeds the runtime cost budget.
//
// The policy's variables are sized as they are declared, so an expression
// reading one gets a precise size for it: the exact size of a constant
// variable's value (see costSizes), and for the others the size cel-go
// estimates for their expression's result.
func (l *linter) costs() {
	limit := l.c.cfg.env.CostLimit()
	l.c.costPass(CostAssumedSize, false, nil, func(checkedExpr) bool { return true }, func(ce checkedExpr, e cost.Estimate, err error) {
		if err == nil && e.Max > limit {
			l.warn(policy.CodeCostOverBudget, ce.expr.Pos, nil, "%s: %s", ce.sc.what, overBudget(e.Max, limit))
		}
	})
}

// overBudget says by how much an estimate exceeds the budget, and what to do.
func overBudget(est, limit uint64) string {
	factor := "more than 100x"
	if r := float64(est) / float64(limit); r < 100 {
		factor = fmt.Sprintf("%.1fx", r)
	}
	size := "unknown"
	if est < 1<<62 {
		size = groupDigits(est)
	}
	return fmt.Sprintf("estimated worst-case cost %s exceeds the runtime budget of %s by %s "+
		"(assuming strings of up to %s characters and lists or maps of up to %s entries); "+
		"at run time an over-budget evaluation is an error that the failure policy decides. "+
		"Avoid nesting comprehensions (use `in`, sets.intersects or a map lookup instead of exists inside exists), "+
		"scan a string once with a stdlib function (shell.*, glob.match, path.*) rather than in a loop, "+
		"and test size() before iterating so the runtime cost stays bounded",
		size, groupDigits(limit), factor, groupDigits(CostAssumedSize), groupDigits(CostAssumedEntries))
}

// groupDigits writes n with thousands separators: 1,000,000.
func groupDigits(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
