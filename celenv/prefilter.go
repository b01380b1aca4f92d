package celenv

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// A literal prefilter for constant regular expressions. From the parsed
// pattern (regexp/syntax), prefilterOf derives a condition over literals —
// all of these, any of those, these in this order, nested — that every
// string the pattern matches in satisfies. The condition is tested with
// strings.Index (or its ASCII case-insensitive twin) before the regular
// expression runs, and a string that fails it cannot match: the answer is
// false without running the automaton. A string that passes runs the regular expression, so the answer
// is always the regular expression's.
//
// Soundness, the one property that matters (a filter that wrongly says
// "cannot match" turns a block into an allow):
//   - a node that can match the empty string (x*, x?, x{0,n}) requires
//     nothing;
//   - a literal stands for its exact UTF-8 bytes unless it holds U+FFFD,
//     which the regexp engine also matches against any byte that is not
//     valid UTF-8: such a rune requires nothing;
//   - a case-folded literal ((?i), whole pattern or group) stands for an
//     ASCII case-insensitive search only for the runes whose every simple
//     folding (unicode.SimpleFold) is ASCII: (?i)k also matches U+212A
//     KELVIN SIGN and (?i)s U+017F LONG S, so k, s and every non-ASCII rune
//     of a folded literal require nothing and break the literal there;
//   - a character class stands for its runes only when it is small and
//     holds no U+FFFD (the parser has already folded (?i) into the class);
//   - anchors and word boundaries match the empty string between runes, so
//     they keep literals on both sides adjacent (a\bb matches nothing, and
//     "ab" is still required of every match: there is none);
//   - ASCII bytes never occur inside a multi-byte UTF-8 sequence, so an
//     ASCII case-insensitive byte comparison is exact for the ASCII runes a
//     folded literal keeps, and leaves the other bytes compared exactly;
//   - order: a node's condition is met by literals inside the node's own
//     match (the word boundaries around one looking at the text beside
//     it), so the parts of a concatenation, which match consecutive
//     pieces of the text, meet theirs one after the other: "curl", then
//     "|", then "sh". The test finds, for each part in turn, the earliest
//     end of the literals its condition needs at or after where the
//     previous part's ended. Taking the earliest end is never wrong: a
//     condition that holds in a piece of the text holds in any piece
//     holding it, so a later end leaves the next parts less room, never
//     more.

// filterOp is the kind of a prefilter node.
type filterOp uint8

const (
	// filterTrue requires nothing.
	filterTrue filterOp = iota
	// filterLit requires the literal (lit; ASCII case-insensitive when fold,
	// lit then being lower-case).
	filterLit
	// filterAnd requires every sub-condition.
	filterAnd
	// filterOr requires at least one sub-condition.
	filterOr
	// filterPrefix requires the string to begin with the literal (lit,
	// fold as for filterLit).
	filterPrefix
	// filterSeq requires every sub-condition, in order: the string splits
	// into consecutive parts, the first satisfying the first condition,
	// the second the second, and so on (the parts of a concatenation).
	filterSeq
)

// filter is a condition over literals.
type filter struct {
	op   filterOp
	lit  string
	fold bool
	// wbBefore and wbAfter (filterLit): the literal must occur with a word
	// boundary (\b) right before it, right after it.
	wbBefore, wbAfter bool
	sub               []*filter
}

var trueFilter = &filter{op: filterTrue}

// Caps: the analysis keeps at most maxExact strings for a node that matches
// one of a finite set, at most maxFilterLits literals in the whole filter
// (past them, testing each costs more than it saves), and drops literals
// longer than maxLitLen bytes to a prefix (a prefix of a required literal is
// required).
const (
	maxExact      = 32
	maxFilterLits = 64
	maxLitLen     = 64
	maxClassRunes = 4
	// maxAnalysisSteps bounds the nodes one analysis visits: an optional
	// part is analysed again for its prefixes, so nested optional parts
	// cost exponential time without it ((?:(?:x+)?y)?y... takes seconds at
	// 150 bytes). Past it, a node requires nothing and has no known
	// prefixes. The policies' patterns take at most a few hundred.
	maxAnalysisSteps = 1 << 12
	// maxImpliedSubs bounds the conditions dropImplied compares pairwise
	// (a long concatenation of literals would take quadratic time);
	// past it, none is dropped.
	maxImpliedSubs = 256
)

// analysis is one run of prefilterOf: the steps it has left.
type analysis struct{ left int }

// flit is one string a node may match exactly (fold: modulo ASCII case,
// stored lower-case).
//
// wbBefore and wbAfter: the string is matched with a word boundary (\b)
// right before, right after it. On the empty string (\b itself) both are
// set: a boundary at that point.
//
// closed: the string is only how the match begins (a prefix of it): the
// match goes on with something unknown, so nothing may be appended to it.
type flit struct {
	s                 string
	fold              bool
	wbBefore, wbAfter bool
	closed            bool
}

// info is what the analysis knows of a node: either the finite set of
// strings it matches (exact, when known), or a condition every match
// satisfies.
type info struct {
	exact   []flit
	isExact bool
	match   *filter
}

func exactInfo(lits ...flit) info { return info{exact: lits, isExact: true} }

// emptyOnly is the exact set of the empty string. Shared: no function
// changes a set in place (union and cross build new ones).
var emptyOnly = []flit{{}}

// wordBoundary is the exact set of \b: the empty string, at a word
// boundary.
var wordBoundary = []flit{{wbBefore: true, wbAfter: true}}

// cond is the condition an info stands for.
func (in info) cond() *filter {
	if !in.isExact {
		return in.match
	}
	return orOf(in.exact)
}

// prefilterOf returns the condition every match of re satisfies; the true
// condition when the pattern requires no literal.
//
// A pattern anchored at the start of the text (^ without (?m), \A) whose
// matches begin with one of a few literals gets only that: the test is then
// a comparison at the start, where a search for the literals would read the
// whole string for a regular expression that, anchored, gives up at once.
func prefilterOf(re *syntax.Regexp) *filter {
	a := &analysis{left: maxAnalysisSteps}
	if ps, ok := a.anchoredPrefixes(re); ok {
		or := &filter{op: filterOr}
		for _, p := range ps {
			or.sub = append(or.sub, &filter{op: filterPrefix, lit: p.s, fold: p.fold})
		}
		return simplify(or)
	}
	f := simplify(a.analyze(re).cond())
	return capFilter(f)
}

// anchoredPrefixes returns the literals one of which every match of re
// begins with, when re is anchored at the start of the text (every match
// then begins the string); false when it is not anchored or no such
// literals are known.
func (a *analysis) anchoredPrefixes(re *syntax.Regexp) ([]flit, bool) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText {
		return nil, false
	}
	return a.prefixes(re.Sub[1:])
}

// prefixes returns the literals one of which every match of the
// concatenation subs begins with (none empty), or false.
func (a *analysis) prefixes(subs []*syntax.Regexp) ([]flit, bool) {
	acc := emptyOnly
	for _, s := range subs {
		in := a.analyze(s)
		if in.isExact && len(acc)*len(in.exact) <= maxExact {
			acc = cross(acc, in.exact)
			continue
		}
		if ps, ok := a.prefixesOf(s); ok && len(acc)*len(ps) <= maxExact {
			acc = cross(acc, ps)
		}
		break
	}
	for _, p := range acc {
		if p.s == "" {
			return nil, false
		}
	}
	return acc, true
}

// prefixesOf returns the literals one of which every match of re begins
// with, or false.
func (a *analysis) prefixesOf(re *syntax.Regexp) ([]flit, bool) {
	if a.left <= 0 {
		return nil, false
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return a.prefixesOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return a.prefixesOf(re.Sub[0])
		}
	case syntax.OpConcat:
		return a.prefixes(re.Sub)
	case syntax.OpAlternate:
		var out []flit
		for _, s := range re.Sub {
			ps, ok := a.prefixesOf(s)
			if !ok {
				return nil, false
			}
			out = union(out, ps)
		}
		return out, len(out) <= maxExact
	default:
		if in := a.analyze(re); in.isExact {
			return a.prefixes([]*syntax.Regexp{re})
		}
	}
	return nil, false
}

func (a *analysis) analyze(re *syntax.Regexp) info {
	if a.left--; a.left < 0 {
		return info{match: trueFilter}
	}
	switch re.Op {
	case syntax.OpWordBoundary:
		return exactInfo(wordBoundary...)
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpNoWordBoundary:
		return exactInfo(emptyOnly...)
	case syntax.OpLiteral:
		return literalInfo(re)
	case syntax.OpCharClass:
		return classInfo(re)
	case syntax.OpCapture:
		return a.analyze(re.Sub[0])
	case syntax.OpQuest:
		sub := a.analyze(re.Sub[0])
		if sub.isExact && len(sub.exact) < maxExact {
			return exactInfo(union(sub.exact, []flit{{}})...)
		}
		return info{match: trueFilter}
	case syntax.OpPlus:
		return info{match: a.analyze(re.Sub[0]).cond()}
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return info{match: a.analyze(re.Sub[0]).cond()}
		}
		return info{match: trueFilter}
	case syntax.OpConcat:
		return a.concatInfo(re.Sub)
	case syntax.OpAlternate:
		subs := make([]info, len(re.Sub))
		allExact := true
		for i, s := range re.Sub {
			subs[i] = a.analyze(s)
			allExact = allExact && subs[i].isExact
		}
		if allExact {
			var u []flit
			for _, s := range subs {
				u = union(u, s.exact)
			}
			if len(u) <= maxExact {
				return exactInfo(u...)
			}
		}
		or := &filter{op: filterOr}
		for _, s := range subs {
			or.sub = append(or.sub, s.cond())
		}
		return info{match: or}
	}
	// OpAnyChar, OpAnyCharNotNL, OpStar, OpNoMatch and anything new:
	// nothing required.
	return info{match: trueFilter}
}

// literalInfo: a literal node's runes, split where a rune cannot stand for
// its bytes (see the soundness notes above).
func literalInfo(re *syntax.Regexp) info {
	fold := re.Flags&syntax.FoldCase != 0
	if !fold && !slices.ContainsFunc(re.Rune, badLiteralRune) {
		return exactInfo(flit{s: string(re.Rune)})
	}
	var runs []string
	var b strings.Builder
	whole := true
	for _, r := range re.Rune {
		ok := !badLiteralRune(r)
		if ok && fold {
			ok = asciiFoldOrbit(r)
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
		}
		if !ok {
			whole = false
			if b.Len() > 0 {
				runs = append(runs, b.String())
				b.Reset()
			}
			continue
		}
		b.WriteRune(r)
	}
	if whole {
		return exactInfo(flit{s: b.String(), fold: fold})
	}
	if b.Len() > 0 {
		runs = append(runs, b.String())
	}
	and := &filter{op: filterAnd}
	for _, s := range runs {
		and.sub = append(and.sub, &filter{op: filterLit, lit: s, fold: fold})
	}
	return info{match: and}
}

// badLiteralRune reports whether a rune of a literal cannot stand for its
// UTF-8 bytes: U+FFFD, which also matches a byte that is not valid UTF-8,
// and what is not a rune at all.
func badLiteralRune(r rune) bool { return r == utf8.RuneError || !utf8.ValidRune(r) }

// asciiFoldOrbit reports whether r and every rune it folds to under Unicode
// simple folding are ASCII: then (?i)r matches exactly the ASCII
// case-insensitive bytes of r. False for k and s (U+212A, U+017F).
func asciiFoldOrbit(r rune) bool {
	switch {
	case r >= utf8.RuneSelf:
		return false
	case r == 'k' || r == 'K' || r == 's' || r == 'S':
		// TestASCIIFoldOrbit checks these are the only ASCII runes that
		// fold outside ASCII.
		return false
	}
	return true
}

// classInfo: a class of at most maxClassRunes runes, none U+FFFD, matches
// exactly one of them.
func classInfo(re *syntax.Regexp) info {
	n := 0
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if lo <= utf8.RuneError && utf8.RuneError <= hi || hi < lo {
			return info{match: trueFilter}
		}
		n += int(hi-lo) + 1
		if n > maxClassRunes {
			return info{match: trueFilter}
		}
	}
	if n == 0 {
		return info{match: trueFilter}
	}
	var lits []flit
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			lits = append(lits, flit{s: string(r)})
		}
	}
	return exactInfo(lits...)
}

// concatInfo: the exact sets of consecutive parts multiply (while the
// product stays within maxExact); every run of them, and every other part's
// condition, is required, in the order of the parts (filterSeq).
func (a *analysis) concatInfo(subs []*syntax.Regexp) info {
	acc := emptyOnly
	allExact := true
	// The parts match consecutive pieces of the text: their conditions
	// hold in that order.
	and := &filter{op: filterSeq}
	for _, s := range subs {
		in := a.analyze(s)
		if in.isExact && len(acc)*len(in.exact) <= maxExact {
			acc = cross(acc, in.exact)
			continue
		}
		// An optional part (x?, x*, x{0,n}) whose matches begin with known
		// literals: the match goes on either without it or with one of
		// them, after which nothing more is known (closed).
		if opt, ok := a.optionalPrefixes(s); ok && len(acc)*len(opt) <= maxExact {
			acc = cross(acc, opt)
			allExact = false
			if !slices.ContainsFunc(acc, func(l flit) bool { return !l.closed }) {
				and.sub = append(and.sub, orOf(acc))
				acc = emptyOnly
			}
			continue
		}
		and.sub = append(and.sub, orOf(acc))
		acc = emptyOnly
		if in.isExact {
			acc = in.exact
			continue
		}
		allExact = false
		and.sub = append(and.sub, in.match)
	}
	if allExact && len(and.sub) == 0 {
		return exactInfo(acc...)
	}
	and.sub = append(and.sub, orOf(acc))
	return info{match: and}
}

// optionalPrefixes returns, for a part that may match the empty string
// (x?, x*, x{0,n}) and whose non-empty matches begin with one of a few
// literals, the empty string and those literals, closed; false otherwise.
func (a *analysis) optionalPrefixes(re *syntax.Regexp) ([]flit, bool) {
	switch {
	case re.Op == syntax.OpQuest, re.Op == syntax.OpStar, re.Op == syntax.OpRepeat && re.Min == 0:
	default:
		return nil, false
	}
	ps, ok := a.prefixesOf(re.Sub[0])
	if !ok || len(ps) >= maxExact {
		return nil, false
	}
	out := make([]flit, 0, len(ps)+1)
	out = append(out, flit{})
	for _, p := range ps {
		p.closed, p.wbAfter = true, false
		out = union(out, []flit{p})
	}
	return out, true
}

// cross is every string of a followed by every string of b. A string that
// folds case anywhere folds it everywhere (lower-cased): a weaker condition
// than the exact bytes, so still a required one.
func cross(a, b []flit) []flit {
	switch {
	case len(a) == 1 && a[0] == flit{}:
		return b
	case len(b) == 1 && b[0] == flit{}:
		return a
	}
	out := make([]flit, 0, len(a)*len(b))
	for _, x := range a {
		if x.closed {
			out = union(out, []flit{x})
			continue
		}
		for _, y := range b {
			z := flit{s: x.s + y.s, fold: x.fold || y.fold, wbBefore: x.wbBefore, wbAfter: y.wbAfter, closed: y.closed}
			// A boundary at an end of an empty side is at that end of
			// the other; one between two non-empty sides is dropped (a
			// weaker condition).
			if x.s == "" {
				z.wbBefore = x.wbBefore || y.wbBefore
			}
			if y.s == "" {
				z.wbAfter = x.wbAfter || y.wbAfter
			}
			if z.fold && !(x.fold && y.fold) {
				z.s = asciiLower(z.s)
			}
			out = union(out, []flit{z})
		}
	}
	return out
}

// union appends the strings of b that a lacks.
func union(a, b []flit) []flit {
	for _, y := range b {
		if !slices.Contains(a, y) {
			a = append(a, y)
		}
	}
	return a
}

// orOf is the condition "one of lits": the true condition when one is empty.
func orOf(lits []flit) *filter {
	or := &filter{op: filterOr}
	for _, l := range lits {
		if l.s == "" {
			return trueFilter
		}
		or.sub = append(or.sub, &filter{op: filterLit, lit: l.s, fold: l.fold, wbBefore: l.wbBefore, wbAfter: l.wbAfter})
	}
	return or
}

// simplify flattens nested and/or nodes, drops what true makes redundant
// (true in an and; an or with a true branch is true), cuts long literals to
// a prefix, and drops a literal implied by another (in an and, "ab" implies
// "a"; in an or, "a" is implied by "ab", which adds nothing).
func simplify(f *filter) *filter {
	switch f.op {
	case filterLit, filterPrefix:
		if len(f.lit) > maxLitLen {
			cut := maxLitLen
			for cut > 0 && !utf8.RuneStart(f.lit[cut]) {
				cut--
			}
			// The boundary after the literal is not after its prefix.
			return &filter{op: f.op, lit: f.lit[:cut], fold: f.fold, wbBefore: f.wbBefore}
		}
		return f
	case filterAnd, filterOr:
		var subs []*filter
		for _, s := range f.sub {
			s = simplify(s)
			switch {
			case s.op == filterTrue:
				if f.op == filterOr {
					return trueFilter
				}
			case s.op == f.op:
				subs = append(subs, s.sub...)
			default:
				subs = append(subs, s)
			}
		}
		subs = dropImplied(f.op, subs)
		switch len(subs) {
		case 0:
			if f.op == filterAnd {
				return trueFilter
			}
			// An empty or: no branch can match. Never built by analyze
			// (NoMatch requires nothing), kept true to stay on the safe side.
			return trueFilter
		case 1:
			return subs[0]
		}
		return &filter{op: f.op, sub: subs}
	case filterSeq:
		// True parts drop out, nested sequences are spliced in (both keep
		// the order of what is left), and nothing else is dropped: a
		// literal another implies still says where the next part starts.
		var subs []*filter
		for _, s := range f.sub {
			switch s = simplify(s); s.op {
			case filterTrue:
			case filterSeq:
				subs = append(subs, s.sub...)
			default:
				subs = append(subs, s)
			}
		}
		switch len(subs) {
		case 0:
			return trueFilter
		case 1:
			return subs[0]
		}
		return &filter{op: filterSeq, sub: subs}
	}
	return f
}

// dropImplied removes the literals of an and that another of its literals
// implies, and the literals of an or that imply another of its literals.
func dropImplied(op filterOp, subs []*filter) []*filter {
	if len(subs) > maxImpliedSubs {
		return subs
	}
	// implies reports whether contains(x) implies contains(y).
	implies := func(x, y *filter) bool {
		if x.op != filterLit || y.op != filterLit || y.wbBefore || y.wbAfter {
			return false
		}
		switch {
		case x.fold == y.fold:
			return strings.Contains(x.lit, y.lit)
		case y.fold:
			return strings.Contains(asciiLower(x.lit), y.lit)
		}
		return false
	}
	out := subs[:0:0]
	for i, s := range subs {
		redundant := false
		for j, t := range subs {
			if i == j {
				continue
			}
			var hit bool
			if op == filterAnd {
				hit = implies(t, s)
			} else {
				hit = implies(s, t)
			}
			// Of two equivalent literals keep the first.
			if hit && (!(implies(s, t) && implies(t, s)) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, s)
		}
	}
	return out
}

// capFilter bounds the literals of f. An or past maxFilterLits literals
// keeps only the best condition of each branch that is an and or a
// sequence, and requires nothing if it is still past the budget (no branch
// may be dropped). An and keeps its conditions within the budget, cheapest
// first (fewest literals, then the most selective), so that a string that
// fails fails early; a sequence keeps those within the budget in their
// order; dropping a condition of either only weakens it.
func capFilter(f *filter) *filter {
	switch f.op {
	case filterOr:
		if countLits(f) <= maxFilterLits {
			return f
		}
		// Each branch that is an and (or a sequence) keeps only its most
		// selective condition (the branch then requires less, so the or
		// does too).
		or := &filter{op: filterOr, sub: make([]*filter, len(f.sub))}
		for i, s := range f.sub {
			if s.op == filterAnd || s.op == filterSeq {
				s = capFilter(s)
			}
			if s.op == filterAnd || s.op == filterSeq {
				s = slices.MaxFunc(s.sub, func(a, b *filter) int { return score(a) - score(b) })
			}
			or.sub[i] = s
		}
		if countLits(or) > maxFilterLits {
			return trueFilter
		}
		return or
	case filterAnd:
		subs := make([]*filter, 0, len(f.sub))
		for _, s := range f.sub {
			if s = capFilter(s); s.op != filterTrue {
				subs = append(subs, s)
			}
		}
		// Cheapest first (a single literal before an or of many), then
		// the most selective.
		slices.SortStableFunc(subs, func(a, b *filter) int {
			if c := countLits(a) - countLits(b); c != 0 {
				return c
			}
			return score(b) - score(a)
		})
		n, kept := 0, subs[:0]
		for _, s := range subs {
			if c := countLits(s); n+c <= maxFilterLits {
				kept = append(kept, s)
				n += c
			}
		}
		switch len(kept) {
		case 0:
			return trueFilter
		case 1:
			return kept[0]
		}
		return &filter{op: filterAnd, sub: kept}
	case filterSeq:
		// The order is kept: a part past the budget is dropped (the parts
		// before and after it still come in that order).
		n, kept := 0, make([]*filter, 0, len(f.sub))
		for _, s := range f.sub {
			if s = capFilter(s); s.op == filterTrue {
				continue
			}
			if c := countLits(s); n+c <= maxFilterLits {
				kept = append(kept, s)
				n += c
			}
		}
		switch len(kept) {
		case 0:
			return trueFilter
		case 1:
			return kept[0]
		}
		return &filter{op: filterSeq, sub: kept}
	}
	if countLits(f) > maxFilterLits {
		return trueFilter
	}
	return f
}

// score is how selective a condition is: the length of the shortest literal
// it may be satisfied by.
func score(f *filter) int {
	switch f.op {
	case filterLit, filterPrefix:
		return len(f.lit)
	case filterOr:
		m := -1
		for _, s := range f.sub {
			if v := score(s); m < 0 || v < m {
				m = v
			}
		}
		return max(m, 0)
	case filterAnd, filterSeq:
		m := 0
		for _, s := range f.sub {
			m = max(m, score(s))
		}
		return m
	}
	return 0
}

func countLits(f *filter) int {
	switch f.op {
	case filterLit, filterPrefix:
		return 1
	case filterAnd, filterOr, filterSeq:
		n := 0
		for _, s := range f.sub {
			n += countLits(s)
		}
		return n
	}
	return 0
}

// test reports whether s satisfies f.
func (f *filter) test(s string) bool { return f.testIn(s, nil) }

// testIn is test, searching s through x when x indexes it (litindex.go).
func (f *filter) testIn(s string, x *LiteralIndex) bool {
	switch f.op {
	case filterLit:
		if f.wbBefore || f.wbAfter {
			return f.index(s, 0, len(s), x) >= 0
		}
		if f.fold {
			return indexFoldASCII(s, f.lit) >= 0
		}
		return indexIn(x, s, f.lit, 0, len(s)) >= 0
	case filterPrefix:
		if f.fold {
			return len(s) >= len(f.lit) && equalFoldASCII(s[:len(f.lit)], f.lit)
		}
		return strings.HasPrefix(s, f.lit)
	case filterAnd:
		for _, sub := range f.sub {
			if !sub.testIn(s, x) {
				return false
			}
		}
		return true
	case filterOr:
		for _, sub := range f.sub {
			if sub.testIn(s, x) {
				return true
			}
		}
		return false
	case filterSeq:
		return f.end(s, 0, len(s), x) >= 0
	}
	return true
}

// end returns the earliest offset e <= limit such that s[from:e] holds
// what f needs (the literals inside it, their word boundaries looking at s
// around them), or -1 when there is none. A condition that holds in
// s[from:e] holds in every piece of s that holds s[from:e] too, so the
// earliest end is the best start for what comes after (filterSeq). limit
// only saves work: an or looks for its later literals only where they
// would end before the best end found so far.
func (f *filter) end(s string, from, limit int, x *LiteralIndex) int {
	switch f.op {
	case filterLit:
		p := f.index(s, from, limit, x)
		if p < 0 {
			return -1
		}
		return p + len(f.lit)
	case filterPrefix:
		// A condition on the whole text (only ever the whole filter, never
		// a part): it says nothing of where a part ends.
		if !f.testIn(s, x) {
			return -1
		}
		return from
	case filterAnd:
		e := from
		for _, sub := range f.sub {
			end := sub.end(s, from, limit, x)
			if end < 0 {
				return -1
			}
			e = max(e, end)
		}
		return e
	case filterOr:
		e := -1
		for _, sub := range f.sub {
			if end := sub.end(s, from, limit, x); end >= 0 {
				e, limit = end, end
			}
		}
		return e
	case filterSeq:
		e := from
		for _, sub := range f.sub {
			if e = sub.end(s, e, limit, x); e < 0 {
				return -1
			}
		}
		return e
	}
	return from
}

// String renders f for tests and diagnostics: "lit", "(?i)lit", a & b,
// (a | b), a .. b (a, then b).
func (f *filter) String() string {
	switch f.op {
	case filterLit, filterPrefix:
		s := f.lit
		if f.wbBefore {
			s = `\b` + s
		}
		if f.wbAfter {
			s += `\b`
		}
		if f.op == filterPrefix {
			s = "^" + s
		}
		if f.fold {
			return "(?i)" + s
		}
		return s
	case filterAnd, filterOr, filterSeq:
		sep := " & "
		switch f.op {
		case filterOr:
			sep = " | "
		case filterSeq:
			sep = " .. "
		}
		parts := make([]string, len(f.sub))
		for i, s := range f.sub {
			parts[i] = s.String()
			if s.op == filterAnd || s.op == filterOr || s.op == filterSeq {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, sep)
	}
	return "true"
}

// asciiLower lower-cases the ASCII letters of s and leaves every other byte.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// index returns the offset of the first occurrence of f's literal in s that
// starts at or after from and ends at or before limit, with its word
// boundaries, or -1. An exact literal is searched through x when x indexes
// s.
//
// The boundaries are decided as regexp decides \b: between a rune that is
// an ASCII word character ([0-9A-Za-z_]) and one that is not, the start and
// the end of the text being neither. A byte of a multi-byte sequence or an
// invalid one decodes to a rune that is not ASCII, so the bytes on either
// side decide it.
func (f *filter) index(s string, from, limit int, x *LiteralIndex) int {
	for i := from; i+len(f.lit) <= limit; {
		var p int
		if f.fold {
			j := indexFoldASCII(s[i:limit], f.lit)
			if j < 0 {
				return -1
			}
			p = i + j
		} else if p = indexIn(x, s, f.lit, i, limit); p < 0 {
			return -1
		}
		if (!f.wbBefore || wordBoundaryAt(s, p)) && (!f.wbAfter || wordBoundaryAt(s, p+len(f.lit))) {
			return p
		}
		i = p + 1
	}
	return -1
}

// wordBoundaryAt reports whether \b holds at byte offset p of s.
func wordBoundaryAt(s string, p int) bool {
	return isWordByte(s, p-1) != isWordByte(s, p)
}

func isWordByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// indexFoldASCII returns the index of the first occurrence of sub, a
// lower-case string, in s, comparing ASCII letters case-insensitively and
// every other byte exactly; -1 when there is none.
func indexFoldASCII(s, sub string) int {
	n := len(sub)
	if n == 0 {
		return 0
	}
	c0, c1 := sub[0], sub[0]
	if 'a' <= c0 && c0 <= 'z' {
		c1 = c0 - ('a' - 'A')
	}
	for i := 0; i+n <= len(s); i++ {
		if c := s[i]; c != c0 && c != c1 {
			continue
		}
		if equalFoldASCII(s[i+1:i+n], sub[1:]) {
			return i
		}
	}
	return -1
}

// equalFoldASCII reports whether s equals lower, a lower-case string of the
// same length, comparing ASCII letters case-insensitively and every other
// byte exactly.
func equalFoldASCII(s, lower string) bool {
	for j := 0; j < len(lower); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[j] {
			return false
		}
	}
	return true
}
