package stdlib

import (
	"slices"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/stretchr/testify/assert"
)

// TestLiteralCheck: the pattern arguments the literal validators check are
// the ones LiteralCheck gives the policy compiler, with the same check.
func TestLiteralCheck(t *testing.T) {
	tests := []struct {
		fn        string
		arg       int
		bad, good string // "" when the argument is not a pattern
	}{
		{"glob.match", 1, "src/[a", "src/**"},
		{"glob.matchAny", 1, "{a", "*.go"},
		{"glob.matchName", 1, "[", "*.pem"},
		{"glob.couldMatch", 1, "[", "src/*"},
		{"glob.couldMatchShell", 1, "[", "src/*"},
		{"url.hostMatches", 1, "https://x.io/", "*.x.io"},
		{"matches", 1, "a(", `^rm\s`},
		{"glob.match", 0, "", ""},
		{"url.hostMatches", 0, "", ""},
		{"glob.valid", 0, "", ""},
		{"matches", 0, "", ""},
	}
	for _, tc := range tests {
		check, ok := LiteralCheck(tc.fn, tc.arg)
		if tc.bad == "" {
			assert.False(t, ok, "%s argument %d is not a pattern", tc.fn, tc.arg)
			continue
		}
		if !assert.True(t, ok, "%s argument %d is a pattern", tc.fn, tc.arg) {
			continue
		}
		assert.Error(t, check(tc.bad), "%s(%q)", tc.fn, tc.bad)
		assert.NoError(t, check(tc.good), "%s(%q)", tc.fn, tc.good)
	}
	// Each pattern argument of a stdlib function has its literal validator,
	// in the function's library.
	for _, p := range patternArgs {
		ns, _, isStdlib := strings.Cut(p.fn, ".")
		if !isStdlib {
			continue // CEL's matches: validated by cel-go and the policy compiler
		}
		want := literalArgs(p.fn, p.arg, p.check).Name()
		assert.True(t, slices.ContainsFunc(literalValidators(ns), func(v cel.ASTValidator) bool { return v.Name() == want }),
			"%s argument %d has no literal validator in library %s", p.fn, p.arg, ns)
	}
}
