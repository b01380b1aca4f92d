package stdlib

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/stdlib/shell"
)

// oldShellMatcher is shellMatcher as it was before anyListString: the list
// converted by stringList, then matched.
func oldShellMatcher(f func(*shell.Command, string) bool) func(ref.Val, ref.Val) ref.Val {
	return func(cv, arg ref.Val) ref.Val {
		c, err := commandFromVal(cv)
		if err != nil {
			return err
		}
		if s, ok := arg.(types.String); ok {
			return types.Bool(f(c, string(s)))
		}
		list, native := arg.Value().([]string)
		if !native {
			var lerr ref.Val
			if list, lerr = stringList(arg); lerr != nil {
				return lerr
			}
		}
		for _, s := range list {
			if f(c, s) {
				return types.True
			}
		}
		return types.False
	}
}

// TestShellMatcherListInPlace: shell.hasSubcommand and shell.hasPrefix with
// a list answer as they did when the list was copied first, for random
// commands and lists of strings, Go string lists, and lists with an element
// that is not a string (before or after a match).
func TestShellMatcherListInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 7))
	words := []string{"git", "push", "docker", "build", "login", "npm", "publish", "-f", "x"}
	phrase := func() string {
		s := words[r.IntN(len(words))]
		for range r.IntN(3) {
			s += " " + words[r.IntN(len(words))]
		}
		return s
	}
	preds := map[string]func(*shell.Command, string) bool{
		"hasSubcommand": (*shell.Command).HasSubcommand, "hasPrefix": (*shell.Command).HasPrefix,
	}
	kinds := map[string]int{}
	for range 20_000 {
		p := shell.Parse(phrase())
		if len(p.Commands) == 0 {
			continue
		}
		cv := commandToVal(p.Commands[0])
		n := r.IntN(5)
		vals := make([]ref.Val, n)
		strs := make([]string, n)
		for i := range vals {
			strs[i] = phrase()
			vals[i] = types.String(strs[i])
		}
		args := []ref.Val{types.NewRefValList(adapter, vals), types.NewStringList(adapter, strs), types.String(phrase())}
		if n > 0 {
			bad := append([]ref.Val(nil), vals...)
			bad[r.IntN(n)] = types.Int(1)
			args = append(args, types.NewRefValList(adapter, bad))
		}
		for name, f := range preds {
			for _, arg := range args {
				got, want := shellMatcher(f)(cv, arg), oldShellMatcher(f)(cv, arg)
				if got.Equal(want) != types.True && !(types.IsError(got) && types.IsError(want) && fmt.Sprint(got) == fmt.Sprint(want)) {
					t.Fatalf("%s(%q, %v) = %v, was %v", name, p.Commands[0].Text, arg, got, want)
				}
				kinds[fmt.Sprint(got)]++
			}
		}
	}
	if kinds["true"] < 100 || kinds["false"] < 100 || len(kinds) < 3 {
		t.Fatalf("answers %v: the test does not exercise both", kinds)
	}
}
