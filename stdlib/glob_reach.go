package stdlib

import (
	"math"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/bmatcuk/doublestar/v4"
)

// # glob.couldMatch
//
// Reports whether a glob could match the path or a path under it: whether
// some path the pattern matches equals the path or lies inside it, compared
// segment by segment ("**" spans any number of segments, including past
// the end of the path; *, ?, [class] and {a,b} as in glob.match). It is
// how a rule asks whether a word such as ~/.config/celg*/trust.json or
// ~/.cl*/** could reach a place it protects: true whenever glob.match(p,
// pattern) is true for p the path or a path under it. A pattern with more
// than 256 brace alternatives counts as matching (fail closed); an invalid
// pattern is an error.
//
//	glob.couldMatch(<string>, <string>) -> <bool>
//
// Examples:
//
//	glob.couldMatch("/home/u/.config/celguard", "/home/u/.config/celg*/trust.json") // true
//	glob.couldMatch("/home/u/.config/celguard", "/home/u/**")                        // true
//	glob.couldMatch("/etc/celguard", "/etc/celg[u]ard")                              // true
//	glob.couldMatch("/home/u/.config/celguard", "/home/u/.config/*.yaml")            // false
//	glob.couldMatch("/home/u/.config/celguard", "/home/u/.config")                   // false
//
// Introduced in stdlib version 2.
//
// # glob.couldMatchShell
//
// glob.couldMatch as a shell expands a word with its default options (bash,
// zsh and sh alike: no dotglob, no GLOB_DOTS): a name that begins with a
// dot is matched only by a pattern segment that begins with a dot (or a
// bracket class, counted as able to). A "**" segment still spans every
// directory, hidden ones included, so that the DIR/** and ROOT/**/NAME
// targets shell.writes makes for recursive writes, archives and find keep
// reaching hidden places. A command that may change the shell's globbing
// (shopt, setopt, set, GLOBIGNORE) should use glob.couldMatch instead.
//
//	glob.couldMatchShell(<string>, <string>) -> <bool>
//
// Examples:
//
//	glob.couldMatchShell("/srv/app/.celguard", "/srv/app/*")         // false: * skips dot-files
//	glob.couldMatchShell("/srv/app/.celguard", "/srv/app/.c*")       // true
//	glob.couldMatchShell("/srv/app/.celguard", "/srv/app/**")        // true
//	glob.couldMatchShell("/home/u/.local/state/celguard", "/home/u/.local/stat?/celguard/x") // true
//
// Introduced in stdlib version 2.
func (l *Lib) globReachFns() []*fnDef {
	return []*fnDef{
		{ns: "glob", name: "glob.couldMatch", version: 2, ovs: []*ovDef{{
			id: "glob_couldMatch_string_string", args: []*cel.Type{cel.StringType, cel.StringType}, result: cel.BoolType,
			// The brace alternatives hold at most braceGrowth times the
			// pattern's bytes, each walked against the path's segments.
			cost: couldMatchCost,
			binary: func(p, pat ref.Val) ref.Val {
				ps, pats, err := twoStrings(p, pat)
				if err != nil {
					return err
				}
				ok, verr := CouldMatch(pats, ps)
				if verr != nil {
					return types.NewErr("glob.couldMatch: %v", verr)
				}
				return types.Bool(ok)
			},
		}}},
		{ns: "glob", name: "glob.couldMatchShell", version: 2, ovs: []*ovDef{{
			id: "glob_couldMatchShell_string_string", args: []*cel.Type{cel.StringType, cel.StringType}, result: cel.BoolType,
			cost: couldMatchCost,
			binary: func(p, pat ref.Val) ref.Val {
				ps, pats, err := twoStrings(p, pat)
				if err != nil {
					return err
				}
				ok, verr := CouldMatchShell(pats, ps)
				if verr != nil {
					return types.NewErr("glob.couldMatchShell: %v", verr)
				}
				return types.Bool(ok)
			},
		}}},
	}
}

// couldMatchCost is the cost of glob.couldMatch and glob.couldMatchShell:
// at most the brace alternatives (braceGrowth times the pattern's length)
// walked against the path's segments. At run time a pattern whose literal
// directory prefix rules the path out (prefixRules) costs a comparison of
// the two, and a pattern without braces one walk of it against the path.
var couldMatchCost = costModel{base: 8, arg: 1, perUnit: braceGrowth, arg2: 0, perUnit2: 4,
	refine: func(args []ref.Val) uint64 {
		if len(args) != 2 {
			return math.MaxUint64
		}
		name, ok1 := args[0].(types.String)
		pattern, ok2 := args[1].(types.String)
		if !ok1 || !ok2 {
			return math.MaxUint64
		}
		n, p := uint64(len(name)), uint64(len(pattern))
		if prefixRules(string(pattern), string(name)) {
			return 2 + (min(n, p)+9)/10
		}
		if strings.ContainsRune(string(pattern), '{') {
			return math.MaxUint64 // the model's charge
		}
		segsN, segsP := uint64(strings.Count(string(name), "/")+1), uint64(strings.Count(string(pattern), "/")+1)
		return 8 + p + n + (p*segsN+n*segsP+9)/10
	}}

// prefixRules reports whether the literal part of pattern before its
// first wildcard, up to its last "/", shows that neither the path nor a path
// under it can match: the path and that directory prefix are not on one
// line (neither lies inside the other). It is CouldMatch's fast path.
func prefixRules(pattern, name string) bool {
	lit := pattern
	if i := strings.IndexAny(pattern, "*?[{(\\"); i >= 0 {
		lit = pattern[:i]
	}
	dir := lit[:strings.LastIndexByte(lit, '/')+1]
	if dir == "" || !utf8.ValidString(dir) || !utf8.ValidString(name) {
		return false // doublestar compares invalid UTF-8 as runes: no byte shortcut
	}
	n := strings.TrimRight(name, "/") + "/"
	return !strings.HasPrefix(n, dir) && !strings.HasPrefix(dir, n)
}

// Bounds of the brace expansion of a pattern in CouldMatch: at most
// maxBraceAlternatives alternatives, of at most braceGrowth times the
// pattern's length (plus 256 bytes) in all. Beyond them the pattern counts
// as matching.
const (
	maxBraceAlternatives = 256
	braceGrowth          = 16
	maxBraceGroups       = 32 // brace groups expanded in sequence or nested
)

// errInvalidPattern is returned for a pattern doublestar rejects.
type errInvalidPattern string

func (e errInvalidPattern) Error() string { return "invalid glob pattern " + string(e) }

// CouldMatch reports whether some path matched by the doublestar pattern
// equals name or lies under it (see glob.couldMatch). Both are compared
// segment by segment, split at "/"; braces are expanded first (at most
// maxBraceAlternatives alternatives, else the answer is true).
func CouldMatch(pattern, name string) (bool, error) { return couldMatch(pattern, name, false) }

// CouldMatchShell is CouldMatch as a shell expands the pattern by default
// (see glob.couldMatchShell): a path segment that begins with a dot is
// matched only by a pattern segment that begins with one (or with a
// bracket class), except by "**", which spans hidden directories too.
func CouldMatchShell(pattern, name string) (bool, error) { return couldMatch(pattern, name, true) }

func couldMatch(pattern, name string, shellDots bool) (bool, error) {
	if !doublestar.ValidatePattern(pattern) {
		return false, errInvalidPattern(pattern)
	}
	if prefixRules(pattern, name) {
		return false, nil
	}
	budget := braceGrowth*len(pattern) + 256
	alts, ok := expandBraces(pattern, maxBraceAlternatives, &budget, 0)
	if !ok {
		return true, nil
	}
	segs := strings.Split(name, "/")
	for _, alt := range alts {
		if reachSegments(splitPattern(alt), segs, shellDots) {
			return true, nil
		}
	}
	return false, nil
}

// reachSegments: can the pattern's segments consume every segment of the
// path (what remains of the pattern then names the path or paths under
// it)? A dynamic programme over (pattern segment, path segment).
func reachSegments(raw, path []string, shellDots bool) bool {
	pat := make([]string, len(raw))
	span := make([]bool, len(raw))
	dots := make([]bool, len(raw))
	for i, seg := range raw {
		pat[i], span[i], dots[i] = groupSuperset(seg)
	}
	// dotOK: with shellDots, a wildcard does not match a leading dot, as a
	// shell's default globbing; "**" spans hidden directories regardless.
	dotOK := func(i int, s string) bool {
		p := pat[i]
		return !shellDots || !strings.HasPrefix(s, ".") || p == "**" || dots[i] ||
			strings.HasPrefix(p, ".") || strings.HasPrefix(p, "\\.") || strings.HasPrefix(p, "[")
	}
	// memo[i][j]: 0 unknown, 1 false, 2 true.
	memo := make([][]uint8, len(pat)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(path)+1)
	}
	var f func(i, j int) bool
	f = func(i, j int) bool {
		if j == len(path) {
			return true
		}
		if i == len(pat) {
			return false
		}
		if m := memo[i][j]; m != 0 {
			return m == 2
		}
		var r bool
		if span[i] {
			r = f(i+1, j) || dotOK(i, path[j]) && f(i, j+1)
		} else {
			r = dotOK(i, path[j]) && segmentMatch(pat[i], path[j]) && f(i+1, j+1)
		}
		memo[i][j] = 1
		if r {
			memo[i][j] = 2
		}
		return r
	}
	return f(0, 0)
}

// spans reports whether a pattern segment may match across "/":
// doublestar lets "**" inside a segment (a**, ****) and a class that may
// match "/" ([!a], [^a], [ -0], [a/b]) do so.
func spans(seg string) bool {
	return strings.Contains(seg, "**") || strings.Contains(seg, "/") || classMatchesSlash(seg)
}

// groupSuperset reads the parentheses of a segment, which doublestar takes
// as literal text but the shells do not: bash's extglob (@(a|b), !(a),
// *(a), +(a), ?(a)) and zsh's alternation ((a|b)) and glob qualifiers
// (*(D), *(/)). Each group, with the operator before it, is read as "*",
// a superset of what it matches within one segment; a "(" left open by a
// "/" (@(a/b), split at the "/") reads as "*" to the segment's end, a ")"
// without its "(" as "*" from the segment's start. A segment with a group
// may match a name that begins with a dot (*(D), .@(x), !(a)): dots is
// true. A segment that holds a group and one of zsh's extended operators
// (#, ^, ~: (a/)# recurses, (#i) folds case, ^x negates) is taken to span
// any number of segments, as "**" (span true), the safe side. An escaped
// parenthesis (\() and one inside a class ([(]) is literal.
func groupSuperset(seg string) (out string, span, dots bool) {
	if !hasUnescaped(seg, "()") {
		return seg, spans(seg), false
	}
	if strings.ContainsAny(seg, "#^~") {
		return "**", true, true
	}
	var b strings.Builder
	star := func() {
		if s := b.String(); !strings.HasSuffix(s, "*") || strings.HasSuffix(s, "\\*") {
			b.WriteByte('*')
		}
	}
	depth := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c == '\\' && i+1 < len(seg):
			if depth == 0 {
				b.WriteString(seg[i : i+2])
			}
			i++
		case c == '[' && depth == 0:
			end := classEnd(seg, i)
			b.WriteString(seg[i : end+1])
			i = end
		case c == '(':
			if depth == 0 {
				// The extglob operator before the group belongs to it.
				if s := b.String(); s != "" && strings.IndexByte("@!+?*", s[len(s)-1]) >= 0 &&
					!strings.HasSuffix(s, "\\"+s[len(s)-1:]) {
					t := s[:len(s)-1]
					b.Reset()
					b.WriteString(t)
				}
				star()
			}
			depth++
		case c == ')':
			if depth == 0 {
				// Closes a group opened in an earlier segment.
				b.Reset()
				b.WriteByte('*')
				continue
			}
			depth--
		default:
			if depth == 0 {
				b.WriteByte(c)
			}
		}
	}
	out = b.String()
	return out, spans(out), true
}

// hasUnescaped reports whether s holds one of chars outside a backslash
// escape and a class ([(] is a literal parenthesis).
func hasUnescaped(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '[':
			i = classEnd(s, i)
		case strings.IndexByte(chars, s[i]) >= 0:
			return true
		}
	}
	return false
}

// classMatchesSlash reports whether a class of the segment ([...]) may
// match "/": a negated one, or one whose range covers it ([ -0]).
func classMatchesSlash(seg string) bool {
	for i := 0; i < len(seg); i++ {
		switch seg[i] {
		case '\\':
			i++
		case '[':
			end := strings.IndexByte(seg[i+1:], ']')
			if end < 0 {
				return false
			}
			class := seg[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
				return true
			}
			// Ask doublestar itself whether the class admits "/": its
			// escapes and ranges (0-\0, --0) are its own to read.
			if doublestar.MatchUnvalidated("["+class+"]", "/") {
				return true
			}
			i += end + 1
		}
	}
	return false
}

// splitPattern splits a brace-free pattern at the "/" outside classes
// ([a/b]) and escapes (\/); a segment keeping a "/" spans (see spans).
func splitPattern(p string) []string {
	var out []string
	start, inClass := 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case c == '[' && !inClass:
			inClass = strings.IndexByte(p[i+1:], ']') >= 0
		case c == ']' && inClass:
			inClass = false
		case c == '/' && !inClass:
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

// segmentMatch matches one segment (no "/" in either) as doublestar does.
func segmentMatch(pat, seg string) bool {
	return doublestar.MatchUnvalidated(pat, seg)
}

// classEnd returns the index of the "]" that closes the class opening at
// p[i], as doublestar reads it (a "," or "{" inside is no brace syntax), or
// i when there is none.
func classEnd(p string, i int) int {
	for j := i + 1; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return i
}

// expandBraces returns the brace-free alternatives of a pattern, or false
// when there would be more than limit or they would hold more than *budget
// bytes (spent as they are made), or more than maxBraceGroups groups
// deep. Unbalanced braces are literal, and
// a backslash escapes the next character, as in doublestar; a class
// ([a,b]) is no brace syntax.
func expandBraces(p string, limit int, budget *int, groups int) ([]string, bool) {
	if groups > maxBraceGroups {
		return nil, false
	}
	open, close := -1, -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 {
					close = i
				}
			}
		}
		if close >= 0 {
			break
		}
	}
	if open < 0 || close < 0 {
		if *budget -= len(p); *budget < 0 {
			return nil, false
		}
		return []string{p}, true
	}
	var parts []string
	start := open + 1
	depth = 0
	for i := open + 1; i < close; i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, p[start:close])
	var out []string
	for _, part := range parts {
		if *budget < len(p) {
			return nil, false
		}
		alts, ok := expandBraces(p[:open]+part+p[close+1:], limit-len(out), budget, groups+1)
		if !ok {
			return nil, false
		}
		out = append(out, alts...)
		if len(out) > limit {
			return nil, false
		}
	}
	return out, true
}
