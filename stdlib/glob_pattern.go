package stdlib

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"
)

// globPattern is what glob.match needs to know about a pattern before it
// matches a path: whether the pattern is valid, and the literal runs that
// every path it matches contains. A decision matches the same few dozen
// policy patterns (sensitive names, protected places) against every path
// of the call, and most paths contain none of a pattern's literals: the
// prefilter answers those without doublestar's backtracking, and the
// validation is done once per pattern, not once per match.
type globPattern struct {
	valid bool
	// lits are byte strings every name the pattern matches contains
	// (requiredGlobLiterals); empty when nothing is known.
	lits []string
}

// match reports whether name matches the (valid) pattern: false at once
// when a required literal is missing, doublestar's answer otherwise.
func (g *globPattern) match(pattern, name string) bool {
	for _, l := range g.lits {
		if !strings.Contains(name, l) {
			return false
		}
	}
	return doublestar.MatchUnvalidated(pattern, name)
}

// The pattern cache is bounded: patterns reach glob.match from policies
// (a few dozen, the same at every call) and from the call itself (glob
// words of a command), which may be many and long. A pattern past either
// bound is analysed for each match, as before the cache.
const (
	maxCachedGlobs      = 4096
	maxCachedGlobLength = 256
)

var (
	globPatterns     sync.Map // string -> *globPattern
	globPatternCount atomic.Int64
)

// compiledGlob returns the analysis of pattern, from the cache when it is
// there.
func compiledGlob(pattern string) *globPattern {
	if g, ok := globPatterns.Load(pattern); ok {
		return g.(*globPattern)
	}
	if len(pattern) > maxCachedGlobLength || globPatternCount.Load() >= maxCachedGlobs {
		return analyseGlob(pattern)
	}
	// What is kept is made from a copy: the literals are substrings of
	// the pattern, which may be a word of a long command, and would keep
	// the whole command in memory for the life of the process.
	pattern = strings.Clone(pattern)
	g := analyseGlob(pattern)
	// A place is reserved before the pattern is stored, so that
	// concurrent calls never keep more than maxCachedGlobs.
	if globPatternCount.Add(1) > maxCachedGlobs {
		globPatternCount.Add(-1)
	} else if _, loaded := globPatterns.LoadOrStore(pattern, g); loaded {
		globPatternCount.Add(-1)
	}
	return g
}

// analyseGlob validates pattern and finds its required literals.
func analyseGlob(pattern string) *globPattern {
	if !doublestar.ValidatePattern(pattern) {
		return &globPattern{}
	}
	return &globPattern{valid: true, lits: requiredGlobLiterals(pattern)}
}

// requiredGlobLiterals returns runs of the valid doublestar pattern that
// every name it matches contains as they are. A run is a maximal sequence
// of ASCII bytes that are not special to doublestar and not '/', outside
// any character class, before the first alternative group:
//
//   - doublestar matches a literal byte of the pattern against one rune of
//     the name, in order, with nothing skipped between two literals that
//     follow each other in the pattern; an ASCII byte is one rune, and only
//     that byte decodes to it (a byte of a multi-byte or broken sequence
//     never does), so the run is in the name byte for byte;
//   - the only pattern text doublestar lets match nothing is made of '/'
//     and '*' (a "/**" at the end, "**/" matching no directory, the rest of
//     the pattern once the name is used up), which is why '/' ends a run;
//   - a class matches one rune of a set and an escaped byte is left out,
//     both ending the run; at '{' the analysis stops, since an alternative
//     is made of text that may or may not be used.
//
// Leaving a literal out only makes the prefilter weaker, never wrong; the
// fuzz test FuzzGlobPrefilter holds match to doublestar's answer.
func requiredGlobLiterals(pattern string) []string {
	var lits []string
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			lits = append(lits, pattern[start:end])
		}
		start = -1
	}
	for i := 0; i < len(pattern); i++ {
		switch b := pattern[i]; {
		case b == '{':
			flush(i)
			return lits
		case b == '\\':
			flush(i)
			i++ // the escaped byte
		case b == '[':
			flush(i)
			// Skip the class as doublestar's validation reads it (which
			// has checked that it ends): its first byte, after a
			// negation, is never the end, and a backslash escapes the
			// byte after it.
			i++
			if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
				i++
			}
			for ; i < len(pattern) && pattern[i] != ']'; i++ {
				if pattern[i] == '\\' {
					i++
				}
			}
		case b == '*' || b == '?' || b == '/' || b == ']' || b == '}' || b == ',' || b >= 0x80:
			flush(i)
		default:
			if start < 0 {
				start = i
			}
		}
	}
	flush(len(pattern))
	return lits
}
