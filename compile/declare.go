package compile

import (
	"fmt"
	"maps"
	"slices"

	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/policy"
)

func (c *compiler) policy(lp layered) {
	p := lp.p
	c.unique(c.policyNames, p.Name, policy.CodeDuplicatePolicy, "policy name %q is already used at %s")
	if p.Defaults.Verdict != policy.VerdictUnspecified {
		c.defaultVerdict(p.Defaults.Verdict, p.Defaults.VerdictPos, lp.untrusted)
	}
	c.logMasks(p, lp.untrusted)
	cp := &Policy{Name: p.Name.Value, File: p.File, Layer: lp.layer, Untrusted: lp.untrusted, Monitored: p.Mode == policy.ModeMonitor, Description: p.Description,
		FailurePolicy: p.Defaults.FailurePolicy, Source: p, varByName: map[string]*Variable{}}
	c.set.policies = append(c.set.policies, cp)
	c.checkMonitored(cp)

	env := &lazyEnv{c: c, cur: c.cfg.env.CEL()}
	c.declKey = ""
	info := map[string]exprInfo{}
	for i := range p.Variables {
		v := &p.Variables[i]
		if v.Name.Value == "" {
			continue
		}
		var (
			ast *cel.Ast
			ei  exprInfo
			ok  bool
			// replayed is the variable's recorded program, type and
			// cwd-only flag in a compile from the set cache.
			replayed *Program
			rtyp     *cel.Type
			rcwd     bool
		)
		if c.replay != nil {
			// From the set cache (setcache.go): nothing is checked.
			if replayed, rtyp, rcwd, ok = c.replayVariable(v.Expr); !ok {
				return // the replay failed: the caller compiles in full
			}
		} else if v.Expr.Text != "" {
			ast, ei, ok = c.typeCheck(scope{env: env, pol: cp, what: "variable " + v.Name.Value}, v.Expr, info)
		} else if !c.parseDS.HasErrors() {
			// The parser reports a missing or empty expression; declare
			// only a failure certainly reported, so the set fails closed.
			continue
		}
		if c.flagged(v.Name.Pos) {
			// A reserved, malformed or duplicate name (already reported):
			// declaring it would break every later expression.
			continue
		}
		var prg *Program
		switch {
		case replayed != nil:
			prg = replayed
		case ok:
			prg = c.program(ast, v.Expr, info)
		}
		// A variable that failed (reported) is declared all the same, as
		// dyn when it has no type, as cel-go does: the expressions reading
		// it then report their own mistakes, not each an undeclared
		// reference to it. The set has an error, so it never decides.
		typ := cel.DynType
		switch {
		case replayed != nil:
			typ = rtyp
		case ast != nil:
			typ = ast.OutputType()
		}
		env.declare(v.Name, typ)
		c.declKey += v.Name.Value + ":" + typ.String() + ";"
		info[v.Name.Value] = ei
		if prg == nil {
			continue
		}
		cv := &Variable{Name: v.Name.Value, Slot: c.set.varSlots, Type: typ, Program: prg, Expr: v.Expr}
		if (replayed != nil && rcwd) || (replayed == nil && c.cwdOnly(ei) && plainType(typ)) {
			cv.cwd = &cwdValues{}
		}
		c.madeVariable(prg, cv)
		c.set.varSlots++
		cp.Variables = append(cp.Variables, cv)
		cp.varByName[cv.Name] = cv
	}

	for i := range p.Counters {
		d := p.Counters[i]
		if d.Name.Value == "" {
			continue
		}
		ct := &Counter{ID: cp.Name + "/" + d.Name.Value, Name: d.Name.Value, Policy: cp, Decl: d}
		what := "counter " + d.Name.Value
		// A before-counter counts at the decision before the call: none of
		// its expressions has a result to read.
		before := d.Phase == policy.PhaseBefore
		if d.Key != nil {
			ct.Key = c.compileExpr(scope{env: env, pol: cp, what: what + " key", noResult: true, noCounters: true, phase: d.Phase, phased: true, want: cel.StringType}, *d.Key, info)
		}
		if d.IncrementWhen.Text != "" {
			ct.IncrementWhen = c.compileExpr(scope{env: env, pol: cp, what: what + " increment_when", noResult: before, noCounters: true, phase: d.Phase, phased: true, want: cel.BoolType}, d.IncrementWhen, info)
		}
		if d.Weight != nil {
			ct.Weight = c.compileExpr(scope{env: env, pol: cp, what: what + " weight", noResult: before, noCounters: true, phase: d.Phase, phased: true, want: cel.IntType}, *d.Weight, info)
		}
		if d.Streak != nil {
			ct.Streak = c.compileExpr(scope{env: env, pol: cp, what: what + " streak", noResult: before, noCounters: true, phase: d.Phase, phased: true}, *d.Streak, info)
		}
		if d.ResetWhen != nil {
			ct.ResetWhen = c.compileExpr(scope{env: env, pol: cp, what: what + " reset_when", noResult: before, noCounters: true, phase: d.Phase, phased: true, want: cel.BoolType}, *d.ResetWhen, info)
		}
		cp.Counters = append(cp.Counters, ct)
		c.set.counters = append(c.set.counters, ct)
		c.set.countersAt[d.Phase] = append(c.set.countersAt[d.Phase], ct)
	}

	for i := range p.Rules {
		c.rule(env, cp, &p.Rules[i], info)
	}
}

// unique records where a name that must be unique in the set (a policy
// name, a rule id) is first defined, in seen, and reports every later
// definition as code, with the message format of the name and the first
// place. An empty name is not recorded.
func (c *compiler) unique(seen map[string]policy.Pos, name policy.String, code policy.Code, format string) {
	if name.Value == "" {
		return
	}
	if first, dup := seen[name.Value]; dup {
		c.ds = append(c.ds, policy.Diagnostic{Code: code, Severity: policy.SeverityError, Pos: name.Pos,
			Related: []policy.Pos{first}, Message: fmt.Sprintf(format, name.Value, first)})
		return
	}
	seen[name.Value] = name.Pos
}

// defaultVerdict records a policy's default verdict: the set's, or the
// untrusted track's for an untrusted policy (its own, agreed among the
// untrusted policies only).
func (c *compiler) defaultVerdict(v policy.Verdict, pos policy.Pos, untrusted bool) {
	if untrusted {
		if c.untrustedDefault.v == policy.VerdictUnspecified {
			c.untrustedDefault.v, c.untrustedDefault.pos = v, pos
		} else if c.untrustedDefault.v != v {
			c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeConflictingDefault, Severity: policy.SeverityError, Pos: pos,
				Related: []policy.Pos{c.untrustedDefault.pos},
				Message: fmt.Sprintf("default verdict %s conflicts with %s set at %s; the untrusted project's policies have one default", v, c.untrustedDefault.v, c.untrustedDefault.pos)})
		}
		return
	}
	if c.cfg.defaultVerdict == policy.VerdictUnspecified {
		c.cfg.defaultVerdict = v
		c.defaultFrom = pos
		return
	}
	if c.cfg.defaultVerdict != v {
		d := policy.Diagnostic{Code: policy.CodeConflictingDefault, Severity: policy.SeverityError, Pos: pos,
			Message: fmt.Sprintf("default verdict %s conflicts with %s set elsewhere; one policy set has one default", v, c.cfg.defaultVerdict)}
		if !c.defaultFrom.IsZero() {
			d.Related = []policy.Pos{c.defaultFrom}
			d.Message = fmt.Sprintf("default verdict %s conflicts with %s set at %s; one policy set has one default", v, c.cfg.defaultVerdict, c.defaultFrom)
		}
		c.ds = append(c.ds, d)
	}
}

func (c *compiler) rule(env *lazyEnv, cp *Policy, r *policy.Rule, info map[string]exprInfo) {
	c.unique(c.ruleIDs, r.ID, policy.CodeDuplicateRuleID, "rule id %q is already defined at %s")
	fp := r.FailurePolicy
	if fp == policy.FailInherit {
		fp = cp.FailurePolicy
	}
	cr := &Rule{ID: r.ID.Value, Policy: cp, Pos: r.Pos, Description: r.Description, Priority: r.Priority, Phase: r.Phase,
		Verdict: r.Verdict, Reason: r.Reason, Code: r.Code, FailurePolicy: fp, Source: r, Judge: r.Judge,
		Mandatory: mandatoryRule(cp.Source, r, cp.Layer), Metadata: mergeMetadata(cp.Source.Metadata, r.Metadata)}
	c.checkMandatory(cp, r, cr.Mandatory)
	cr.set = c.set
	for _, t := range r.Tools {
		cr.Tools = append(cr.Tools, t.Value)
	}
	for _, l := range r.Labels {
		if !slices.Contains(cr.Labels, l.Value) {
			cr.Labels = append(cr.Labels, l.Value)
		}
	}
	for _, cl := range r.Classes {
		cr.Classes = append(cr.Classes, cl.Value)
	}
	c.checkRuleClasses(r)
	before := r.Phase != policy.PhaseAfter // a result after the call only
	what := "rule " + r.ID.Value
	at := func(what string, want *cel.Type) scope {
		return scope{env: env, pol: cp, what: what, noResult: before, phase: r.Phase, phased: true, want: want}
	}
	if r.Condition != nil {
		sc := at(what+" condition", cel.BoolType)
		if c.replay != nil {
			cr.Condition = c.replayProgram(*r.Condition)
		} else if ast, _, ok := c.typeCheck(sc, *r.Condition, info); ok {
			cr.Condition = c.program(ast, *r.Condition, info)
		}
	}
	if r.Message != nil {
		cr.Message = c.compileExpr(at(what+" message", cel.StringType), *r.Message, info)
	}
	if r.Writes != nil {
		cr.Writes = c.compileExpr(at(what+" writes", cel.ListType(cel.DynType)), *r.Writes, info)
	}
	if m := r.Modify; m != nil {
		cm := &Modify{}
		if m.Args != nil {
			cm.Args = c.compileExpr(at(what+" modify.args", cel.MapType(cel.StringType, cel.DynType)), *m.Args, info)
		}
		for _, s := range m.Set {
			prg := c.compileExpr(at(what+" modify.set."+s.Key.Value, nil), s.Expr, info)
			cm.Set = append(cm.Set, SetArg{Key: s.Key.Value, Program: prg})
		}
		for _, u := range m.Unset {
			cm.Unset = append(cm.Unset, u.Value)
		}
		if m.Content != nil {
			cm.Content = c.compileExpr(at(what+" modify.content", cel.StringType), *m.Content, info)
		}
		if m.Messages != nil {
			cm.Messages = c.compileExpr(at(what+" modify.messages", cel.ListType(cel.DynType)), *m.Messages, info)
		}
		if m.Output != nil {
			cm.Output = c.compileExpr(at(what+" modify.output", nil), *m.Output, info)
		}
		if m.Description != nil {
			cm.Description = c.compileExpr(at(what+" modify.description", cel.StringType), *m.Description, info)
		}
		cr.Modify = cm
	}
	c.parsedRules = append(c.parsedRules, cr)
}

// lazyEnv is a policy's environment: the base one extended with the policy's
// variables. Extending costs a rebuild of the environment, and is only
// needed to type-check; a compile served from the AST cache never does, so
// declarations are applied on first use.
type lazyEnv struct {
	c       *compiler
	cur     *cel.Env
	pending []pendingVar
}

type pendingVar struct {
	name policy.String
	typ  *cel.Type
}

func (l *lazyEnv) declare(name policy.String, typ *cel.Type) {
	l.pending = append(l.pending, pendingVar{name, typ})
}

// get returns the environment with every variable declared so far.
func (l *lazyEnv) get() *cel.Env {
	if len(l.pending) == 0 {
		return l.cur
	}
	opts := make([]cel.EnvOption, len(l.pending))
	for i, v := range l.pending {
		opts[i] = cel.Variable(v.name.Value, v.typ)
	}
	ext, err := l.cur.Extend(opts...)
	if err != nil {
		names := make([]string, len(l.pending))
		for i, v := range l.pending {
			names[i] = v.name.Value
		}
		l.c.errorf(policy.CodeCELType, l.pending[0].name.Pos, "variables %v cannot be declared: %v", names, err)
	} else {
		l.cur = ext
	}
	l.pending = nil
	return l.cur
}

// mergeMetadata is a rule's metadata over its policy's: nil when both are
// empty, so that a decision without metadata prints none.
func mergeMetadata(pol, rule map[string]string) map[string]string {
	if len(pol)+len(rule) == 0 {
		return nil
	}
	out := make(map[string]string, len(pol)+len(rule))
	maps.Copy(out, pol)
	maps.Copy(out, rule)
	return out
}
