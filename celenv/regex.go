package celenv

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// prefilteredMatches replaces cel-go's constant-pattern `matches` with one
// that first tests the literals every match must contain (prefilterOf):
// most strings a rule sees lack them, and strings.Contains is many times
// cheaper than running the regular expression. The answer is the regular
// expression's, always.
var prefilteredMatches = []*interpreter.RegexOptimization{
	{Function: overloads.Matches, OverloadID: overloads.MatchesString, RegexIndex: 1, Factory: prefilterFactory},
	{Function: overloads.Matches, OverloadID: overloads.Matches, RegexIndex: 1, Factory: prefilterFactory},
}

func prefilterFactory(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	return &matchCall{id: call.ID(), function: call.Function(), overload: call.OverloadID(), args: call.Args(), m: m}, nil
}

// matchCall is a `matches` call with a constant pattern. It evaluates only
// the string operand, and allocates nothing (cel-go's generic call node
// allocates its argument slice on every evaluation).
type matchCall struct {
	id                 int64
	function, overload string
	args               []interpreter.InterpretableV2
	m                  *matcher
}

func (c *matchCall) ID() int64                           { return c.id }
func (c *matchCall) Function() string                    { return c.function }
func (c *matchCall) OverloadID() string                  { return c.overload }
func (c *matchCall) Args() []interpreter.InterpretableV2 { return c.args }

// Exec implements interpreter.InterpretableV2.
// A long string is tested through the literal index the activation keeps
// (LiteralIndexHolder), shared by the rules of the call.
func (c *matchCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return c.apply(c.args[0].Exec(frame), frame.Scope())
}

// Eval implements interpreter.Interpretable.
func (c *matchCall) Eval(act interpreter.Activation) ref.Val {
	return c.apply(c.args[0].Eval(act), act)
}

func (c *matchCall) apply(v ref.Val, act interpreter.Activation) ref.Val {
	switch in := v.(type) {
	case types.String:
		ok, err := c.m.matchIn(string(in), literalIndexOf(act, string(in)))
		if err != nil {
			return types.WrapErr(err)
		}
		return types.Bool(ok)
	case *types.Err, *types.Unknown:
		return v
	}
	return types.NoSuchOverloadErr()
}

// Pattern is a constant pattern of `matches` outside a program: its
// answers are the planned matches call's, through the same prefilter
// (compile.VarMatches).
type Pattern struct{ m *matcher }

// NewPattern parses pattern as a program's constant pattern is parsed; the
// error is regexp.Compile's.
func NewPattern(pattern string) (*Pattern, error) {
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	return &Pattern{m: m}, nil
}

// String returns the pattern.
func (p *Pattern) String() string { return p.m.pattern }

// Match reports whether s contains a match of the pattern, as the
// program's matches call on s does when evaluated against act (a long s is
// tested through act's literal index, LiteralIndexHolder).
func (p *Pattern) Match(s string, act interpreter.Activation) (bool, error) {
	return p.m.matchIn(s, literalIndexOf(act, s))
}

// matcher is a constant pattern of `matches`: its literal prefilter, and
// its regular expression, compiled the first time a string passes the
// prefilter. Planning a program parses the pattern but neither analyses
// nor compiles it: a first in-process call plans every reachable rule, and
// most of their patterns are never matched, or never see a string that
// passes their filter.
//
// Whether a pattern is valid does not change: regexp.Compile fails exactly
// when syntax.Parse with syntax.Perl does (syntax.Compile cannot fail after
// a successful parse), so newMatcher returns the very error regexp.Compile
// would, at plan time, where cel-go's own optimization reports it.
type matcher struct {
	pattern string
	// parsed is the pattern's syntax tree, kept from the plan until the
	// prefilter is derived from it, at the first match: a first
	// in-process call plans about 44 patterns and matches about 6 (the
	// analysis of the others was 2.7% of its CPU).
	parsed *syntax.Regexp
	once   sync.Once
	// filter is the prefilter, nil when the pattern requires no literal;
	// made by once (prefilter).
	filter *filter
	re     atomic.Pointer[regexp.Regexp]
}

// newMatcher parses pattern as cel-go compiles the pattern of matches (RE2
// syntax, regexp.Compile); its prefilter is derived at its first match.
func newMatcher(pattern string) (*matcher, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return &matcher{pattern: pattern, parsed: parsed}, nil
}

// prefilter is the pattern's prefilter (nil: none), derived at the first
// call.
func (m *matcher) prefilter() *filter {
	m.once.Do(func() {
		if f := prefilterOf(m.parsed); f.op != filterTrue {
			m.filter = f
		}
		m.parsed = nil
	})
	return m.filter
}

// match reports whether s contains a match of the pattern, as
// regexp.MatchString does. The error is a compile failure after a
// successful parse, which Go's regexp package never returns: if it ever
// did, the evaluation fails rather than answer.
func (m *matcher) match(s string) (bool, error) { return m.matchIn(s, nil) }

// matchIn is match, the prefilter searching s through x when x indexes it
// (litindex.go).
func (m *matcher) matchIn(s string, x *LiteralIndex) (bool, error) {
	if f := m.prefilter(); f != nil && !f.testIn(s, x) {
		return false, nil
	}
	re := m.re.Load()
	if re == nil {
		var err error
		// Two goroutines may both compile; either result is the same.
		if re, err = regexp.Compile(m.pattern); err != nil {
			return false, fmt.Errorf("matches: pattern %q: %w", m.pattern, err)
		}
		m.re.Store(re)
	}
	return re.MatchString(s), nil
}

// compiled reports whether the regular expression has been compiled.
func (m *matcher) compiled() bool { return m.re.Load() != nil }

// maxAnyLiterals bounds the literals of an alternation's prefilter: past
// it, testing each costs more than it saves.
const maxAnyLiterals = 8

// RequiredLiterals returns literals at least one of which every match of the
// regular expression contains: the one RequiredLiteral returns when there is
// one of 3 bytes or more, else one literal per branch of an alternation
// every match goes through (at most 8, none shorter than 2 bytes) when they
// are longer than the single literal; nil when there is none.
// Case-folded parts (?i) never contribute.
//
// This is the simple analysis of the hand-written peer of the benchmarks
// (bench/peers); CEL's matches uses the fuller condition of prefilter.go
// (all of, any of, case folding, word boundaries, anchors).
func RequiredLiterals(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	lit := longest(required(re))
	if len(lit) >= 3 {
		return []string{lit}
	}
	if alts := requiredAny(re); shortest(alts) > len(lit) {
		return alts
	}
	if lit != "" {
		return []string{lit}
	}
	return nil
}

// requiredAny lists literals at least one of which every match of re
// contains, or nil.
func requiredAny(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			lits := requiredAny(sub)
			if lits == nil {
				return nil
			}
			for _, l := range lits {
				if !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		}
		if len(out) > maxAnyLiterals {
			return nil
		}
		return out
	case syntax.OpCapture, syntax.OpPlus:
		return requiredAny(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredAny(re.Sub[0])
		}
	case syntax.OpConcat:
		// A required literal of the concatenation, else the best set of
		// one of its parts (the one whose shortest literal is longest).
		if best := longest(required(re)); len(best) >= 2 {
			return []string{best}
		}
		var out []string
		for _, sub := range re.Sub {
			if lits := requiredAny(sub); lits != nil && shortest(lits) > shortest(out) {
				out = lits
			}
		}
		return out
	default:
		if best := longest(required(re)); len(best) >= 2 {
			return []string{best}
		}
	}
	return nil
}

// shortest is the length of the shortest of lits; 0 for none.
func shortest(lits []string) int {
	if len(lits) == 0 {
		return 0
	}
	n := len(lits[0])
	for _, l := range lits[1:] {
		n = min(n, len(l))
	}
	return n
}

// RequiredLiteral returns the longest literal string that every match of the
// regular expression contains, or "" when there is none (or the pattern does
// not parse). Case-folded parts (?i) never contribute.
func RequiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	return longest(required(re))
}

// longest returns the longest of lits (the first of equal ones), or "".
func longest(lits []string) string {
	best := ""
	for _, l := range lits {
		if len(l) > len(best) {
			best = l
		}
	}
	return best
}

// required lists literals each of which every match of re contains.
func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if !exactLiteral(re) {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []string
		var run strings.Builder
		flush := func() {
			if run.Len() > 0 {
				out = append(out, run.String())
				run.Reset()
			}
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && exactLiteral(sub) {
				run.WriteString(string(sub.Rune))
				continue
			}
			flush()
			out = append(out, required(sub)...)
		}
		flush()
		return out
	}
	return nil
}

// exactLiteral reports whether a literal node matches exactly the bytes of
// its UTF-8 encoding, so that strings.Contains may stand in for it: not when
// it folds case, and not when it holds U+FFFD, which the regexp engine also
// matches against any byte that is not valid UTF-8 (an input the encoded
// literal's bytes do not appear in).
func exactLiteral(re *syntax.Regexp) bool {
	return re.Flags&syntax.FoldCase == 0 && !slices.Contains(re.Rune, utf8.RuneError)
}
