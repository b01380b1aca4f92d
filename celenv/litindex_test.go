package celenv

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexed returns a LiteralIndex built over s, whatever its length.
func indexed(s string) *LiteralIndex {
	x := &LiteralIndex{s: s}
	x.build()
	return x
}

// wantIndex is what LiteralIndex.index must answer: strings.Index over
// s[from:limit], as an offset of s.
func wantIndex(s, lit string, from, limit int) int {
	j := strings.Index(s[from:limit], lit)
	if j < 0 {
		return -1
	}
	return from + j
}

// randString draws n bytes of alphabet.
func randString(r *rand.Rand, alphabet string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// The index answers strings.Index for literals of two bytes or more, from
// and to any offsets: on strings over small alphabets (many repeats of
// every pair, and pairs sharing a bucket), literals drawn from the string
// and from the alphabet.
func TestLiteralIndexAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 9))
	found := 0
	for _, alphabet := range []string{"ab", "ab |-gitx\xff", "abcdefghijklmnopqrstuvwxyz ./-|&;\x00\xc3\xa9"} {
		for range 60 {
			s := randString(r, alphabet, 2+r.IntN(3000))
			x := indexed(s)
			for range 200 {
				var lit string
				if r.IntN(2) == 0 {
					p := r.IntN(len(s) - 1)
					lit = s[p : p+min(len(s)-p, 2+r.IntN(6))]
				} else {
					lit = randString(r, alphabet, 2+r.IntN(5))
				}
				from := r.IntN(len(s) + 1)
				limit := from + r.IntN(len(s)-from+1)
				want := wantIndex(s, lit, from, limit)
				require.Equal(t, want, x.index(lit, from, limit), "%q in %q[%d:%d]", lit, s, from, limit)
				require.Equal(t, want, indexIn(x, s, lit, from, limit))
				require.Equal(t, want, indexIn(nil, s, lit, from, limit))
				if want >= 0 {
					found++
				}
			}
		}
	}
	assert.Greater(t, found, 10000, "most searches find their literal")
}

// FuzzLiteralIndex holds the index to strings.Index on any string.
func FuzzLiteralIndex(f *testing.F) {
	f.Add("lorem git push origin main git reset", "git", 3, 30)
	f.Add("aaaaaaaa", "aa", 0, 8)
	f.Add("\xff\xfe\xff\xfe", "\xfe\xff", 1, 4)
	f.Fuzz(func(t *testing.T, s, lit string, from, limit int) {
		if len(s) < 2 || len(lit) < 2 {
			return
		}
		from = abs(from) % (len(s) + 1)
		limit = from + abs(limit)%(len(s)-from+1)
		if got, want := indexed(s).index(lit, from, limit), wantIndex(s, lit, from, limit); got != want {
			t.Fatalf("%q in %q[%d:%d]: index %d, strings.Index %d", lit, s, from, limit, got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // the smallest int
			return 0
		}
		return -n
	}
	return n
}

// indexFor indexes a string of minIndexed bytes or more at its
// indexAfter-th test, and another string afresh, even of the same length.
func TestLiteralIndexFor(t *testing.T) {
	var x LiteralIndex
	short := strings.Repeat("a", minIndexed-1)
	for range 5 {
		assert.Nil(t, x.indexFor(short), "a short string is searched directly")
	}
	long := strings.Repeat("ab", minIndexed)
	for i := 1; i < indexAfter; i++ {
		assert.Nil(t, x.indexFor(long), "test %d", i)
	}
	got := x.indexFor(long)
	require.NotNil(t, got)
	assert.Equal(t, 0, got.index("ab", 0, len(long)))
	other := strings.Repeat("ba", minIndexed)
	assert.Nil(t, x.indexFor(other), "another string starts again")
	for i := 2; i < indexAfter; i++ {
		x.indexFor(other)
	}
	got = x.indexFor(other)
	require.NotNil(t, got)
	assert.Equal(t, 1, got.index("ab", 0, len(other)), "the other string's positions")
	assert.Equal(t, -1, got.index("aa", 0, len(other)))
}

// longInputs are long strings for the prefilters: the adversarial inputs
// repeated and joined past minIndexed, the loadgen stream's long command,
// and random ones over the bytes the patterns name.
func longInputs(r *rand.Rand) []string {
	var out []string
	for i, in := range adversarialInputs {
		out = append(out, strings.Repeat(in+" ", 1+minIndexed/(len(in)+1)), in+" "+adversarialInputs[(i+7)%len(adversarialInputs)]+strings.Repeat(" x", minIndexed))
	}
	for range 100 {
		out = append(out, randString(r, "ab |-;&/.sudormkfgitpuhcl777\xff\xc5\xbfK", minIndexed+r.IntN(2000)))
	}
	return out
}

// Every prefilter answers the same with a literal index of the string as
// without one, and every matcher regexp's answer, on long strings: the seed
// patterns, the benchmark policy's and random concatenations as
// TestPrefilterOrder draws them.
func TestPrefilterIndexedAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 10))
	patterns := fuzzPatterns(t)
	parts := []string{"a", "b", "ab", "ba", "sudo", "git", `\bab`, `ab\b`, `\bb`, "(?:a|ab)", "(?:ab|b)", "(?i:AB)", "(?:a|b)+", "r.m", "c?ab", "777"}
	gaps := []string{"", ".*", `\s*`, "[^|]*", `\s+`, "x?", `\b`, `\|?`, ".+"}
	for range 80 {
		var p strings.Builder
		for k := range 2 + r.IntN(3) {
			if k > 0 {
				p.WriteString(gaps[r.IntN(len(gaps))])
			}
			p.WriteString(parts[r.IntN(len(parts))])
		}
		patterns = append(patterns, p.String())
	}
	inputs := longInputs(r)
	xs := make([]*LiteralIndex, len(inputs))
	for i, in := range inputs {
		xs[i] = indexed(in)
	}
	passed := 0
	for _, pattern := range patterns {
		re := regexp.MustCompile(pattern)
		m, err := newMatcher(pattern)
		require.NoError(t, err, pattern)
		parsed, err := syntax.Parse(pattern, syntax.Perl)
		require.NoError(t, err)
		f := prefilterOf(parsed)
		for i, in := range inputs {
			want := f.test(in)
			if got := f.testIn(in, xs[i]); got != want {
				t.Fatalf("pattern %q (filter %s) on %q: indexed %v, searched %v", pattern, f, in, got, want)
			}
			got, err := m.matchIn(in, xs[i])
			require.NoError(t, err)
			if got != re.MatchString(in) {
				t.Fatalf("pattern %q on %q: indexed match %v, regexp %v", pattern, in, got, !got)
			}
			if want {
				passed++
			}
		}
	}
	assert.Greater(t, passed, 8000, "many strings pass their filter")
}
