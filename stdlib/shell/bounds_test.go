package shell

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// overBounds are command strings whose expansions, left alone, yield more
// (or longer) commands or words than their own length allows.
var overBounds = []string{
	// 34 bytes, 18 commands at most: eval runs 32.
	`x='a;a;a;a;a;a;a;a'; eval $x$x$x$x`,
	// 37 bytes, 19 words at most: echo gets 33.
	`x='a a a a a a a a'; echo $x $x $x $x`,
	// Values doubled up to the variable limit: one word far longer than
	// the string, and thousands of commands.
	`a=aaaaaaaa; b=$a$a$a$a; c=$b$b$b$b; d=$c$c$c$c; echo $d$d$d$d`,
	`a='a;'; b=$a$a$a$a; c=$b$b$b$b; d=$c$c$c$c; eval $d$d$d$d`,
	// Many commands of many words: past the bound on the sum of the words.
	`a='a a a a a a a a a a a a a a a a a'; e="echo $a$a$a$a;"; f=$e$e$e$e; g=$f$f$f$f; eval $g`,
	// Nested scripts.
	`x='a;a;a;a;a;a;a;a'; eval "eval $x$x$x$x"`,
	`x='a;a;a;a;a;a;a;a'; bash -c "$x$x$x$x"`,
	`x='a a a a a a a a'; bash -c "echo $x $x $x $x"`,
	`x='a;a;a;a;a;a;a;a'; echo $(eval $x$x$x$x)`,
	`x='a a a a a a a a'; find . -exec echo $x $x $x $x \;`,
	`x='a;a;a;a;a;a;a;a'; bash <<EOF
$x$x$x$x
EOF`,
	// Wrappers, assignments and redirections built from a variable.
	`x='A=1 B=1 C=1 D=1'; env $x $x $x $x ls`,
	`x='nice nice nice nice nice nice nice nice'; $x $x $x $x ls`,
	`x='a>b;a>b;a>b'; eval $x$x$x$x`,
	// Brace expansion of expanded words, and multibyte text.
	`x='a a a a'; echo {$x,$x}{$x,$x}`,
	`x='é;é;é;é;é;é'; eval $x$x$x$x`,
	`x=ééééééééé; echo $x$x$x$x$x$x`,
	// Expansions the analyser keeps in source form stay within bounds.
	`x='a a a a'; echo ${x//a/b} ${x:-y} "${x[@]}"`,
	`x=(a a a a a a); echo ${x[@]} ${x[@]} ${x[@]}`,
}

// checkBounds fails the test if the Line Parse returned for in exceeds the
// Bounds of in.
func checkBounds(t *testing.T, in string, p *Line) {
	t.Helper()
	if len(in) > MaxInput {
		in = in[:MaxInput]
	}
	b := SizeBounds(utf8.RuneCountInString(in))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%q: "+format, append([]any{in}, args...)...)
	}
	str := func(what, s string, max int) {
		t.Helper()
		if n := utf8.RuneCountInString(s); n > max {
			fail("%s of %d code points, bound %d", what, n, max)
		}
	}
	count := func(what string, n, max int) {
		t.Helper()
		if n > max {
			fail("%d %s, bound %d", n, what, max)
		}
	}
	strs := func(what string, ss []string, max, maxLen int) {
		t.Helper()
		count(what, len(ss), max)
		for _, s := range ss {
			str(what, s, maxLen)
		}
	}
	count("commands", len(p.Commands), b.Commands)
	count("programs", len(p.Programs()), b.Commands)
	str("error", p.Error, b.Message)
	strs("opaque reasons", p.OpaqueReasons, b.Commands, b.Message)
	words, envs, redirs := 0, 0, 0
	for _, c := range p.Commands {
		for _, f := range []struct {
			name string
			ss   []string
		}{{"argv", c.Argv}, {"args", c.Args()}, {"operands", c.Operands()}, {"positionals", c.Positionals()}} {
			strs(f.name, f.ss, b.Words, b.String)
		}
		count("argv_dynamic", len(c.ArgvDynamic), b.Words)
		str("program", c.Program, b.String)
		str("path", c.Path, b.String)
		str("text", c.Text, b.String)
		str("subcommand", c.Subcommand(), b.String)
		strs("upstream", c.Upstream, b.Commands, b.String)
		count("env entries", len(c.Env), b.Words)
		for k, v := range c.Env {
			str("env name", k, b.String)
			str("env value", v, b.String)
		}
		count("redirects", len(c.Redirects), b.Redirects)
		for _, r := range c.Redirects {
			for _, s := range []string{r.Op, r.FD, r.Target, r.Body} {
				str("redirect field", s, b.String)
			}
		}
		count("wrappers", len(c.Wrappers), b.Words)
		for _, w := range c.Wrappers {
			str("wrapper program", w.Program, b.String)
			strs("wrapper argv", w.Argv, b.Words, b.String)
		}
		words += len(c.Argv)
		envs += len(c.Env)
		redirs += len(c.Redirects)
	}
	count("words in all", words, b.WordsTotal)
	count("env entries in all", envs, b.WordsTotal)
	count("redirects in all", redirs, b.RedirectsTotal)
}

func TestParseKeepsBounds(t *testing.T) {
	for _, in := range overBounds {
		p := Parse(in)
		checkBounds(t, in, p)
		for _, c := range p.Commands {
			checkCommand(t, c)
		}
	}
	// The two reported strings: past their bounds, cut and opaque.
	for _, tt := range []struct {
		in      string
		cmds    int
		argvLen int // of the last command
	}{
		{`x='a;a;a;a;a;a;a;a'; eval $x$x$x$x`, 18, 1},
		{`x='a a a a a a a a'; echo $x $x $x $x`, 1, 19},
	} {
		p := Parse(tt.in)
		if !p.Opaque || !slices.Contains(p.OpaqueReasons, ReasonOverBounds) {
			t.Errorf("%q: opaque %v %q, want the reason %q", tt.in, p.Opaque, p.OpaqueReasons, ReasonOverBounds)
		}
		if len(p.Commands) != tt.cmds || len(p.Commands[len(p.Commands)-1].Argv) != tt.argvLen {
			t.Errorf("%q: %d commands, the last with argv %q; want %d and %d words", tt.in, len(p.Commands),
				p.Commands[len(p.Commands)-1].Argv, tt.cmds, tt.argvLen)
		}
	}
	// A word longer than the string is shortened and no longer a literal.
	in := `a=aaaaaaaa; b=$a$a$a$a; c=$b$b$b$b; rm -rf $c$c`
	p := Parse(in)
	c := p.Commands[len(p.Commands)-1]
	if !p.Opaque || c.Program != "rm" || len(c.Argv) != 3 || len(c.Argv[2]) != len(in) || !c.ArgvDynamic[2] {
		t.Errorf("%q: opaque %v, argv %q dynamic %v", in, p.Opaque, c.Argv, c.ArgvDynamic)
	}
	// Within the bounds nothing changes.
	for _, in := range []string{`x='a;a'; eval $x`, `x='a a'; echo $x $x`, strings.Repeat("a;", 500), "echo {a,b}{c,d}"} {
		if p := Parse(in); p.Opaque {
			t.Errorf("%q: opaque %q", in, p.OpaqueReasons)
		}
	}
}

func TestSizeBounds(t *testing.T) {
	b := SizeBounds(1000)
	want := Bounds{Commands: 501, Words: 501, Redirects: 501 + MaxInheritedRedirects, String: 1000,
		Message: 1000 + MessageExtra, WordsTotal: 501 * (MaxDepth + 1),
		RedirectsTotal: 501*(MaxDepth+1) + 501*MaxInheritedRedirects}
	if b != want {
		t.Errorf("SizeBounds(1000) = %+v, want %+v", b, want)
	}
	if b := SizeBounds(MaxInput + 5); b.Commands != MaxCommands || b.String != MaxInput {
		t.Errorf("SizeBounds past MaxInput = %+v", b)
	}
	if len(ReasonOverBounds) > MessageExtra {
		t.Errorf("ReasonOverBounds is longer than MessageExtra")
	}
}

func TestClampString(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"}, {"abcd", 3, "abc"}, {"ééé", 3, "ééé"}, {"éééé", 2, "éé"}, {"a\xffb", 2, "a\xff"}, {"ab", 0, ""},
	} {
		got, cut := clampString(tt.in, tt.max)
		if got != tt.want || cut != (got != tt.in) {
			t.Errorf("clampString(%q, %d) = %q, %v", tt.in, tt.max, got, cut)
		}
	}
}
