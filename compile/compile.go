package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// DefaultMaxRules is the largest number of rules a set may hold unless
// WithMaxRules says otherwise.
const DefaultMaxRules = 100_000

// Option configures Compile. Options validate their arguments.
type Option func(*config) error

type config struct {
	cache          ASTCache
	env            *celenv.Env
	defaultVerdict policy.Verdict
	maxRules       int
}

// WithEnv compiles in the given environment instead of celenv.Default.
func WithEnv(env *celenv.Env) Option {
	return func(c *config) error {
		if env == nil {
			return fmt.Errorf("compile.WithEnv: nil environment")
		}
		c.env = env
		return nil
	}
}

// WithDefaultVerdict sets the verdict of a call no rule matches (allow unless
// set). A policy's defaults.verdict, when present, must agree.
func WithDefaultVerdict(v policy.Verdict) Option {
	return func(c *config) error {
		switch v {
		case policy.Allow, policy.Warn, policy.Block, policy.Halt:
			c.defaultVerdict = v
			return nil
		}
		return fmt.Errorf("compile.WithDefaultVerdict: %s cannot be a default verdict", v)
	}
}

// WithMaxRules caps the number of rules in a set.
func WithMaxRules(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("compile.WithMaxRules: the limit must be positive, got %d", n)
		}
		c.maxRules = n
		return nil
	}
}

// CompileFS compiles every policy file below root in fsys.
func CompileFS(fsys fs.FS, root string, opts ...Option) (*PolicySet, error) {
	srcs, err := policy.LoadFS(fsys, root, "")
	if err != nil {
		return nil, err
	}
	return Compile(srcs, opts...)
}

// CompilePaths compiles the policy files and directories at paths.
func CompilePaths(paths []string, opts ...Option) (*PolicySet, error) {
	srcs, err := policy.LoadPaths(paths...)
	if err != nil {
		return nil, err
	}
	return Compile(srcs, opts...)
}

// Compile parses and compiles policy sources into a PolicySet. Sources are
// ordered by name, so rules of equal priority keep file order with files in
// path order. On any error-severity problem it returns a nil set and an error
// that is a policy.Diagnostics listing every problem found (use errors.As);
// the other errors are option errors. Compile does not run the lint
// analyses (shadowed rules, unused declarations, cost estimates): Check does.
// Warnings of a successful compile are in PolicySet.Warnings.
func Compile(srcs []policy.Source, opts ...Option) (*PolicySet, error) {
	set, ds, err := compileSet(srcs, false, opts)
	if err != nil {
		return nil, err
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return set, nil
}

// Check is Compile for linters: it returns every diagnostic of every
// severity, and the set when there is no error among them. A warning that a
// `# celguard:ignore CODE -- reason` comment on its rule, variable or
// counter suppresses is returned marked (Diagnostic.Suppressed); use
// Diagnostics.Unsuppressed for the rest.
func Check(srcs []policy.Source, opts ...Option) (*PolicySet, policy.Diagnostics, error) {
	return compileSet(srcs, true, opts)
}

// compileSet compiles the sources into a set, with every diagnostic; with
// lint it also runs the lint analyses (lint.go), which only a linter needs:
// Compile, on every process start of a hook, skips them.
func compileSet(srcs []policy.Source, lint bool, opts []Option) (*PolicySet, policy.Diagnostics, error) {
	cfg := config{defaultVerdict: policy.VerdictUnspecified, maxRules: DefaultMaxRules}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, nil, err
		}
	}
	if cfg.env == nil {
		def, err := celenv.Default()
		if err != nil {
			return nil, nil, err
		}
		cfg.env = def
	}
	classes := newClassTable()
	c := &compiler{cfg: cfg, classes: classes, set: &PolicySet{env: cfg.env, byID: map[string]*Rule{}, classes: classes},
		policyNames: map[string]policy.Pos{}, ruleIDs: map[string]policy.Pos{}}
	srcs = slices.Clone(srcs)
	slices.SortStableFunc(srcs, func(a, b policy.Source) int { return strings.Compare(a.Name, b.Name) })
	c.set.digest = Digest(srcs)
	if len(srcs) == 0 {
		c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeNoPolicies, Severity: policy.SeverityError,
			Message: "no policy files were given"})
	}
	// Tool classes first: a policy may sort before the file declaring the
	// classes it matches on.
	var pols []layered
	var ovs []layeredOverrides
	var untrustedClasses []*policy.ToolClasses
	for _, src := range srcs {
		doc, ds := policy.ParseDocument(src.Name, src.Data)
		ds = append(ds, reservedNames(doc.Policy)...)
		c.ds = append(c.ds, ds...)
		switch {
		case doc.Classes != nil && src.Untrusted:
			untrustedClasses = append(untrustedClasses, doc.Classes)
		case doc.Classes != nil:
			c.classes.add(doc.Classes)
		case doc.Overrides != nil:
			ovs = append(ovs, layeredOverrides{doc.Overrides, src.Layer, src.Untrusted})
		case doc.Policy != nil:
			pols = append(pols, layered{doc.Policy, ds, src.Layer, src.Untrusted})
		}
	}
	for _, tc := range untrustedClasses {
		c.untrustedClasses(tc)
	}
	for _, p := range c.resolveLayers(pols, ovs) {
		c.parseDS = p.ds
		c.policy(p)
	}
	c.checkClassReads()
	c.finish()
	if !c.ds.HasErrors() {
		c.proveBounds() // cost_proof.go: programs without cost accounting for small inputs
		if lint {
			c.lint() // lint.go: the analyses of a set that compiles
		}
	}
	for _, p := range c.set.policies {
		c.ds.Suppress(p.Source.Suppressions) // # celguard:ignore comments
	}
	c.ds.Sort()
	if c.ds.HasErrors() {
		return nil, c.ds, nil
	}
	c.set.warnings = append(c.set.warnings, c.ds...)
	return c.set, c.ds, nil
}

// checkedExpr is an expression that type-checked, with the scope it was
// checked in and what it reads.
type checkedExpr struct {
	sc    scope
	expr  policy.Expr
	ast   *cel.Ast
	reads refs
}

type compiler struct {
	// declKey lists the policy variables declared so far (name:type), for
	// AST cache keys.
	declKey     string
	classes     *classTable
	cfg         config
	set         *PolicySet
	ds          policy.Diagnostics
	policyNames map[string]policy.Pos // where each is first defined
	ruleIDs     map[string]policy.Pos // where each is first defined
	defaultFrom policy.Pos
	// untrustedClassNames are the tool classes an untrusted project declared.
	untrustedClassNames []string
	// untrustedDefault is the default verdict of the untrusted track and
	// where it is set.
	untrustedDefault struct {
		v   policy.Verdict
		pos policy.Pos
	}
	parsedRules []*Rule
	// parseDS holds the parser's diagnostics of the policy being compiled.
	parseDS policy.Diagnostics
	// checked holds every expression that type-checked, for the lint
	// analyses and the cost analysis.
	checked []checkedExpr
	// programs are the programs built, by checked expression.
	programs map[*cel.Ast]*Program
	// classReads are the reads of command, paths and classes, which only
	// a tool-class table gives a value (checkClassReads).
	classReads []classRead
	// patterns are the checks of the patterns kept in constants
	// (patterns.go).
	patterns patternChecks
}

// noResultWhen says when the expression of sc runs without a result.
func (sc scope) noResultWhen() string {
	if !sc.phased {
		return "before the call"
	}
	switch sc.phase {
	case policy.PhaseTurnEnd:
		return "at turn end"
	case policy.PhaseInput, policy.PhaseOutput:
		return "in the " + sc.phase.String() + " phase"
	}
	return "before the call"
}

// flagged reports whether the parser found an error at pos.
func (c *compiler) flagged(pos policy.Pos) bool {
	return slices.ContainsFunc(c.parseDS, func(d policy.Diagnostic) bool {
		return d.Pos == pos && d.Severity == policy.SeverityError
	})
}

func (c *compiler) errorf(code policy.Code, pos policy.Pos, format string, args ...any) {
	c.ds = append(c.ds, policy.Diagnostic{Code: code, Severity: policy.SeverityError, Pos: pos, Message: fmt.Sprintf(format, args...)})
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

// refs is what one expression reads itself.
type refs struct {
	vars     []string // policy variables, by name
	counters []string // counters read as counters.x or counters["x"]
	// allCounters is set when the expression uses the counters map other
	// than through a constant key, so any counter may be read.
	allCounters bool
}

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
		)
		if v.Expr.Text != "" {
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
		if ok {
			prg = c.program(ast, v.Expr, info)
		}
		// A variable that failed (reported) is declared all the same, as
		// dyn when it has no type, as cel-go does: the expressions reading
		// it then report their own mistakes, not each an undeclared
		// reference to it. The set has an error, so it never decides.
		typ := cel.DynType
		if ast != nil {
			typ = ast.OutputType()
		}
		env.declare(v.Name, typ)
		c.declKey += v.Name.Value + ":" + typ.String() + ";"
		info[v.Name.Value] = ei
		if prg == nil {
			continue
		}
		cv := &Variable{Name: v.Name.Value, Slot: c.set.varSlots, Type: typ, Program: prg, Expr: v.Expr}
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
		if ast, _, ok := c.typeCheck(sc, *r.Condition, info); ok {
			if cr.Condition = c.program(ast, *r.Condition, info); cr.Condition != nil {
				cr.ConditionAST = ast
			}
		}
	}
	if r.Message != nil {
		cr.Message = c.compileExpr(at(what+" message", cel.StringType), *r.Message, info)
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
		cr.Modify = cm
	}
	c.parsedRules = append(c.parsedRules, cr)
}

// compileExpr type-checks an expression and builds its program; nil on
// error (already reported).
func (c *compiler) compileExpr(sc scope, e policy.Expr, info map[string]exprInfo) *Program {
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

// references walks the checked expression for what it reads: result and
// counters, directly or through variables (exprInfo), checking that the
// place allows them and that every counter read is declared in the policy;
// and the policy variables and counters it names, for the lint (refs).
func (c *compiler) references(sc scope, e policy.Expr, ast *cel.Ast, info map[string]exprInfo) (exprInfo, refs, bool) {
	native := ast.NativeRep()
	src := native.SourceInfo()
	var (
		ei exprInfo
		rs refs
		// named are the counters identifiers read as counters.x or
		// counters["x"], which name the counter they read.
		named = map[int64]bool{}
	)
	ok := true
	posOf := func(id int64) policy.Pos {
		loc := src.GetStartLocation(id)
		if loc.Line() <= 0 {
			return e.Pos
		}
		return e.PosAt(loc.Line(), loc.Column())
	}
	declared := func(name string) bool {
		return slices.ContainsFunc(sc.pol.Source.Counters, func(ct policy.Counter) bool { return ct.Name.Value == name })
	}
	checkCounter := func(pos policy.Pos, name string) {
		if !declared(name) {
			c.errorf(policy.CodeUndeclaredCounter, pos, "%s reads counters.%s, but policy %q declares no counter %q", sc.what, name, sc.pol.Name, name)
			ok = false
		}
	}
	consts := constEval{vars: info, posOf: posOf, what: sc.what}
	// Names a comprehension (or cel.bind) binds are its own, not the
	// built-in variables or the policy's: [..].exists(result, ...) reads no
	// result.
	walkScoped(native.Expr(), func(x celast.Expr, names boundNames) bool {
		switch x.Kind() {
		case celast.IdentKind:
			name := x.AsIdent()
			if names.bound(name) {
				return false
			}
			if i, builtin := builtinIndex[name]; builtin {
				ei.builtins |= 1 << i
				if !c.phaseHas(sc, name, posOf(x.ID()), "") {
					ok = false
				}
			}
			switch name {
			case celenv.VarResult:
				ei.result = true
				if sc.noResult {
					c.errorf(policy.CodeResultInBefore, posOf(x.ID()), "%s reads result, but there is no result %s; use phase: after", sc.what, sc.noResultWhen())
					ok = false
				}
			case celenv.VarCounters:
				ei.counters = true
				rs.allCounters = rs.allCounters || !named[x.ID()]
				if sc.noCounters {
					c.errorf(policy.CodeCounterInCounter, posOf(x.ID()), "%s reads counters; counter expressions cannot depend on counters", sc.what)
					ok = false
				}
			case celenv.VarCommand, celenv.VarPaths, celenv.VarClasses:
				c.classReads = append(c.classReads, classRead{pos: posOf(x.ID()), what: sc.what, name: name})
			default:
				if vi, isVar := info[name]; isVar {
					if !slices.Contains(rs.vars, name) {
						rs.vars = append(rs.vars, name)
					}
					if vi.result && sc.noResult {
						c.errorf(policy.CodeResultInBefore, posOf(x.ID()), "%s uses variable %s, which reads result; there is no result %s", sc.what, name, sc.noResultWhen())
						ok = false
					}
					if vi.counters && sc.noCounters {
						c.errorf(policy.CodeCounterInCounter, posOf(x.ID()), "%s uses variable %s, which reads counters; counter expressions cannot depend on counters", sc.what, name)
						ok = false
					}
					for i, v := range celenv.Variables() {
						if vi.builtins&(1<<i) != 0 && !c.phaseHas(sc, v.Name, posOf(x.ID()), name) {
							ok = false
							break // one error per use of the variable
						}
					}
					ei.result = ei.result || vi.result
					ei.counters = ei.counters || vi.counters
					ei.builtins |= vi.builtins
				}
			}
		case celast.SelectKind:
			sel := x.AsSelect()
			if op := sel.Operand(); op.Kind() == celast.IdentKind && op.AsIdent() == celenv.VarCounters && !names.bound(celenv.VarCounters) {
				rs.counters = append(rs.counters, sel.FieldName())
				named[op.ID()] = true
				if !sel.IsTestOnly() {
					pos := e.Pos
					if loc := src.GetStartLocation(x.ID()); loc.Line() > 0 {
						pos = fieldPos(e, loc.Line(), loc.Column())
					}
					checkCounter(pos, sel.FieldName())
				}
			}
		case celast.CallKind:
			call := x.AsCall()
			if call.FunctionName() == operators.Index && len(call.Args()) == 2 {
				m, k := call.Args()[0], call.Args()[1]
				if m.Kind() == celast.IdentKind && m.AsIdent() == celenv.VarCounters && !names.bound(celenv.VarCounters) && k.Kind() == celast.LiteralKind {
					if s, isStr := k.AsLiteral().(types.String); isStr {
						rs.counters = append(rs.counters, string(s))
						named[m.ID()] = true
						checkCounter(posOf(k.ID()), string(s))
					}
				}
			}
			// cel-go validates the regex literal of s.matches(re) but not of
			// matches(s, re).
			if call.FunctionName() == overloads.Matches && !call.IsMemberFunction() && len(call.Args()) == 2 {
				if lit := call.Args()[1]; lit.Kind() == celast.LiteralKind {
					if re, isStr := lit.AsLiteral().(types.String); isStr {
						if err := validRegex(string(re)); err != nil {
							c.errorf(policy.CodeInvalidLiteral, posOf(lit.ID()), "%s: invalid matches argument: %v", sc.what, err)
							ok = false
						}
					}
				}
			}
			if !c.patternConstants(sc, call, names, consts) {
				ok = false
			}
		}
		return true
	})
	if v, isConst := consts.value(native.Expr(), nil); isConst {
		ei.value = &v
	}
	return ei, rs, ok
}

// validRegex is the check of the pattern of matches.
var validRegex, _ = stdlib.LiteralCheck(overloads.Matches, 1)

// walkScoped visits every node of a checked expression, telling visit which
// names the enclosing comprehensions (and cel.bind) bind there. visit
// returns false to skip the node's children.
func walkScoped(x celast.Expr, visit func(x celast.Expr, names boundNames) bool) {
	var walk func(x celast.Expr, names boundNames)
	walk = func(x celast.Expr, names boundNames) {
		if !visit(x, names) {
			return
		}
		switch x.Kind() {
		case celast.SelectKind:
			walk(x.AsSelect().Operand(), names)
		case celast.CallKind:
			call := x.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target(), names)
			}
			for _, a := range call.Args() {
				walk(a, names)
			}
		case celast.ListKind:
			for _, e := range x.AsList().Elements() {
				walk(e, names)
			}
		case celast.MapKind:
			for _, e := range x.AsMap().Entries() {
				me := e.AsMapEntry()
				walk(me.Key(), names)
				walk(me.Value(), names)
			}
		case celast.StructKind:
			for _, f := range x.AsStruct().Fields() {
				walk(f.AsStructField().Value(), names)
			}
		case celast.ComprehensionKind:
			comp := x.AsComprehension()
			walk(comp.IterRange(), names)
			walk(comp.AccuInit(), names)
			inner := slices.Clone(names)
			if celIsBind(comp) {
				inner = append(inner, boundName{name: comp.AccuVar(), value: comp.AccuInit()})
			} else {
				inner = append(inner, boundName{name: comp.IterVar()}, boundName{name: comp.AccuVar()})
				if comp.HasIterVar2() {
					inner = append(inner, boundName{name: comp.IterVar2()})
				}
			}
			walk(comp.LoopCondition(), inner)
			walk(comp.LoopStep(), inner)
			walk(comp.Result(), inner)
		}
	}
	walk(x, nil)
}

// boundNames are the names bound where a node of an expression sits, the
// innermost last: a comprehension's variables, and the name of a cel.bind
// with the expression it is bound to.
type boundNames []boundName

type boundName struct {
	name string
	// value is the expression cel.bind binds the name to; nil for a
	// comprehension's variables.
	value celast.Expr
}

// bound reports whether name is bound here: it is not a built-in or policy
// variable.
func (b boundNames) bound(name string) bool {
	return slices.ContainsFunc(b, func(n boundName) bool { return n.name == name })
}

// binding returns the expression a cel.bind binds name to here, with the
// names bound where that expression sits; false when name is not bound by
// cel.bind here.
func (b boundNames) binding(name string) (celast.Expr, boundNames, bool) {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i].name == name {
			return b[i].value, b[:i], b[i].value != nil
		}
	}
	return nil, nil, false
}

// finish orders the rules, checks the set-wide limits and builds the index.
func (c *compiler) finish() {
	rules := c.parsedRules
	if len(rules) > c.cfg.maxRules {
		c.errorf(policy.CodeTooManyRules, rules[c.cfg.maxRules].Pos, "the set has %d rules; the limit is %d", len(rules), c.cfg.maxRules)
	}
	slices.SortStableFunc(rules, evaluationOrder)
	var byPhase [2][policy.NumPhases][]*Rule // by track (trusted, untrusted), then phase
	for i, r := range rules {
		r.Order = i
		if r.ID != "" {
			if _, seen := c.set.byID[r.ID]; !seen {
				c.set.byID[r.ID] = r
			}
		}
		track := 0
		if r.Policy.Untrusted {
			track = 1
			c.set.hasUntrusted = true
		}
		byPhase[track][r.Phase] = append(byPhase[track][r.Phase], r)
	}
	c.set.rules = rules
	for ph := range byPhase[0] {
		c.set.phases[ph] = newPhaseIndex(byPhase[0][ph], c.classes)
		c.set.untrusted[ph] = newPhaseIndex(byPhase[1][ph], c.classes)
	}
	c.set.untrustedDefault = c.untrustedDefault.v
	if c.set.untrustedDefault == policy.VerdictUnspecified {
		c.set.untrustedDefault = policy.Allow
	}
	for _, p := range c.set.policies {
		c.set.countersSize = max(c.set.countersSize, uint64(len(p.Counters)))
		for _, ct := range p.Counters {
			c.set.countersSize = max(c.set.countersSize, uint64(len(ct.Name)))
		}
	}
	c.set.defaultVerdict = c.cfg.defaultVerdict
	if c.set.defaultVerdict == policy.VerdictUnspecified {
		c.set.defaultVerdict = policy.Allow
	}
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

// Digest is a SHA-256 over the sources sorted by name (stably, as Compile
// reads them): each one's name, layer, trust and content, so the same files
// give the same digest and a changed byte another. Compile computes it once
// (PolicySet.Digest).
func Digest(srcs []policy.Source) string {
	srcs = slices.Clone(srcs)
	slices.SortStableFunc(srcs, func(a, b policy.Source) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, s := range srcs {
		fmt.Fprintf(h, "%s\x00%s\x00%t\x00%d\x00", s.Name, s.Layer, s.Untrusted, len(s.Data))
		h.Write(s.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
