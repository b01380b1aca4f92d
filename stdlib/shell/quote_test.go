package shell

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"celguard", "celguard"},
		{"/usr/local/bin/celguard", "/usr/local/bin/celguard"},
		{"--state-dir=/var/lib/x", "--state-dir=/var/lib/x"},
		{"user@host:a,b+c", "user@host:a,b+c"},
		{"", "''"},
		{"/my dir/celguard", "'/my dir/celguard'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"%s", "'%s'"},
		{"~", "'~'"},
		{"$HOME", "'$HOME'"},
		{"a*", "'a*'"},
		{"#x", "'#x'"},
		{"!x", "'!x'"},
		{"{a,b}", "'{a,b}'"},
		{"a;b", "'a;b'"},
		{"line\nbreak", "'line\nbreak'"},
		{"é", "'é'"},
	} {
		got := Quote(tc.in)
		if got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkQuoted(t, tc.in, got)
	}
}

// TestSafeCharsLeftBare: a word of safe bytes only is its own quoting, and
// any other byte makes Quote quote it.
func TestSafeCharsLeftBare(t *testing.T) {
	for b := 1; b < 256; b++ {
		s := "a" + string(rune(b)) + "z"
		if b >= 0x80 {
			s = "a" + string([]byte{byte(b)}) + "z"
		}
		safe := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.ContainsRune(SafeChars, rune(b))
		if bare := Quote(s) == s; bare != safe {
			t.Errorf("Quote(%q) = %q: bare %v, want %v", s, Quote(s), bare, safe)
		}
		if b < 0x80 {
			checkQuoted(t, s, Quote(s))
		}
	}
}

// FuzzQuote: whatever the word, what Quote makes of it is read back, by
// mvdan.cc/sh as bash and as POSIX sh and by Parse, as one literal word
// equal to it.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "celguard", "it's", "''", `\'`, "a b", "$(rm -rf /)", "`id`", "${x:-y}", "*", "~root",
		"a=b", "--x=y z", "\n", "\r\n", "\\", "é", "{a,b}", "!!", "#", "%", "&&", "'\\''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			t.Skip("no shell word holds a NUL byte")
		}
		if !utf8.ValidString(s) {
			t.Skip("mvdan.cc/sh, and so Parse, reads UTF-8 only")
		}
		checkQuoted(t, s, Quote(s))
	})
}

// checkQuoted fails t unless q, written as the argument of a command, is
// read as one literal word equal to s: by mvdan.cc/sh (bash and POSIX sh)
// and by Parse.
func checkQuoted(t *testing.T, s, q string) {
	t.Helper()
	// mvdan.cc/sh reads \r\n as \n everywhere, between quotes too (bash
	// keeps the \r there).
	s = strings.ReplaceAll(s, "\r\n", "\n")
	src := "echo " + q
	for _, lang := range []syntax.LangVariant{syntax.LangBash, syntax.LangPOSIX} {
		f, err := syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(src), "")
		if err != nil {
			t.Fatalf("%v: Quote(%q) = %q does not parse: %v", lang, s, q, err)
		}
		if len(f.Stmts) != 1 {
			t.Fatalf("%v: Quote(%q) = %q parses as %d statements", lang, s, q, len(f.Stmts))
		}
		call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Assigns) != 0 || len(call.Args) != 2 {
			t.Fatalf("%v: Quote(%q) = %q is not one argument word", lang, s, q)
		}
		word := call.Args[1]
		for _, p := range word.Parts {
			switch p.(type) {
			case *syntax.Lit, *syntax.SglQuoted:
			default:
				t.Fatalf("%v: Quote(%q) = %q has a %T, not a literal", lang, s, q, p)
			}
		}
		got, err := expand.Fields(&expand.Config{}, word)
		if err != nil || len(got) != 1 || got[0] != s {
			t.Fatalf("%v: Quote(%q) = %q reads back as %q (%v)", lang, s, q, got, err)
		}
	}
	l := Parse(src)
	if !l.OK || len(l.Commands) != 1 || len(l.Commands[0].Argv) != 2 || l.Commands[0].ArgvDynamic[1] || l.Commands[0].Argv[1] != s {
		t.Fatalf("Parse(%q) does not read the word %q: %+v", src, s, l)
	}
}

func ExampleQuote() {
	fmt.Println(Quote("/usr/local/bin/celguard"))
	fmt.Println(Quote("/Users/me/My Tools/celguard"))
	fmt.Println(Quote("it's"))
	// Output:
	// /usr/local/bin/celguard
	// '/Users/me/My Tools/celguard'
	// 'it'\''s'
}
