package stdlib

import (
	"fmt"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/celguard/celguard/stdlib/shell"
)

const benchShort = "cd /srv/app && git -c core.pager=cat push origin main --force"

func benchLong() string {
	var b strings.Builder
	b.WriteString("set -e; ")
	for i := 0; b.Len() < 2400; i++ {
		fmt.Fprintf(&b, "if [ -f src/file%d.go ]; then gofmt -l src/file%d.go | tee -a /tmp/out.log; fi && ", i, i)
	}
	b.WriteString("sudo -u root bash -c 'rm -rf build/ && echo $(date) > /tmp/done'")
	return b.String()
}

// BenchmarkShellParse is the cost of one uncached parse (one per tool call).
func BenchmarkShellParse(b *testing.B) {
	long := benchLong()
	for _, bc := range []struct{ name, cmd string }{{"short", benchShort}, {"long", long}} {
		b.Run(fmt.Sprintf("%s_%dB", bc.name, len(bc.cmd)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.cmd)))
			for b.Loop() {
				shell.Parse(bc.cmd)
			}
		})
	}
}

// BenchmarkShellParseCEL is a fresh CallScope per call: the parse, its
// conversion to CEL values and one rule.
func BenchmarkShellParseCEL(b *testing.B) {
	l := testLib(b)
	env := testEnv(b, l)
	prg := compile(b, env, ruleRmRoot)
	for _, bc := range []struct{ name, cmd string }{{"short", benchShort}, {"long", benchLong()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s := l.NewCallScope()
				act, _ := s.Activation(map[string]any{"cmd": bc.cmd})
				if _, _, err := prg.Eval(act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkShellMemoised is ten rules over one command in one scope: the
// first parses, the other nine hit the memo. Compare with ten times
// BenchmarkShellParseCEL.
func BenchmarkShellMemoised(b *testing.B) {
	l := testLib(b)
	env := testEnv(b, l)
	rules := []string{ruleRmRoot, ruleGitPush, ruleForcePush, ruleCurlPipeSh, ruleOnlyGitLog,
		ruleEnvFile, ruleUnderSudo, ruleFailClosed, ruleProgramsHave, ruleRmRoot}
	prgs := make([]cel.Program, len(rules))
	for i, r := range rules {
		prgs[i] = compile(b, env, r)
	}
	for _, bc := range []struct{ name, cmd string }{{"short", benchShort}, {"long", benchLong()}} {
		b.Run(bc.name+"_10rules", func(b *testing.B) {
			b.ReportAllocs()
			s := l.NewCallScope()
			for b.Loop() {
				s.Reset()
				act, _ := s.Activation(map[string]any{"cmd": bc.cmd})
				for _, prg := range prgs {
					if _, _, err := prg.Eval(act); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(bc.name+"_memo_hit", func(b *testing.B) {
			b.ReportAllocs()
			s := l.NewCallScope()
			act, _ := s.Activation(map[string]any{"cmd": bc.cmd})
			prg := prgs[len(prgs)-2] // ruleProgramsHave: little work beyond the lookup
			for b.Loop() {
				if _, _, err := prg.Eval(act); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSecrets(b *testing.B) {
	text := strings.Repeat("some ordinary tool output line with words and numbers 12345\n", 200) +
		"key=AKIAIOSFODNN7EXAMPLE " + testGitHubToken + "\n"
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		FindSecrets(text)
	}
}
