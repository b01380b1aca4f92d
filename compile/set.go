// Package compile turns policy files into an immutable, indexed PolicySet:
// every expression parsed and type-checked once into a CEL program, rules in
// evaluation order, an index from tool name to the rules that can match it,
// and every problem reported in one pass with its file:line:col.
//
// A PolicySet and everything reachable from it is read-only after Compile and
// safe for concurrent use; the eval package runs it.
//
// The compiler's files follow its steps: compile.go drives a compile
// (options, parsing, finish), layers.go resolves the layers, declare.go
// compiles each policy's variables, counters and rules, check.go
// type-checks one expression in its scope, errpos.go places CEL's errors
// in the YAML file, references.go walks what an expression reads; then
// program.go builds programs, cost*.go proves their costs and lint.go
// (with its analyses) lints the set.
package compile

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/policy"
)

// PolicySet is the compiled form of a set of policy files.
type PolicySet struct {
	env      *celenv.Env
	policies []*Policy
	rules    []*Rule
	counters []*Counter
	// countersAt are the counters that count in each phase (before or
	// after; none counts at turn end).
	countersAt [policy.NumPhases][]*Counter
	byID       map[string]*Rule
	phases     [policy.NumPhases]phaseIndex
	// untrusted indexes the rules of untrusted policies: a track of its
	// own (docs/layers.md, rule 3).
	untrusted        [policy.NumPhases]phaseIndex
	hasUntrusted     bool
	untrustedDefault policy.Verdict
	defaultVerdict   policy.Verdict
	varSlots         int
	warnings         policy.Diagnostics
	classes          *classTable
	exclusions       []Exclusion
	countersSize     uint64
	digest           string
	// bundles are the distinct Bundle of the sources, sorted.
	bundles []string
	// masks are the decision log's masks, of the trusted policies.
	masks []LogMask
	// writers are the trusted rules with a writes expression, in
	// evaluation order.
	writers []*Rule
	// fromCache says the set was replayed from a SetCache record.
	fromCache bool
}

// Writers returns the trusted rules of phase before with a writes
// expression (policy.Rule.Writes), in evaluation order; eval evaluates
// those that apply to a call (AppliesTo) before it runs. The slice must
// not be modified.
func (s *PolicySet) Writers() []*Rule { return s.writers }

// FromCache reports whether the set was replayed from the record of a
// SetCache (WithSetCache): its programs are made from their recorded
// checked expressions at their first use.
func (s *PolicySet) FromCache() bool { return s.fromCache }

// LogMask is one decision_log.mask entry of a trusted policy: the argument
// paths the decision log never writes, for the tools named (every tool when
// Tools is empty).
type LogMask struct {
	// Tools are tool names or globs.
	Tools []string
	// Paths are argument paths, each its keys ("*" for any).
	Paths [][]string
	// Policy is the policy that declares it.
	Policy string
}

// LogMasks returns the decision log's masks: those the trusted policies
// declare (an untrusted project's are ignored: a repository must not hide
// what its agent did from the log). The slice must not be modified.
func (s *PolicySet) LogMasks() []LogMask { return s.masks }

// Digest identifies the set's sources: Digest of them, sorted by name as
// the set was compiled from them ("sha256:" and 64 hex digits).
func (s *PolicySet) Digest() string { return s.digest }

// Bundles lists the signed policy bundles the set's sources came from
// (policy.Source.Bundle: NAME@VERSION/serial-N), sorted; nil when none.
// The slice must not be modified.
func (s *PolicySet) Bundles() []string { return s.bundles }

// ClassesOf returns the tool classes a tool belongs to, in declaration
// order (exact names before globs). The slice must not be modified.
func (s *PolicySet) ClassesOf(tool string) []string { return s.classes.classesOf(tool) }

// ClassesFor returns the tool classes of a call: ClassesOf the tool and,
// when none of those reads arguments, the classes its arguments fit by
// shape (a tool no class names with a command argument is a shell tool).
// shaped reports whether any class came from the shape; then
// CandidatesFor, not Candidates, gives the rules that can match. The slice
// must not be modified.
func (s *PolicySet) ClassesFor(tool string, args map[string]any) (classes []string, shaped bool) {
	return s.classes.classesFor(tool, args)
}

// CandidatesFor is Candidates for a call whose classes are given
// (ClassesFor): every rule of the phase whose matcher admits the tool or
// one of the classes, in evaluation order. untrusted selects the rules of
// the untrusted project.
func (s *PolicySet) CandidatesFor(phase policy.Phase, tool string, classes []string, untrusted bool) []*Rule {
	ix := &s.phases[phase]
	if untrusted {
		ix = &s.untrusted[phase]
	}
	out := make([]*Rule, 0, len(ix.all))
	for _, r := range ix.all {
		if r.matches(tool, classes) {
			out = append(out, r)
		}
	}
	return out
}

// Class returns a tool class by name.
func (s *PolicySet) Class(name string) (*Class, bool) {
	c, ok := s.classes.byName[name]
	return c, ok
}

// Classes returns every tool class, in declaration order. The slice must
// not be modified.
func (s *PolicySet) Classes() []*Class { return s.classes.order }

// Env returns the CEL environment the set was compiled in.
func (s *PolicySet) Env() *celenv.Env { return s.env }

// Policies returns the policies in file order. The slice must not be modified.
func (s *PolicySet) Policies() []*Policy { return s.policies }

// Rules returns every rule in evaluation order (both phases). The slice must
// not be modified.
func (s *PolicySet) Rules() []*Rule { return s.rules }

// Rule returns the rule with the given id.
func (s *PolicySet) Rule(id string) (*Rule, bool) {
	r, ok := s.byID[id]
	return r, ok
}

// Counters returns every declared counter. The slice must not be modified.
func (s *PolicySet) Counters() []*Counter { return s.counters }

// CountersAt returns the counters that count in phase (Counter.Decl.Phase),
// in declaration order. The slice must not be modified.
func (s *PolicySet) CountersAt(phase policy.Phase) []*Counter { return s.countersAt[phase] }

// DefaultVerdict is the verdict of a call no rule matches.
func (s *PolicySet) DefaultVerdict() policy.Verdict { return s.defaultVerdict }

// CountersSize is the size of the largest counters map an expression can
// read (the number of a policy's counters, or the longest counter name): an
// input of every evaluation, for Program.For.
func (s *PolicySet) CountersSize() uint64 { return s.countersSize }

// VariableSlots is the number of named variables across all policies; each
// has a Slot in [0, VariableSlots).
func (s *PolicySet) VariableSlots() int { return s.varSlots }

// Warnings returns the diagnostics below error severity found while compiling.
func (s *PolicySet) Warnings() policy.Diagnostics { return s.warnings }

// Candidates returns, in evaluation order, the rules of the trusted layers
// of a phase whose tool matcher admits tool. Rules whose matcher excludes
// the tool are never in the list, so they are never evaluated. The slice
// must not be modified.
//
// Evaluation order is layer-major (docs/layers.md): mandatory rules first,
// by priority; then the other rules by layer, highest first, and within a
// layer by priority; ties keep file order, files in path order.
func (s *PolicySet) Candidates(phase policy.Phase, tool string) []*Rule {
	return s.phases[phase].candidates(tool)
}

// UntrustedCandidates is Candidates for the rules of the untrusted
// project, which decide on their own (docs/layers.md, rule 3).
func (s *PolicySet) UntrustedCandidates(phase policy.Phase, tool string) []*Rule {
	return s.untrusted[phase].candidates(tool)
}

// HasUntrusted reports whether the set holds rules of an untrusted project.
func (s *PolicySet) HasUntrusted() bool { return s.hasUntrusted }

// UntrustedDefaultVerdict is the verdict of the untrusted track when none
// of its rules matches before a call: allow (no objection) unless its
// policies set a default.
func (s *PolicySet) UntrustedDefaultVerdict() policy.Verdict { return s.untrustedDefault }

// evaluationOrder compares two rules for the order Rules and Candidates
// list them in: the trusted track before the untrusted one; in each,
// mandatory rules first by priority, then the others by layer (highest
// first) and priority. A stable sort keeps file order on ties.
func evaluationOrder(a, b *Rule) int {
	if a.Policy.Untrusted != b.Policy.Untrusted {
		return boolFirst(b.Policy.Untrusted)
	}
	if a.Mandatory != b.Mandatory {
		return boolFirst(a.Mandatory)
	}
	if !a.Mandatory && a.Policy.Layer != b.Policy.Layer {
		return cmp.Compare(b.Policy.Layer, a.Policy.Layer)
	}
	return cmp.Compare(b.Priority, a.Priority)
}

// boolFirst is -1 when the first of two rules that differ goes first
// (first is true), 1 otherwise.
func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// Policy is one compiled policy file.
type Policy struct {
	Name string
	File string
	// Layer is where the policy's file comes from.
	Layer policy.Layer
	// Untrusted marks a policy of an untrusted project: its rules are the
	// untrusted track (UntrustedCandidates), which can only restrict.
	Untrusted bool
	// Monitored marks a policy in monitor mode (mode: monitor): its rules
	// are evaluated and reported, and decide nothing.
	Monitored     bool
	Description   string
	FailurePolicy policy.FailurePolicy
	Variables     []*Variable
	Counters      []*Counter
	// Source is the parsed file.
	Source *policy.Policy

	varByName map[string]*Variable
}

// Variable returns the policy's variable of that name.
func (p *Policy) Variable(name string) (*Variable, bool) {
	v, ok := p.varByName[name]
	return v, ok
}

// Variable is a compiled named expression.
type Variable struct {
	Name    string
	Slot    int
	Type    *cel.Type
	Program *Program
	Expr    policy.Expr

	// cwd keeps the values of a variable that is CwdOnly, nil for any
	// other.
	cwd *cwdValues
}

// Counter is a compiled counter declaration.
type Counter struct {
	// ID is "policy/name", the identity that survives a hot swap.
	ID     string
	Name   string
	Policy *Policy
	Decl   policy.Counter
	// Key computes the counter key; nil counts every call under one key (eval.AllCallsKey).
	Key           *Program
	IncrementWhen *Program
	// Weight, when set, computes the weight of an increment (an int).
	Weight    *Program
	ResetWhen *Program
	// Streak, when set, computes the value whose repetition is counted.
	Streak *Program
}

// Rule is a compiled rule.
type Rule struct {
	ID            string
	Policy        *Policy
	Pos           policy.Pos
	Description   string
	Priority      int
	Phase         policy.Phase
	Verdict       policy.Verdict
	Reason        string
	Code          string
	FailurePolicy policy.FailurePolicy
	// Mandatory rules are tried before every other rule of their track and
	// cannot be lifted by another layer (docs/layers.md, rule 1).
	Mandatory bool
	// Judge names the judge that settles the rule's asks first (eval).
	Judge string
	// Condition is nil for a rule without a condition (always true).
	Condition *Program
	// Message, when set, computes the text that overrides Reason.
	Message *Program
	Modify  *Modify
	// Tools are the names and globs of the matcher, and Classes its tool
	// classes; a tool named by either matches. Both empty match every tool.
	Tools   []string
	Classes []string
	// Metadata is the rule's metadata over its policy's (nil when neither
	// has any); eval copies it into the rule's decisions. It must not be
	// modified.
	Metadata map[string]string
	// Labels are the session labels the rule adds when it decides a call
	// with allow, warn or ask (eval records them; policy.Rule.Labels).
	Labels []string
	// Writes, when set, computes the files the call writes, recorded in
	// session.writes when the evaluation reaches the rule (policy.Rule.Writes).
	Writes *Program
	// Order is the rule's place in evaluation order (0 first).
	Order int
	// Source is the parsed rule.
	Source *policy.Rule

	set *PolicySet
}

// ConditionAST returns the checked AST Condition was built from (nil when
// Condition is), so that eval can build a state-tracking program on demand
// to explain a decision.
func (r *Rule) ConditionAST() *cel.Ast {
	if r.Condition == nil {
		return nil
	}
	return r.Condition.AST()
}

// Ref returns the rule's identity: its id, its policy's name and where its
// entry starts.
func (r *Rule) Ref() RuleRef {
	return RuleRef{RuleID: r.ID, Policy: r.Policy.Name, File: r.Pos.File, Line: r.Pos.Line, Col: r.Pos.Col}
}

// RuleRef names a rule and where it is written. Every result that names a
// rule embeds it (eval's decisions, monitored would-be decisions,
// explanation steps, remembered refusals and decision records, policytest's
// coverage), so that each has the same flat JSON fields: rule_id, policy,
// file, line and col, each left out when empty. The zero RuleRef names no
// rule: a default verdict, or a decision the engine made itself.
type RuleRef struct {
	// RuleID is the rule's id and Policy its policy's name.
	RuleID string `json:"rule_id,omitempty"`
	Policy string `json:"policy,omitempty"`
	// File, Line and Col are where the rule's entry starts, as policy.Pos
	// counts them.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
}

// MatchesTool reports whether the rule's matcher admits tool: by name, by
// glob, or by one of the tool's classes.
func (r *Rule) MatchesTool(tool string) bool {
	return r.matches(tool, r.set.ClassesOf(tool))
}

// AppliesTo reports whether the rule's match admits a call of tool with
// the given tool classes (those the call has, shape included).
func (r *Rule) AppliesTo(tool string, classes []string) bool { return r.matches(tool, classes) }

func (r *Rule) matches(tool string, classes []string) bool {
	if len(r.Tools) == 0 && len(r.Classes) == 0 {
		return true
	}
	for _, t := range r.Tools {
		if t == tool {
			return true
		}
		if ok, _ := doublestar.Match(t, tool); ok {
			return true
		}
	}
	for _, c := range r.Classes {
		if slices.Contains(classes, c) {
			return true
		}
	}
	return false
}

// Modify is a compiled modify block.
type Modify struct {
	// Args, when set, computes the replacement argument map.
	Args *Program
	// Set computes new values of single arguments, in file order.
	Set []SetArg
	// Unset lists the arguments removed.
	Unset []string
	// Content, when set, computes the new result content (after phase).
	Content *Program
	// Messages, when set, computes the new messages (input phase).
	Messages *Program
	// Output, when set, computes the new output (output phase): a string,
	// or a map with text and content.
	Output *Program
	// Description, when set, computes the tool's new description (tools
	// phase).
	Description *Program
}

// SetArg is one compiled modify.set entry.
type SetArg struct {
	Key     string
	Program *Program
}

// phaseIndex maps tool names to the rules that can match them.
type phaseIndex struct {
	// named holds, for each tool name some rule names exactly (by tool
	// name or through a class listing it by name), those rules in order;
	// exact, made at a name's first call, every rule that can match that
	// name (globs and match-all rules included), in order. A process
	// deciding one event asks for one or two names of the set's dozens.
	named map[string][]*Rule
	exact *sync.Map
	// open holds the rules that can match a tool nothing names exactly:
	// match-all rules, glob rules and class rules, in order.
	open []*Rule
	// all is every rule of the phase that has no matcher.
	matchAll []*Rule
	// all is every rule of the phase, in order (CandidatesFor).
	all []*Rule
	// dynamic says whether any rule in open has a glob or classes to test at
	// run time.
	dynamic bool
	classes *classTable
	// The rules of open a tool nothing names exactly may match: byPrefix
	// holds each rule under the literal prefix of each of its tool globs
	// (the text before the first wildcard; every tool it matches starts
	// with it), and rest the others (match-all rules, rules of a class
	// with globs, globs that start with a wildcard). So a tool is tested
	// only against the globs that could match it, not against every glob
	// of the set (10,000 `mcp__x__*` rules). maxPrefix is the longest key
	// of byPrefix.
	byPrefix  map[string][]*Rule
	rest      []*Rule
	maxPrefix int
	// memo keeps the candidates of the tools seen, up to maxMemo of them.
	memo *candidateMemo
}

// maxMemo bounds the tool names whose candidates a phase index remembers;
// past it (tool names an agent makes up) they are computed each time.
const maxMemo = 1024

type candidateMemo struct {
	m sync.Map // tool name -> []*Rule
	n atomic.Int64
}

// globPrefix returns the literal text a glob starts with, before its first
// wildcard, brace, class or escape.
func globPrefix(g string) string {
	if i := strings.IndexAny(g, "*?[{\\"); i >= 0 {
		return g[:i]
	}
	return g
}

func newPhaseIndex(rules []*Rule, classes *classTable) phaseIndex {
	ix := phaseIndex{exact: &sync.Map{}, classes: classes, all: rules, byPrefix: map[string][]*Rule{}, memo: &candidateMemo{}}
	// byName collects, in evaluation order, the rules that name a tool
	// exactly, by tool name or through a class listing it by name.
	byName := map[string][]*Rule{}
	add := func(name string, r *Rule) {
		l := byName[name]
		if len(l) == 0 || l[len(l)-1] != r {
			byName[name] = append(l, r)
		}
	}
	for name := range classes.exact {
		if _, ok := byName[name]; !ok {
			byName[name] = nil
		}
	}
	for _, r := range rules {
		if len(r.Tools) == 0 && len(r.Classes) == 0 {
			ix.open = append(ix.open, r)
			ix.matchAll = append(ix.matchAll, r)
			ix.rest = append(ix.rest, r)
			continue
		}
		dynamic, inRest := false, false
		for _, t := range r.Tools {
			if !isGlob(t) {
				add(t, r)
				continue
			}
			dynamic = true
			p := globPrefix(t)
			if p == "" {
				inRest = true
				continue
			}
			if l := ix.byPrefix[p]; len(l) == 0 || l[len(l)-1] != r {
				ix.byPrefix[p] = append(l, r)
			}
			ix.maxPrefix = max(ix.maxPrefix, len(p))
		}
		for _, c := range r.Classes {
			cl := classes.byName[c]
			if cl == nil {
				continue
			}
			for _, t := range cl.Tools {
				if isGlob(t) {
					dynamic, inRest = true, true // a tool no one names may be in the class by glob
				} else {
					add(t, r)
				}
			}
		}
		if dynamic {
			ix.open = append(ix.open, r)
			ix.dynamic = true
		}
		if inRest {
			ix.rest = append(ix.rest, r)
		}
	}
	ix.named = byName
	return ix
}

// exactCandidates are the candidates of name, a name some rule names
// exactly (own, its rules): its own rules merged, in evaluation order,
// with the open rules that match it.
func (ix *phaseIndex) exactCandidates(name string, own []*Rule) []*Rule {
	cls := ix.classes.classesOf(name)
	list := make([]*Rule, 0, len(own)+len(ix.open))
	i := 0
	for _, r := range ix.open {
		if !r.matches(name, cls) {
			continue
		}
		for i < len(own) && own[i].Order < r.Order {
			list = append(list, own[i])
			i++
		}
		if i < len(own) && own[i] == r {
			i++
		}
		list = append(list, r)
	}
	return append(list, own[i:]...)
}

func (ix *phaseIndex) candidates(tool string) []*Rule {
	if own, ok := ix.named[tool]; ok {
		if l, ok := ix.exact.Load(tool); ok {
			return l.([]*Rule)
		}
		l, _ := ix.exact.LoadOrStore(tool, ix.exactCandidates(tool, own))
		return l.([]*Rule)
	}
	if !ix.dynamic {
		return ix.matchAll
	}
	if l, ok := ix.memo.m.Load(tool); ok {
		return l.([]*Rule)
	}
	cands := slices.Clone(ix.rest)
	for n := 1; n <= min(len(tool), ix.maxPrefix); n++ {
		cands = append(cands, ix.byPrefix[tool[:n]]...)
	}
	slices.SortFunc(cands, func(a, b *Rule) int { return a.Order - b.Order })
	cands = slices.Compact(cands)
	cls := ix.classes.classesOf(tool)
	out := make([]*Rule, 0, len(cands))
	for _, r := range cands {
		if r.matches(tool, cls) {
			out = append(out, r)
		}
	}
	if ix.memo.n.Load() < maxMemo {
		if _, loaded := ix.memo.m.LoadOrStore(tool, out); !loaded {
			ix.memo.n.Add(1)
		}
	}
	return out
}

func isGlob(s string) bool {
	return slices.ContainsFunc([]rune(s), func(r rune) bool { return r == '*' || r == '?' || r == '[' || r == '{' || r == '\\' })
}
