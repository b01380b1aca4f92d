package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// DefaultMaxRules is the largest number of rules a set may hold unless
// WithMaxRules says otherwise.
const DefaultMaxRules = 100_000

// Option configures Compile. Options validate their arguments.
type Option func(*config) error

type config struct {
	cache          ASTCache
	sets           SetCache
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
	srcs = slices.Clone(srcs)
	slices.SortStableFunc(srcs, func(a, b policy.Source) int { return strings.Compare(a.Name, b.Name) })
	digest := Digest(srcs)
	var key string
	if !lint {
		// The linter runs every analysis; a compile replays the set's
		// record when there is one (setcache.go).
		key = setKey(cfg, digest)
	}
	if key != "" {
		if set := replaySet(srcs, digest, cfg, key); set != nil {
			return set, slices.Clone(set.warnings), nil
		}
	}
	c := newCompiler(cfg)
	c.compile(srcs, digest, lint)
	if c.ds.HasErrors() {
		return nil, c.ds, nil
	}
	if key != "" {
		c.record(key)
	}
	return c.set, c.ds, nil
}

// newCompiler is a compiler of one set with cfg.
func newCompiler(cfg config) *compiler {
	classes := newClassTable()
	return &compiler{cfg: cfg, classes: classes, set: &PolicySet{env: cfg.env, byID: map[string]*Rule{}, classes: classes},
		policyNames: map[string]policy.Pos{}, ruleIDs: map[string]policy.Pos{}}
}

// compile compiles the sources, sorted by name, whose Digest is digest,
// into c.set, every
// diagnostic in c.ds; with lint it also runs the lint analyses (lint.go),
// which only a linter needs: Compile, on every process start of a hook,
// skips them. A replayed compile (c.replay) checks nothing: its
// expressions' programs come from the record.
func (c *compiler) compile(srcs []policy.Source, digest string, lint bool) {
	c.set.digest = digest
	for _, src := range srcs {
		if src.Bundle != "" && !slices.Contains(c.set.bundles, src.Bundle) {
			c.set.bundles = append(c.set.bundles, src.Bundle)
		}
	}
	slices.Sort(c.set.bundles)
	if len(srcs) == 0 {
		c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeNoPolicies, Severity: policy.SeverityError,
			Message: "no policy files were given"})
	}
	// Tool classes first: a policy may sort before the file declaring the
	// classes it matches on.
	var pols []layered
	var ovs []layeredOverrides
	var untrustedClasses []*policy.ToolClasses
	for i, src := range srcs {
		var (
			doc policy.Document
			ds  policy.Diagnostics
		)
		switch {
		case c.replay != nil && c.replay.docs != nil:
			// The record keeps the sources' parsed documents (setcache.go):
			// no YAML is read; the parser found no error in them.
			doc = c.replay.docs[i]
		case c.replay != nil:
			// The record is of these sources, which passed the schema.
			doc, ds = policy.ParseDocumentValidated(src.Name, src.Data)
		default:
			doc, ds = policy.ParseDocument(src.Name, src.Data)
			c.docs = append(c.docs, doc)
		}
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
		if c.replay != nil && c.replay.failed {
			return
		}
	}
	if c.replay == nil {
		c.checkClassReads()
	}
	c.finish()
	if !c.ds.HasErrors() && c.replay == nil {
		c.proveBounds() // cost_proof.go: programs without cost accounting for small inputs
		if lint {
			c.lint() // lint.go: the analyses of a set that compiles
		}
	}
	for _, p := range c.set.policies {
		c.ds.Suppress(p.Source.Suppressions) // # celguard:ignore comments
	}
	c.ds.Sort()
	if !c.ds.HasErrors() {
		c.set.warnings = append(c.set.warnings, c.ds...)
	}
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
	// docs are the sources' parsed documents, in order, for the set
	// cache's record (a compile that is not replayed).
	docs []policy.Document
	// made are the programs built, in order, for the set cache's record
	// (setcache.go); replay, when set, is the record this compile replays.
	made   []madeProgram
	replay *replayState
	// classReads are the reads of command, paths and classes, which only
	// a tool-class table gives a value (checkClassReads).
	classReads []classRead
	// patterns are the checks of the patterns kept in constants
	// (patterns.go).
	patterns patternChecks
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
		if track == 0 && r.Writes != nil && r.Phase == policy.PhaseBefore {
			c.set.writers = append(c.set.writers, r)
		}
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
