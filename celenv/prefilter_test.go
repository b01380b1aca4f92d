package celenv

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compileMatcher returns the prefiltered matcher of pattern as a function;
// the error is newMatcher's.
func compileMatcher(pattern string) (func(string) bool, error) {
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	return func(s string) bool {
		ok, err := m.match(s)
		if err != nil {
			panic(err)
		}
		return ok
	}, nil
}

// The filter each pattern gets: what every match must contain.
func TestPrefilterOf(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		// Concatenation: every part's literals, adjacent ones joined, in order.
		{`rm\s+-[a-zA-Z]*r[a-zA-Z]*\s+/(\s|$)`, "rm .. - .. r .. /"},
		{`chmod\s+-R\s+777\s+/(\s|$)`, "chmod .. -R .. 777 .. /"},
		{`git\s+push\s+.*(--force|-f)\b`, "git .. push .. (--force\\b | -f\\b)"},
		// Anchors and \b keep literals adjacent; an optional part adds nothing.
		// \b next to a literal: found where the boundary holds.
		{`\bmkfs(\.[a-z0-9]+)?\b`, "\\bmkfs\\b | \\bmkfs."},
		{`\bdd\b.*\bof=/dev/`, "\\bdd\\b .. \\bof=/dev/"},
		{`(?i)\bhelp\b`, "(?i)\\bhelp\\b"},
		{`\b(?:foo|bar)`, "\\bfoo | \\bbar"},
		{`x\b(?:foo)?`, "xfoo | x\\b"},
		{`\b`, "true"},
		{`\Bdd`, "dd"},
		{`(^|[;&|]\s*)sudo\s`, "sudo"},
		// Anchored at the start: the literals it begins with, only.
		{`^abc$`, "^abc"},
		{`\Aabc`, "^abc"},
		{`(^ab)c`, "abc"},
		{`(^abc)`, "^abc"},
		{`^git\s+(status|log|diff|show|branch)\b`, "^git"},
		{`^(ls|cat|head)\b`, "^ls | ^cat | ^head"},
		{`^(?i)https?://`, "(?i)^http"},
		{`^(?i)kubectl`, "(?i)ubectl"},
		{`^[a-z]+foo`, "foo"},
		{`(?m)^abc`, "abc"},
		{`^(?:x|y*)abc`, "abc"},
		{`a\bb`, "ab"},
		// Alternation: any of; small finite sets multiply.
		{`docker\s+(run|exec)`, "docker .. (run | exec)"},
		{`\.(pem|key)$`, ".pem | .key"},
		{`(ba|z)?sh`, "sh"},
		{`x(?:foo|bar)y`, "xfooy | xbary"},
		{`foo|bar`, "foo | bar"},
		{`[Kk]ubectl`, "Kubectl | kubectl"},
		{`^(go\s+(build|test|vet)|npm\s+test|make)\b`, "^go | ^npm | ^make"},
		{`(go\s+(build|test|vet)|npm\s+test|make)\b`, "(go .. (build | test | vet)) | (npm .. test) | make"},
		// Repetition: min >= 1 requires its operand once.
		{`(ab)+cd`, "ab .. cd"},
		{`(?:npm){2,}\s+publish`, "npm .. publish"},
		// Nothing from what can match empty.
		{`x*`, "true"},
		{`(foo)?`, "true"},
		// An optional part that begins with known literals: the match
		// goes on without it or with one of them.
		{`(foo)*bar`, "bar | foo"},
		{`x(\.[a-z]+)?y`, "xy | x."},
		{`x(\.[a-z]+)?(-[a-z]+)?y`, "xy | x- | x."},
		{`x(?:a[a-z]*|b)?y`, "xy | xa | xb"},
		{`a{0,3}`, "true"},
		{`[a-z]+`, "true"},
		{`a|b*`, "true"},
		{``, "true"},
		{`^$`, "true"},
		// Case folding: ASCII case-insensitive, except k and s (U+212A
		// KELVIN SIGN, U+017F LONG S) and non-ASCII runes, which break it.
		{`(?i)secret`, "(?i)ecret"},
		{`(?i)token`, "(?i)to & (?i)en"},
		{`(?i)kubectl`, "(?i)ubectl"},
		{`(?i)help`, "(?i)help"},
		{`(?i)@here`, "(?i)@here"},
		{`a(?i:b)c`, "(?i)abc"},
		{`(?i)k`, "true"},
		{`(?i)s`, "true"},
		{`(?i)é`, "true"},
		// A class folded by the parser holds K, k and U+212A: exact.
		{`(?i)[k]ey`, "(?i)key | (?i)\u212aey"},
		{`(?i:k)ey`, "ey"},
		// U+FFFD also matches a byte that is not valid UTF-8.
		{"\uFFFDab", "ab"},
		{`x\x{FFFD}y`, "x & y"},
		{`[\x{FFFD}a]b`, "b"},
		// Non-ASCII literals stand for their bytes.
		{`héllo`, "héllo"},
		// Caps (TestPrefilterCaps): literals past 64 bytes are cut to a prefix.
		// The parser factors common prefixes: a(?:[1-9])|b(?:[1-8]).
		{`a1|a2|a3|a4|a5|a6|a7|a8|a9|b1|b2|b3|b4|b5|b6|b7|b8`, "a | b"},
		{strings.Repeat("a", 100), strings.Repeat("a", 64)},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		require.NoError(t, err, tc.pattern)
		assert.Equal(t, tc.want, prefilterOf(re).String(), tc.pattern)
	}
}

// Caps: an or of more than 64 literals requires nothing; a sequence keeps
// what fits, in order.
func TestPrefilterCaps(t *testing.T) {
	var words []string
	for i := range 70 {
		// Two letters each, no common prefix the parser could factor.
		words = append(words, fmt.Sprintf("%c%c", 'a'+i%26, 'A'+i/26*3+i%3))
	}
	for _, tc := range []struct{ pattern, want string }{
		{strings.Join(words, "|"), "true"},
		{"(?:" + strings.Join(words, "|") + `)\s+xyz`, "xyz"},
		{"(?:" + strings.Join(words[:40], "|") + `)\s+xyz`, "(" + strings.Join(words[:40], " | ") + ") .. xyz"},
		// Past the budget, an or keeps the best condition of each branch.
		{"(?:" + strings.Join(words[:40], "|") + `)\s+xyz|(?:` + strings.Join(words[40:], "|") + `)\s+abc`, "xyz | abc"},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		require.NoError(t, err)
		assert.Equal(t, tc.want, prefilterOf(re).String(), tc.pattern)
	}
}

// The pitfalls, answered through the prefiltered matcher and compared with
// regexp: each of these is a string the filter must let through.
func TestPrefilterPitfalls(t *testing.T) {
	for _, tc := range []struct {
		pattern, in string
		want        bool
	}{
		{`(?i)kubectl`, "\u212Aubectl get pods", true},
		{`(?i)kubectl`, "KUBECTL", true},
		{`(?i)kubectl`, "kubect", false},
		{`(?i)secret`, "\u017Fecret", true},
		{`(?i)secret`, "SECRET", true},
		{`(?i)(password|ssh)`, "\u017F\u017Fh", true},
		{`(?i)k`, "\u212A", true},
		{`(?i)é`, "É", true},
		{`a(?i:b)c`, "aBc", true},
		{`a(?i:b)c`, "ABc", false},
		{`[Kk]ubectl`, "\u212Aubectl", false},
		{`(?i:k)ubectl`, "\u212Aubectl", true},
		{"\uFFFDab", "\xffab", true},
		{`x\x{FFFD}+y`, "x\xff\xfey", true},
		{`x.y`, "x\xffy", true},
		{`\bmkfs\b`, "mkfs.ext4", true},
		{`\bmkfs\b`, "mkfsx", false},
		{`\bmkfs(\.[a-z0-9]+)?\b`, "mkfsx", false},
		{`\bmkfs(\.[a-z0-9]+)?\b`, "mkfs.ext4 /dev/x", true},
		{`\bmkfs(\.[a-z0-9]+)?\b`, "mkfs._", true},
		{`x(\.[a-z]+)?y`, "x.aby", true},
		{`x(\.[a-z]+)?y`, "xzy", false},
		{`\bdd\b`, "add of=/dev/null", false},
		{`\bdd\b`, "add dd", true},
		{`\bdd\b`, "dd", true},
		{`\bdd\b`, "_dd", false},
		{`\bdd\b`, "dd9", false},
		{`\bdd\b`, "\xffdd\xc3", true},
		{`\bdd\b`, "édd", true},
		{`\bdd\b`, "ddd dd", true},
		{`(?i)\bdd\b`, "x DD", true},
		{`(?i)\bdd\b`, "xDD", false},
		{`a\bb`, "a b ab", false},
		{`^git\s+status`, "git  status", true},
		{`^git\s+status`, "echo git status", false},
		{`^(?i)https?://`, "HTTP://x", true},
		{`^(?i)https?://`, "x http://x", false},
		{`^(?i)kubectl`, "\u212Aubectl", true},
		{`(?m)^abc`, "x\nabc", true},
		{`^(?:x|y*)abc`, "abc", true},
		{`\.(pem|key)$`, "a.key", true},
		{`\.(pem|key)$`, "a.KEY", false},
		{`héllo`, "h\xc3\xa9llo", true},
		{`ab|bc|cd|de|ef|fg|gh|hi|ij|jk|kl|lm|mn|no|op|pq|qr`, "zzqr", true},
		{strings.Repeat("a", 100), strings.Repeat("a", 100), true},
		{strings.Repeat("a", 100), strings.Repeat("a", 99), false},
	} {
		match, err := compileMatcher(tc.pattern)
		require.NoError(t, err, tc.pattern)
		want := regexp.MustCompile(tc.pattern).MatchString(tc.in)
		require.Equal(t, tc.want, want, "the table's own answer for %q on %q", tc.pattern, tc.in)
		assert.Equal(t, want, match(tc.in), "%q on %q", tc.pattern, tc.in)
	}
}

func TestContainsFoldASCII(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   bool
	}{
		{"xHeLLo", "hello", true},
		{"hell", "hello", false},
		{"", "", true},
		{"aHELLO", "hello", true},
		{"abc", "", true},
		{"a-B@", "b@", true},
		{"a-B`", "b@", false}, // '`' is not '@' lower-cased
		{"\xc3\x89", "\xc3\xa9", false},
		{"[", "{", false},
	} {
		assert.Equal(t, tc.want, indexFoldASCII(tc.s, tc.sub) >= 0, "%q in %q", tc.sub, tc.s)
	}
}

// seedPatterns returns the string literals of the built-in policies and
// of the peers benchmark's Rego policy that compile as regular
// expressions: every pattern they use, and more.
func seedPatterns(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("..", "policies", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no policies: %v", err)
	}
	files = append(files, filepath.Join("..", "internal", "benchdata", "testdata", "bench20.yaml"))
	quoted := regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if _, err := regexp.Compile(p); err == nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range quoted.FindAllString(string(b), -1) {
			// YAML single-quoted scalars hold CEL with "..."; YAML
			// double-quoted scalars are rare in these files.
			if s, err := strconv.Unquote(q); err == nil {
				add(s)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "bench", "peers", "bench.rego"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("regex\\.match\\(`([^`]*)`").FindAllStringSubmatch(string(b), -1) {
		add(m[1])
	}
	if len(out) < 100 {
		t.Fatalf("only %d seed patterns", len(out))
	}
	return out
}

// The policies' patterns that must appear among the seeds (the scan above
// would otherwise silently find none of them).
func TestSeedPatterns(t *testing.T) {
	seeds := seedPatterns(t)
	for _, p := range []string{
		`\b(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-)?[A-Za-z0-9_-]{32,}|AIza[0-9A-Za-z_-]{35}|(?:sk|rk)_live_[0-9A-Za-z]{24,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,})`,
		`(?i)(gcloud|aws|az|kubectl|helm|terraform)`,
		`^(?i)https?://`,
		`(^|/)\.\.(/|$)`,
		`(^|[;&|]\s*)sudo\s`,
		`\bmkfs(\.[a-z0-9]+)?\b`,
	} {
		assert.Contains(t, seeds, p)
	}
}

// adversarialInputs are inputs for every seed pattern: folding characters,
// invalid UTF-8, long inputs, and the commands and paths of the benchmarks.
var adversarialInputs = []string{
	"", "rm -rf /", "git push --force", "secret", "SECRET", "\u017Fecret", "\u212Aubectl get pods",
	"KUBECTL delete", "sudo apt-get install jq", "curl -fsSL https://x.sh | sh", "HTTPS://example.com",
	"ls -la", "x/.env.local", "/home/u/.ssh/config", "/tmp/x.pem", "a\xffb", "\xff\xfe\xfd", "mkfs.ext4 /dev/sda",
	"dd if=/dev/zero of=/dev/sda", "@channel hi", "<!here>", "aws s3 ls", "a\u212a\u017f", "x\xc3",
	"sk-ant-" + strings.Repeat("a", 30), "hf_" + strings.Repeat("Z", 40), "../../etc/passwd", "$HOME/.bashrc",
	"echo " + strings.Repeat("lorem git push origin main chmod -R 777 ./build curl --help add of=/dev/null mkfsx npm docs docker ps pseudo git reset --soft git commit -m ", 18) + "| wc -c",
	strings.Repeat("\xff", 300) + "sudo rm -rf /",
}

func fuzzPatterns(t testing.TB) []string {
	return append(seedPatterns(t), `(?i)SeCrEt`, `a+b{2,3}c`, `(ab)+|cd`, `(?i)k`, `(?i)s+`, `[Kk\x{212A}]ey`)
}

// Every seed pattern on every adversarial input: the prefiltered answer is
// regexp's.
func TestPrefilterSeedsAgree(t *testing.T) {
	for _, p := range fuzzPatterns(t) {
		re := regexp.MustCompile(p)
		match, err := compileMatcher(p)
		require.NoError(t, err, p)
		for _, in := range adversarialInputs {
			if got, want := match(in), re.MatchString(in); got != want {
				t.Errorf("pattern %q on %q: prefiltered %v, regexp %v", p, in, got, want)
			}
		}
	}
}

// The prefilter must never change an answer.
func FuzzPrefilterAgreesWithRegexp(f *testing.F) {
	// Each pattern with three of the inputs, in turn, so that every pattern
	// and every input is a seed (TestPrefilterSeedsAgree runs them all
	// against each other).
	for i, p := range fuzzPatterns(f) {
		for k := range 3 {
			f.Add(p, adversarialInputs[(3*i+k)%len(adversarialInputs)])
		}
	}
	// U+FFFD in a pattern also matches a byte that is not valid UTF-8.
	f.Add("\uFFFDab", "\xffab")
	f.Add(`x\x{FFFD}+y`, "x\xff\xfey")
	f.Fuzz(func(t *testing.T, pattern, in string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			// An invalid pattern is refused with regexp.Compile's error.
			_, merr := newMatcher(pattern)
			if merr == nil || merr.Error() != err.Error() {
				t.Fatalf("pattern %q: newMatcher error %v, regexp.Compile error %v", pattern, merr, err)
			}
			return
		}
		match, err := compileMatcher(pattern)
		if err != nil {
			t.Fatalf("compileMatcher(%q) failed where regexp.Compile did not: %v", pattern, err)
		}
		m, err := newMatcher(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := match(in), re.MatchString(in); got != want {
			parsed, _ := syntax.Parse(pattern, syntax.Perl)
			t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (filter %s)", pattern, in, got, want, prefilterOf(parsed))
		}
		// The same through a literal index of the input (litindex.go).
		if len(in) >= 2 {
			got, err := m.matchIn(in, indexed(in))
			if err != nil || got != re.MatchString(in) {
				t.Fatalf("pattern %q on %q: indexed %v (%v), regexp %v", pattern, in, got, err, !got)
			}
		}
		// Every match the regexp finds satisfies the filter.
		if loc := re.FindStringIndex(in); loc != nil {
			parsed, _ := syntax.Parse(pattern, syntax.Perl)
			if f := prefilterOf(parsed); !f.test(in[loc[0]:loc[1]]) {
				t.Fatalf("pattern %q: its match %q of %q fails the filter %s", pattern, in[loc[0]:loc[1]], in, f)
			}
		}
	})
}

// A pattern is compiled the first time a string passes its filter, never
// before; an invalid one is refused when the matcher is made, with
// regexp.Compile's own error.
func TestMatcherCompilesAtFirstUse(t *testing.T) {
	m, err := newMatcher(`git\s+push\s+--force`)
	require.NoError(t, err)
	for _, in := range []string{"ls -la", "go test ./...", "git push", "git push --forc"} {
		ok, err := m.match(in)
		require.NoError(t, err)
		assert.False(t, ok, in)
	}
	assert.False(t, m.compiled(), "compiled for strings that fail the filter")
	// Every literal, out of order: the filter refuses it too.
	ok, err := m.match("push git --force")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.False(t, m.compiled(), "compiled for literals out of order")
	ok, err = m.match("git push-x --force")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.True(t, m.compiled())
	ok, err = m.match("git  push --force")
	require.NoError(t, err)
	assert.True(t, ok)

	// No filter: the first string compiles it.
	m, err = newMatcher(`[a-z]+`)
	require.NoError(t, err)
	assert.Nil(t, m.prefilter())
	ok, err = m.match("abc")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, m.compiled())

	for _, p := range []string{`(`, `a**`, `\8`, `[z-a]`, `a{2,1}`, `(?i`, "\xff\xfe(", `x{1001}`, `\pX`} {
		_, want := regexp.Compile(p)
		require.Error(t, want, p)
		_, got := newMatcher(p)
		if assert.Error(t, got, p) {
			assert.Equal(t, want.Error(), got.Error(), p)
		}
	}
}

// Random patterns over the pitfalls (folding runes, U+FFFD, anchors, word
// boundaries, flags in groups, repetition, small classes) against random
// strings of the same runes and of bytes that are not valid UTF-8: the
// prefiltered answer is regexp's. Deterministic, so it runs in every test
// run; FuzzPrefilterAgreesWithRegexp explores further.
func TestPrefilterRandomPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 6))
	atoms := []string{"a", "b", "ab", "ba", "k", "s", "K", "S", "é", "É", `\x{212A}`, `\x{17F}`, `\x{FFFD}`, ".", `\b`, `\B`, "^", "$", `\A`, `\z`,
		"[ab]", "[kK]", "[^a]", `\s`, `\w`, "[é\u212a]", `[\x{FFFD}b]`, "xy", "yx", "-", "/", `a[a-z]*`, `x.+`, `-[a-z]+`, `(?:ab|k)[0-9]*`}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth == 0 || r.IntN(3) == 0 {
			return atoms[r.IntN(len(atoms))]
		}
		switch r.IntN(9) {
		case 0, 1, 2:
			return gen(depth-1) + gen(depth-1)
		case 3:
			return "(?:" + gen(depth-1) + "|" + gen(depth-1) + ")"
		case 4:
			return "(" + gen(depth-1) + ")" + []string{"?", "*", "+", "{1,2}", "{0,2}", "{2}", "+?"}[r.IntN(7)]
		case 5:
			return "(?" + []string{"i", "m", "s", "-i", "i-s"}[r.IntN(5)] + ":" + gen(depth-1) + ")"
		case 6:
			return "(?i)" + gen(depth-1)
		case 7:
			return "^" + gen(depth-1)
		}
		return "(" + gen(depth-1) + ")"
	}
	runes := []string{"a", "b", "k", "K", "s", "S", "é", "É", "\u212a", "\u017f", "\ufffd", "\xff", "\xc3", "\n", " ", "x", "y", "-", "/"}
	n := 0
	for range 4000 {
		p := gen(4)
		re, err := regexp.Compile(p)
		if err != nil {
			continue
		}
		match, err := compileMatcher(p)
		require.NoError(t, err, p)
		for range 12 {
			var b strings.Builder
			for range r.IntN(10) {
				b.WriteString(runes[r.IntN(len(runes))])
			}
			in := b.String()
			if loc := re.FindStringIndex(in); loc != nil && r.IntN(2) == 0 {
				// Around a match, so that matching strings are frequent.
				in = runes[r.IntN(len(runes))] + in[loc[0]:loc[1]] + runes[r.IntN(len(runes))]
			}
			if got, want := match(in), re.MatchString(in); got != want {
				parsed, _ := syntax.Parse(p, syntax.Perl)
				t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (filter %s)", p, in, got, want, prefilterOf(parsed))
			}
			n++
		}
	}
	require.Greater(t, n, 20000)
}

// What a plan pays for each constant pattern: the policies' string
// literals, each parsed and analysed once (scripts/instr.sh counts it).
func BenchmarkNewMatcher(b *testing.B) {
	patterns := seedPatterns(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, p := range patterns {
			if _, err := newMatcher(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The same patterns compiled as before (regexp.Compile at plan time).
func BenchmarkRegexpCompile(b *testing.B) {
	patterns := seedPatterns(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, p := range patterns {
			if _, err := regexp.Compile(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// asciiFoldOrbit's short list (k, K, s, S) is exactly the ASCII runes
// whose simple-folding orbit leaves ASCII.
func TestASCIIFoldOrbit(t *testing.T) {
	for r := rune(0); r < 0x100; r++ {
		want := r < utf8.RuneSelf
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				want = false
			}
		}
		assert.Equal(t, want, asciiFoldOrbit(r), "%q", r)
	}
}

// Programs are shared by the goroutines of a server: the first use may come
// from several at once (run with -race).
func TestMatcherConcurrentFirstUse(t *testing.T) {
	m, err := newMatcher(`git\s+push\s+.*(--force|-f)\b`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			in := "git push --force"
			if i%2 == 1 {
				in = "git push -fx"
			}
			ok, err := m.match(in)
			assert.NoError(t, err)
			assert.Equal(t, i%2 == 0, ok, in)
		})
	}
	wg.Wait()
	assert.True(t, m.compiled())
}

// The analysis is bounded: nested optional parts, each analysed again for
// its prefixes, took exponential time (2.3 s at depth 20, about 1.5x a level), and a
// long concatenation of distinct literals quadratic time. Past the budget
// a node requires nothing, which the answers below check; the policies'
// patterns stay well within it, so the budget never weakens their filters.
func TestPrefilterAnalysisBounded(t *testing.T) {
	nest := func(pre, post string, depth int) string {
		p := "x+"
		for range depth {
			p = pre + p + post
		}
		return p
	}
	var parts []string
	for i := range 20000 {
		parts = append(parts, fmt.Sprintf("q%dq", i))
	}
	for _, p := range []string{
		nest("(?:", ")?y", 40),
		nest("(?:a", ")?y", 40),
		nest("(?:a(?:", ")?)?y", 40),
		nest("(?:(?:", ")+)?y", 40),
		strings.Join(parts, "."),
	} {
		match, err := compileMatcher(p)
		require.NoError(t, err)
		re := regexp.MustCompile(p)
		for _, in := range []string{"xy", "ayyy", "xyyyyyyyyyy", "q19998q-q19999q", strings.Join(parts, "-")} {
			assert.Equal(t, re.MatchString(in), match(in), "%.40q on %.40q", p, in)
		}
	}
	for _, p := range seedPatterns(t) {
		re, err := syntax.Parse(p, syntax.Perl)
		require.NoError(t, err)
		a := &analysis{left: maxAnalysisSteps}
		if _, ok := a.anchoredPrefixes(re); !ok {
			a.analyze(re)
		}
		assert.Less(t, maxAnalysisSteps-a.left, maxAnalysisSteps/4, p)
	}
}

// genMatch appends to b a string that re's tree describes: a match of
// re unless an anchor or a word boundary does not hold there.
func genMatch(r *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	pool := []string{"a", "K", "\u212a", "\u017f", "\xff", "\xc3", "é", " ", "\n", "_", "1", "-"}
	emit := func(c rune) {
		if c == unicode.ReplacementChar && r.IntN(2) == 0 {
			b.WriteString([]string{"\xff", "\xc3", "\xed\xa0\x80"}[r.IntN(3)])
			return
		}
		b.WriteRune(c)
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				for n := r.IntN(4); n > 0; n-- {
					c = unicode.SimpleFold(c)
				}
			}
			emit(c)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		i := r.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], re.Rune[i+1]
		c := lo
		if hi > lo {
			switch r.IntN(3) {
			case 0:
				c = hi
			case 1:
				c = lo + rune(r.IntN(int(min(hi-lo, 1000))+1))
			}
		}
		emit(c)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteString(pool[r.IntN(len(pool))])
	case syntax.OpStar, syntax.OpQuest, syntax.OpPlus, syntax.OpRepeat:
		lo, hi := 0, 2
		switch re.Op {
		case syntax.OpQuest:
			hi = 1
		case syntax.OpPlus:
			lo, hi = 1, 3
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 2
			}
		}
		for n := lo + r.IntN(hi-lo+1); n > 0; n-- {
			genMatch(r, re.Sub[0], b)
		}
	case syntax.OpConcat, syntax.OpCapture:
		for _, s := range re.Sub {
			genMatch(r, s, b)
		}
	case syntax.OpAlternate:
		genMatch(r, re.Sub[r.IntN(len(re.Sub))], b)
	}
}

// Random patterns over the pitfalls and the caps (literals past 64 bytes,
// alternations past 32 and 64 literals, classes of surrogates, (?s), (?U),
// {n,}, {0}) against strings generated from each pattern itself (folded
// runes taken anywhere in their orbit, U+FFFD written as invalid bytes),
// so that most inputs match: the prefiltered answer is regexp's.
// TestPrefilterRandomPatterns draws its inputs at random, which rarely
// match a long pattern.
func TestPrefilterGeneratedMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	var words []string
	for i := range 80 {
		words = append(words, fmt.Sprintf("w%c%c", 'a'+i%26, 'a'+i/26))
	}
	atoms := []string{"a", "ab", "k", "s", "K", "S", "é", `\x{212A}`, `\x{17F}`, `\x{FFFD}`, `[\x{D800}-\x{D801}]`, `\x{D800}`, ".", `(?s:.)`, `\b`, `\B`, "^", "$", `\A`, `\z`,
		"[ab]", "[kK]", "[a-d]", "[^a]", `\s`, `\w`, `\pL`, `[\x{FFFD}b]`, "xy", "-", "_", "1", `a[a-z]*`, `x.+`, strings.Repeat("L", 70), strings.Repeat("m", 63) + "é",
		"(?:" + strings.Join(words[:40], "|") + ")", "(?:" + strings.Join(words, "|") + ")", "(?:" + strings.Join(words[:20], "|") + `)\s+z`,
		`[Kk]ey`, `(?i:key)`, `(?i:SSH)`, "(?i)é"}
	var gen func(depth int) string
	gen = func(depth int) string {
		if depth == 0 || r.IntN(3) == 0 {
			return atoms[r.IntN(len(atoms))]
		}
		switch r.IntN(10) {
		case 0, 1, 2:
			return gen(depth-1) + gen(depth-1)
		case 3:
			return "(?:" + gen(depth-1) + "|" + gen(depth-1) + ")"
		case 4:
			return "(?:" + gen(depth-1) + ")" + []string{"?", "*", "+", "{1,2}", "{0,2}", "{2}", "{0,}", "{2,}", "??", "{0}"}[r.IntN(10)]
		case 5:
			return "(?" + []string{"i", "m", "s", "-i", "i-s", "U", "im"}[r.IntN(7)] + ":" + gen(depth-1) + ")"
		case 6:
			return "(?i)" + gen(depth-1)
		case 7:
			return "^" + gen(depth-1)
		case 8:
			return gen(depth-1) + "$"
		}
		return "(" + gen(depth-1) + ")"
	}
	pool := []string{"a", "b", "k", "K", "s", "\u212a", "\u017f", "\ufffd", "\xff", "\xc3", "\n", " ", "x", "_", "é"}
	n, matched := 0, 0
	for range 6000 {
		p := gen(5)
		re, err := regexp.Compile(p)
		if err != nil {
			continue
		}
		m, err := newMatcher(p)
		if err != nil {
			t.Fatal(p, err) // regexp.Compile accepted it
		}
		parsed, _ := syntax.Parse(p, syntax.Perl)
		for range 10 {
			var b strings.Builder
			if r.IntN(2) == 0 {
				b.WriteString(pool[r.IntN(len(pool))])
			}
			genMatch(r, parsed, &b)
			if r.IntN(2) == 0 {
				b.WriteString(pool[r.IntN(len(pool))])
			}
			in := b.String()
			got, _ := m.match(in)
			want := re.MatchString(in)
			if want {
				matched++
			}
			if got != want {
				t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (filter %s)", p, in, got, want, prefilterOf(parsed))
			}
			n++
		}
	}
	require.Greater(t, n, 50000)
	require.Greater(t, matched, n/2)
}

// The order of a concatenation's literals (filterSeq): patterns of parts
// whose literals overlap each other ("ab", "ba", "aba") joined by gaps
// that match nothing, anything, or anything but a few bytes, on every
// string of up to 7 bytes over those bytes and some of 9 to 14: the
// prefiltered answer is regexp's, every match regexp finds passes the
// filter on its own, and strings holding every literal in the wrong order
// are refused (the order is what is tested, not a filter that lets them
// all through).
func TestPrefilterOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 7))
	parts := []string{"a", "b", "ab", "ba", "aba", "bab", `\bab`, `ab\b`, `\bb`, "(?:a|ab)", "(?:ab|b)", "(?:ba|bab)", "(?i:AB)", "(?:a|b)+", "(?:ab)+", "(?:a.b)", "c?ab"}
	gaps := []string{"", "", ".*", `\s*`, "[^|]*", `\s+`, "x?", `\b`, `\|?`, ".+"}
	alphabet := "ab |xA"
	var inputs []string
	var all func(prefix string, n int)
	all = func(prefix string, n int) {
		inputs = append(inputs, prefix)
		if n == 0 {
			return
		}
		for i := range len(alphabet) {
			all(prefix+alphabet[i:i+1], n-1)
		}
	}
	all("", 5)
	for range 3000 {
		var b strings.Builder
		for range 9 + r.IntN(6) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	checked, refusedInOrder := 0, 0
	for range 150 {
		var p strings.Builder
		for k := range 2 + r.IntN(3) {
			if k > 0 {
				p.WriteString(gaps[r.IntN(len(gaps))])
			}
			p.WriteString(parts[r.IntN(len(parts))])
		}
		pattern := p.String()
		re, err := regexp.Compile(pattern)
		require.NoError(t, err, pattern)
		m, err := newMatcher(pattern)
		require.NoError(t, err, pattern)
		parsed, _ := syntax.Parse(pattern, syntax.Perl)
		f := prefilterOf(parsed)
		for _, in := range inputs {
			got, err := m.match(in)
			require.NoError(t, err)
			want := re.MatchString(in)
			if got != want {
				t.Fatalf("pattern %q on %q: prefiltered %v, regexp %v (filter %s)", pattern, in, got, want, f)
			}
			if loc := re.FindStringIndex(in); loc != nil && !f.test(in[loc[0]:loc[1]]) {
				t.Fatalf("pattern %q: its match %q of %q fails the filter %s", pattern, in[loc[0]:loc[1]], in, f)
			}
			checked++
			if !want && !f.test(in) && unorderedFilter(f).test(in) {
				refusedInOrder++
			}
		}
	}
	require.Greater(t, checked, 1_500_000)
	// Strings the same filter without order would let through.
	require.Greater(t, refusedInOrder, 10_000)
}

// unorderedFilter is f with every sequence made an and.
func unorderedFilter(f *filter) *filter {
	g := *f
	if g.op == filterSeq {
		g.op = filterAnd
	}
	g.sub = make([]*filter, len(f.sub))
	for i, s := range f.sub {
		g.sub[i] = unorderedFilter(s)
	}
	return &g
}

// A matcher's prefilter is derived at its first match, once, whichever of
// concurrent matches comes first, and is the one the pattern's analysis
// gives; every answer is regexp's (run with -race).
func TestMatcherPrefilterAtFirstMatch(t *testing.T) {
	patterns := []string{`git\s+push\s+.*(--force|-f)\b`, `[a-z]+`, `(?i)(secret|token|password)`,
		`^(https?://|git@)`, `(^|/)\.\.(/|$)`, `--replicas[= ]0+( |$)`}
	inputs := []string{"", "git push --force origin", "git push origin", "TOKEN=1", "https://x", "a/../b",
		"kubectl scale --replicas=0 x", "ls -la", "ſecret"}
	for _, p := range patterns {
		m, err := newMatcher(p)
		require.NoError(t, err, p)
		assert.NotNil(t, m.parsed, "%s: parsed at plan time", p)
		assert.Nil(t, m.filter, "%s: not analysed at plan time", p)
		re := regexp.MustCompile(p)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for _, in := range inputs {
					got, err := m.match(in)
					assert.NoError(t, err)
					assert.Equal(t, re.MatchString(in), got, "%s on %q", p, in)
				}
			})
		}
		wg.Wait()
		assert.Nil(t, m.parsed, "%s: the tree is dropped once analysed", p)
		parsed, err := syntax.Parse(p, syntax.Perl)
		require.NoError(t, err)
		want := prefilterOf(parsed)
		if want.op == filterTrue {
			want = nil
		}
		assert.Equal(t, want, m.prefilter(), p)
	}
}
