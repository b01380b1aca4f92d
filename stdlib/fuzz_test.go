package stdlib

import (
	"path"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/traits"

	"github.com/celguard/celguard/stdlib/shell"
)

// FuzzShellCEL: the CEL view of any parse mirrors the Go one: as many
// commands, the same programs, and every field of every command readable.
func FuzzShellCEL(f *testing.F) {
	for _, s := range []string{"cd x && sudo git push -f | tee log", "echo $(curl x | sh) > /dev/null",
		"bash -c 'rm -rf /'", "a=1 env b=2 $X --y z <<< w", "echo &&& x", "find . -exec rm {} +"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<12 {
			return
		}
		p := shell.Parse(in)
		parse, commands, programs := parseToVal(p)
		m, ok := parse.(traits.Mapper)
		if !ok {
			t.Fatalf("parse is a %T", parse)
		}
		if got := m.Get(types.String("ok")); got != types.Bool(p.OK) {
			t.Fatalf("ok %v, want %v", got, p.OK)
		}
		if got := m.Get(types.String("commands")); got != commands {
			t.Fatalf("parse.commands is not the commands value")
		}
		if got := programs.Equal(types.NewStringList(adapter, p.Programs())); got != types.True {
			t.Fatalf("programs differ from %q", p.Programs())
		}
		cl := commands.(traits.Lister)
		if n := cl.Size(); n != types.Int(len(p.Commands)) {
			t.Fatalf("%v commands, want %d", n, len(p.Commands))
		}
		for i, c := range p.Commands {
			cv := cl.Get(types.Int(i)).(traits.Mapper)
			for _, k := range commandKeys {
				if v, found := cv.Find(types.String(k)); !found || types.IsError(v) {
					t.Fatalf("command %d: field %s = %v", i, k, v)
				}
			}
			if got := cv.Get(types.String("program")); got != types.String(c.Program) {
				t.Fatalf("command %d: program %v, want %q", i, got, c.Program)
			}
			back, err := commandFromVal(cv)
			if err != nil || back != c {
				t.Fatalf("command %d: commandFromVal = %p, %v; want %p", i, back, err, c)
			}
		}
	})
}

// FuzzPathNormal: the path functions never panic, are idempotent where they
// should be, and within() agrees with itself.
func FuzzPathNormal(f *testing.F) {
	for _, s := range []string{"../x", "~/.ssh", "//x", "./x", ".ENV", ".env. ", ".env::$DATA", `C:\x\..\y`,
		"", "/", "..", "~", "$HOME/x", "a/b/../../..", "\x00", "é/../.é. "} {
		f.Add(s, "/work", false)
	}
	l, err := New(WithHome("/home/me"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p, cwd string, fold bool) {
		if len(p) > 4096 || len(cwd) > 4096 {
			return
		}
		n := l.normal(p, fold)
		if n2 := l.normal(n, fold); n2 != n && utf8.ValidString(p) {
			// Folding non-UTF-8 or special case mappings may change twice;
			// for valid input the normal form is a fixed point.
			if !fold {
				t.Fatalf("normal not idempotent: %q -> %q -> %q", p, n, n2)
			}
		}
		a := l.abs(p, cwd)
		if !strings.HasPrefix(a, "/") {
			t.Fatalf("abs(%q, %q) = %q is not absolute", p, cwd, a)
		}
		if a != cleanPath(a) {
			t.Fatalf("abs(%q, %q) = %q is not clean", p, cwd, a)
		}
		if !l.within(a, "/", fold) {
			t.Fatalf("abs path %q not within /", a)
		}
		if !l.within(p, p, fold) {
			t.Fatalf("%q not within itself", p)
		}
		if e := extOf(p); e != "" && (e[0] != '.' || !strings.HasSuffix(path.Base(p), e)) {
			t.Fatalf("extOf(%q) = %q is not a suffix of the base name", p, e)
		}
		segs := segments(p)
		if slices.ContainsFunc(segs, func(s string) bool { return s == "" || s == "." || strings.Contains(s, "/") }) {
			t.Fatalf("segments(%q) = %q", p, segs)
		}
		clean := strings.TrimPrefix(path.Clean(p), "/")
		if clean == "." {
			clean = ""
		}
		if strings.Join(segs, "/") != clean {
			t.Fatalf("segments(%q) = %q do not join to its clean form %q", p, segs, clean)
		}
		if s := stripWindowsTricks(p); !strings.HasPrefix(p, s) || (s == "") != (p == "") {
			t.Fatalf("stripWindowsTricks(%q) = %q is not a non-empty prefix", p, s)
		}
	})
}

// FuzzSecrets: scanning and redaction never panic and redaction removes what
// was found.
func FuzzSecrets(f *testing.F) {
	f.Add("key=AKIAIOSFODNN7EXAMPLE " + testGitHubToken + " " + testJWT)
	f.Add(testPrivateKey)
	f.Add("Authorization: Bearer abcdefgh")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		fs := FindSecrets(s)
		last := 0
		for _, x := range fs {
			if x.Start < last || x.End <= x.Start || x.End > len(s) {
				t.Fatalf("bad finding %+v", x)
			}
			last = x.End
		}
		r := RedactSecrets(s)
		if len(fs) > 0 && r == s {
			t.Fatalf("redaction changed nothing")
		}
		findingsToVal(s, fs)
	})
}

// FuzzURL: ParseURL never panics.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"https://x.io", "http://evil.com\\@good.com", "[::1", "mailto:a@b", "//x", "x:1"} {
		f.Add(s, "*.x.io")
	}
	f.Fuzz(func(t *testing.T, u, pat string) {
		p := ParseURL(u)
		if p.OK == (p.Error != "") {
			t.Fatalf("ParseURL(%q): ok %v with error %q", u, p.OK, p.Error)
		}
		if HostMatches(p.Host, "*") != (p.Host != "") {
			t.Fatalf("host %q: * must match exactly the non-empty hosts", p.Host)
		}
		if validateDomainPattern(pat) != nil || strings.ContainsAny(pat, "*[]") || !HostMatches(p.Host, pat) {
			return
		}
		// A host that matches a name is not matched by *.name, while
		// its subdomains are.
		if HostMatches(p.Host, "*."+pat) || !HostMatches("x."+p.Host, "*."+pat) {
			t.Fatalf("host %q matches %q: wrong result for *.%s", p.Host, pat, pat)
		}
	})
}
