package stdlib

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"cel.dev/cel-go/common/types"
	"github.com/bmatcuk/doublestar/v4"
)

// globSeeds are patterns of the built-in policies' kinds (sensitive
// names, protected places, device paths) and of every construct doublestar
// has, with names that match them and names that nearly do.
var globSeeds = [][2]string{
	{"**/.ssh/**", "/home/u/.ssh/id_rsa"}, {"**/.ssh/**", ".ssh"}, {"**/.ssh/**", "/x/.sshd/y"},
	{"**/.celguard/**", "/repo/.celguard"}, {"**/.claude/settings.json", ".claude/settings.json"},
	{"**/bin/celguard", "/usr/local/bin/celguard"}, {"*.pem", "server.pem"}, {".env.*", ".env.local"},
	{"id_rsa*", "id_rsa.pub"}, {"/dev/sd?", "/dev/sda"}, {"/dev/**", "/dev"}, {"a/**", "a"},
	{"a/**/", "a"}, {"**/", ""}, {"/**/", "/"}, {"[a-c]x", "bx"}, {"[!a]x", "ax"}, {"[\\]]x", "]x"},
	{"[a-\\]]x", "]x"}, {"{a,b}c", "bc"}, {"x{a,{b,c}}y", "xcy"}, {"{/**,x}", ""}, {"a\\*b", "a*b"},
	{"a\\", "a"}, {"[", "["}, {"a}", "a}"}, {"a,b", "a,b"}, {"é*", "é"}, {"\xff*", "\xfe"},
	{"\uFFFD", "\xff"}, {"a\uFFFDb", "a\xffb"}, {"**.txt", "x/y.txt"}, {"x**/y", "xa/y"}, {"**", "a/b"},
	{"*/*", "a/b"}, {"?", "/"}, {"a/*/b", "a//b"}, {"[/]", "/"}, {"a[/]b", "a/b"},
}

// FuzzGlobPrefilter: glob.match answers as doublestar does, for any
// pattern and name: the cached validation says what doublestar's says, and
// the literal prefilter never refuses a name doublestar matches.
func FuzzGlobPrefilter(f *testing.F) {
	for _, s := range globSeeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		checkGlobAgainstDoublestar(t, pattern, name)
	})
}

func checkGlobAgainstDoublestar(t *testing.T, pattern, name string) {
	t.Helper()
	valid := doublestar.ValidatePattern(pattern)
	g := compiledGlob(pattern)
	if g.valid != valid {
		t.Fatalf("pattern %q: valid %v, doublestar says %v", pattern, g.valid, valid)
	}
	if fresh := analyseGlob(pattern); fresh.valid != g.valid || !slices.Equal(fresh.lits, g.lits) {
		t.Fatalf("pattern %q: cached %+v, analysed %+v", pattern, g, fresh)
	}
	for _, asName := range []bool{false, true} {
		got := globMatch(types.String(name), types.String(pattern), asName)
		if !valid {
			if !types.IsError(got) {
				t.Fatalf("match(%q, %q): %v, want an error", name, pattern, got)
			}
			continue
		}
		n := name
		if asName {
			n = path.Base(name)
		}
		if want := types.Bool(doublestar.MatchUnvalidated(pattern, n)); got != want {
			t.Fatalf("match(%q, %q, name=%v) = %v, doublestar says %v (literals %q)", name, pattern, asName, got, want, g.lits)
		}
	}
}

// TestGlobPrefilterRandom runs the fuzz check over random patterns and
// names from a small alphabet that has every special byte, so that
// matches are frequent.
func TestGlobPrefilterRandom(t *testing.T) {
	for _, s := range globSeeds {
		checkGlobAgainstDoublestar(t, s[0], s[1])
	}
	r := rand.New(rand.NewPCG(26, 6))
	pat := []string{"a", "b", ".", "/", "*", "**", "?", "[a-b]", "[!a]", "{a,b}", "{", "}", ",", "\\", "\\*", "é", "\xff", "[/]", "[\\]]"}
	nam := []string{"a", "b", ".", "/", "*", "?", "é", "\xff", "]", "{", ","}
	pick := func(alpha []string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alpha[r.IntN(len(alpha))])
		}
		return b.String()
	}
	matched := 0
	for range 200_000 {
		p, n := pick(pat, r.IntN(7)), pick(nam, r.IntN(9))
		checkGlobAgainstDoublestar(t, p, n)
		if doublestar.ValidatePattern(p) && doublestar.MatchUnvalidated(p, n) {
			matched++
		}
	}
	if matched < 1000 {
		t.Fatalf("only %d random pairs matched: the test does not exercise matches", matched)
	}
}

// TestGlobLiterals pins what the prefilter requires of a name.
func TestGlobLiterals(t *testing.T) {
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"**/.ssh/**", []string{".ssh"}},
		{"**/.claude/settings.json", []string{".claude", "settings.json"}},
		{"*.pem", []string{".pem"}},
		{"id_rsa*", []string{"id_rsa"}},
		{"/dev/sd?", []string{"dev", "sd"}},
		{"[abc]x[!y]z", []string{"x", "z"}},
		{"[\\]]x", []string{"x"}},
		{"a\\*b", []string{"a", "b"}},
		{"pre{a,b}post", []string{"pre"}},
		{"é.txt", []string{".txt"}},
		{"**", nil},
	} {
		if got := analyseGlob(c.pattern); !got.valid || !slices.Equal(got.lits, c.want) {
			t.Errorf("%q: %+v, want literals %q", c.pattern, got, c.want)
		}
	}
}

// TestGlobCacheKeepsNoCaller: a cached pattern's key and literals are a
// copy, not substrings of the string the call passed (a word of a long
// command would be kept whole for the life of the process).
func TestGlobCacheKeepsNoCaller(t *testing.T) {
	globPatterns.Clear() // room for the pattern, whatever ran before
	globPatternCount.Store(0)
	command := "rm " + strings.Repeat("x", 1<<16) + " keep-caller/*.secret tail"
	i := strings.Index(command, "keep-caller")
	pattern := command[i : i+len("keep-caller/*.secret")]
	g := compiledGlob(pattern)
	if len(g.lits) != 2 {
		t.Fatalf("literals %q, want keep-caller and .secret", g.lits)
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(command)))
	within := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= lo && p < lo+uintptr(len(command))
	}
	for _, l := range g.lits {
		if within(l) {
			t.Fatalf("the cached literal %q is a substring of the caller's string", l)
		}
	}
	globPatterns.Range(func(k, _ any) bool {
		if within(k.(string)) {
			t.Fatalf("the cached key %q is a substring of the caller's string", k)
		}
		return true
	})
}

// TestGlobCacheBounded: patterns past the length bound, or past the count
// bound, are answered without being kept.
func TestGlobCacheBounded(t *testing.T) {
	long := strings.Repeat("a", maxCachedGlobLength+1) + "*"
	compiledGlob(long)
	if _, ok := globPatterns.Load(long); ok {
		t.Fatal("a pattern over the length bound was cached")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range maxCachedGlobs/2 + 10 {
				compiledGlob(fmt.Sprintf("bound-%d/*", i*4+w))
			}
		})
	}
	wg.Wait()
	kept := 0
	globPatterns.Range(func(any, any) bool { kept++; return true })
	if n := globPatternCount.Load(); n != maxCachedGlobs || kept != maxCachedGlobs {
		t.Fatalf("%d patterns counted, %d kept, bound %d", n, kept, maxCachedGlobs)
	}
	// Past the bound a pattern is analysed at each match: its answers are
	// still doublestar's, both ways.
	p := "bound-past-the-bound/*"
	if got := globMatch(types.String("bound-x/y"), types.String(p), false); got != types.False {
		t.Fatalf("an uncached pattern matched a name it does not match: %v", got)
	}
	if got := globMatch(types.String("bound-past-the-bound/y"), types.String(p), false); got != types.True {
		t.Fatalf("an uncached pattern did not match a name it matches: %v", got)
	}
	if _, ok := globPatterns.Load(p); ok {
		t.Fatal("a pattern past the count bound was cached")
	}
}
