package celenv

import (
	"regexp"
	"regexp/syntax"
	"strings"

	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// prefilteredMatches replaces cel-go's constant-pattern `matches` with one
// that first tests a literal every match must contain: most strings a rule
// sees lack it, and strings.Contains is many times cheaper than running the
// regular expression. The answer is the regular expression's, always.
var prefilteredMatches = []*interpreter.RegexOptimization{
	{Function: overloads.Matches, OverloadID: overloads.MatchesString, RegexIndex: 1, Factory: prefilterFactory},
	{Function: overloads.Matches, OverloadID: overloads.Matches, RegexIndex: 1, Factory: prefilterFactory},
}

func prefilterFactory(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	match, err := compileMatcher(pattern)
	if err != nil {
		return nil, err
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(values ...ref.Val) ref.Val {
		if len(values) != 2 {
			return types.NoSuchOverloadErr()
		}
		in, ok := values[0].(types.String)
		if !ok {
			return types.NoSuchOverloadErr()
		}
		return types.Bool(match(string(in)))
	}), nil
}

// compileMatcher compiles pattern as cel-go does (RE2 syntax) and returns a
// matcher that skips the regular expression when the input lacks a literal
// the pattern requires.
func compileMatcher(pattern string) (func(string) bool, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	lit := RequiredLiteral(pattern)
	if lit == "" {
		return re.MatchString, nil
	}
	return func(s string) bool {
		return strings.Contains(s, lit) && re.MatchString(s)
	}, nil
}

// RequiredLiteral returns the longest literal string that every match of the
// regular expression contains, or "" when there is none (or the pattern does
// not parse). Case-folded parts (?i) never contribute.
func RequiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	best := ""
	for _, l := range required(re) {
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
		if re.Flags&syntax.FoldCase != 0 {
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
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
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
