package shell

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fastCorpus are commands for the fast path and near misses of it.
var fastCorpus = []string{
	"ls", "git status", "cd /srv/app && git -c core.pager=cat push origin main --force",
	"a; b; c", "a;b", "a ;", "a; ", "a;", ";", "a;;", "a ;; b", "a;&b", "a && b || c | d ; e",
	"a | b | c", "a|b|c", "a |& b", "a || | b", "a &", "a & b", "a &&& b", "a && ", "&& a", "| a",
	"a |", "a ||", "A=1 git push", "git A=1", "env A=1 git push", "time git push", "declare x", "export A",
	"let x", "if", "then", "done", "in", "function", "coproc x", "select", "x=1", "=x", "a=b=c d",
	"sudo -u root rm -rf /tmp/x", "timeout 5 nice -n 1 git push", "bash -c ls", "sh -c ls | wc -l",
	"eval ls", "find . -exec rm x +", "xargs -n 1 rm", "command -v git", "busybox rm -rf /",
	"git push --force=1", "a^b c%d e@f g:h i,j k+l", "~/bin/x ~", "rm -rf ~/", "a\tb\tc", "  a  ",
	"a && b; c || d", "a | b && c | d; e | f", "git log -p | less && echo done;", "a;b;c;",
	"bash -s", "sudo bash", "exec git push", "nohup x", "a -- -b", "-x", "--", "- a",
	"env -S ls", "env -i", "chroot /mnt ls", "sudo -i", "sudo -l", "1 2 3",
	strings.Repeat("git add x && ", 200) + "git commit -m msg",
	strings.Repeat("a | ", 300) + "b",
}

// TestFastPathMatchesParser: wherever the fast path applies, its result
// is the parser's, field for field.
func TestFastPathMatchesParser(t *testing.T) {
	inputs := append([]string(nil), fastCorpus...)
	for _, tc := range shellCases {
		inputs = append(inputs, tc.in)
	}
	inputs = append(inputs, quotingExtra...)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		inputs = append(inputs, randomPlainCommand(rng))
	}
	used := 0
	for _, in := range inputs {
		if fastUsed(in) {
			used++
		}
		checkFastPath(t, in)
	}
	if used < 1000 {
		t.Errorf("the fast path took only %d inputs", used)
	}
}

func fastUsed(in string) bool {
	w := &shellWalker{res: &Line{OK: true}, maxCommands: MaxCommands}
	return w.fast(in)
}

func checkFastPath(t *testing.T, in string) {
	t.Helper()
	got := parseShellWith(nil, in, true)
	want := parseShellWith(nil, in, false)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fast path differs from the parser on %q:\n fast   %s\n parser %s", in, shellViewText(got), shellViewText(want))
	}
}

func shellViewText(p *Line) string {
	var b strings.Builder
	b.WriteString(shellView(p))
	for _, c := range p.Commands {
		b.WriteString(" text=" + c.Text + "\n")
	}
	return b.String()
}

var randomTokens = []string{
	"git", "push", "rm", "-rf", "/", "sudo", "-u", "root", "env", "A=1", "bash", "sh", "-c", "ls", "eval",
	"time", "if", "x=1", "timeout", "5", "xargs", "find", "-exec", "+", "~/x", "a,b", "--", "-", "nice",
	"-n", "exec", "command", "-v", "builtin", "then", "do", "%", "^", "@", ":", "declare", "done", "1",
	"&&", "||", "|", ";", "&", "|&", ";;", " ", "\t", "", "&&&", "a", "b", "c",
}

func randomPlainCommand(rng *rand.Rand) string {
	var b strings.Builder
	n := 1 + rng.IntN(10)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(" \t"[rng.IntN(2)])
		}
		b.WriteString(randomTokens[rng.IntN(len(randomTokens))])
	}
	return b.String()
}

// FuzzFastPath: on any input, the fast path agrees with the parser.
func FuzzFastPath(f *testing.F) {
	for _, in := range fastCorpus {
		f.Add(in)
	}
	for _, tc := range shellCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<12 {
			return
		}
		checkFastPath(t, in)
	})
}
