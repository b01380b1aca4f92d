package stdlib

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzShellParse: ParseShell never panics, never hangs, and keeps its
// invariants on any input.
func FuzzShellParse(f *testing.F) {
	for _, tc := range shellCases {
		f.Add(tc.in)
	}
	f.Add(deepSubst(40))
	f.Add(strings.Repeat("(", 500) + "ls" + strings.Repeat(")", 500))
	f.Add(strings.Repeat("bash -c '", 20))
	f.Add("eval eval eval eval eval eval eval eval eval eval ls")
	f.Add("env -S 'env -S \"env -S ls\"'")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<14 {
			return
		}
		start := time.Now()
		p := ParseShell(in)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("ParseShell took %v on %d bytes", d, len(in))
		}
		if p.OK && p.Error != "" || !p.OK && p.Error == "" {
			t.Fatalf("OK %v with error %q", p.OK, p.Error)
		}
		if len(p.Commands) > MaxShellCommands {
			t.Fatalf("%d commands", len(p.Commands))
		}
		for _, c := range p.Commands {
			if len(c.Argv) != len(c.ArgvDynamic) {
				t.Fatalf("argv %q vs dynamic %v", c.Argv, c.ArgvDynamic)
			}
			if c.Depth < 0 || c.Depth > MaxShellDepth {
				t.Fatalf("depth %d", c.Depth)
			}
			if len(c.Argv) > 0 && c.Program != programName(c.Argv[0]) {
				// A dynamic argv[0] names its program only by a literal last
				// component; otherwise the program is argv[0] as written.
				if !c.ArgvDynamic[0] || c.Program != c.Argv[0] && !strings.HasSuffix(c.Argv[0], "/"+c.Program) {
					t.Fatalf("program %q for argv[0] %q", c.Program, c.Argv[0])
				}
			}
			// The helpers must not panic either.
			c.HasFlags("-r|--recursive", "-f")
			c.HasPrefix("git log")
			c.HasSubcommand("git push")
			c.Operands()
		}
		// The CEL conversion must not panic.
		parseToVal(p)
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
		extOf(p)
		segments(p)
		stripWindowsTricks(p)
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
		if validateDomainPattern(pat) == nil {
			HostMatches(p.Host, pat)
		}
	})
}
