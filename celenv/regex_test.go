package celenv

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRequiredLiteral(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{`rm\s+-rf`, "-rf"},
		{`git\s+push\s+.*--force`, "--force"},
		{`(curl|wget)[^|]*\|\s*sh`, "sh"},
		{`^abc$`, "abc"},
		{`(?i)secret`, ""},
		{`a|b`, ""},
		{`x*`, ""},
		{`(ab)+cd`, "ab"},
		{`(?:npm){2,}\s+publish`, "publish"},
		{`[a-z]+`, ""},
		{`(`, ""},
	} {
		assert.Equal(t, tc.want, RequiredLiteral(tc.pattern), tc.pattern)
	}
}

// The prefilter must never change an answer.
func FuzzPrefilterAgreesWithRegexp(f *testing.F) {
	for _, p := range []string{`rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)`, `git\s+push\s+.*(--force|-f)\b`, `(?i)SeCrEt`, `a+b{2,3}c`, `(ab)+|cd`, `^(ls|cat)\b`, `\.env(\.[a-z]+)?$`} {
		for _, in := range []string{"", "rm -rf /", "git push --force", "secret", "aabbbc", "ababcd", "ls -la", "x/.env.local"} {
			f.Add(p, in)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, in string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		match, err := compileMatcher(pattern)
		if err != nil {
			t.Fatalf("compileMatcher(%q) failed where regexp.Compile did not: %v", pattern, err)
		}
		if got, want := match(in), re.MatchString(in); got != want {
			t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (literal %q)", pattern, in, got, want, RequiredLiteral(pattern))
		}
	})
}
