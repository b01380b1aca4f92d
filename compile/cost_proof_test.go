package compile_test

import (
	"math"
	"testing"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// TestProvenBounds pins which expressions may skip the runtime cost
// accounting, and up to which input size (see compile.Program).
func TestProvenBounds(t *testing.T) {
	cases := []struct {
		name, cond string
		upTo       uint64
	}{
		{"no comprehension: never accounted", `tool == "Bash" && args.command.contains("x")`, math.MaxUint64},
		{"constant range", `[1, 2, 3].exists(x, x > 2)`, compile.MaxProvenInput},
		{"linear in the input", `args.items.exists(x, x == "a")`, compile.MaxProvenInput},
		{"quadratic in the input", `args.items.exists(x, args.items.exists(y, x == y + "a"))`, 64},
		{"shell commands, linear", `shell.commands(command).exists(c, c.program == "rm")`, compile.MaxProvenInput},
		{"a computed value of unknown size is never assumed small", `canonical(args).split("").exists(x, x == "a")`, 0},
		{"path results are sized", `paths.exists(p, path.abs(p, cwd).startsWith("/etc"))`, 1024},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: r\n    verdict: block\n    condition: '" + tc.cond + "'\n"
			set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(src)}, policies.ToolClasses()})
			require.NoError(t, err)
			r, ok := set.Rule("r")
			require.True(t, ok)
			upTo, bound := r.Condition.FastUpTo()
			assert.Equal(t, tc.upTo, upTo)
			// Linear programs run with Eval, not ContextEval (eval's exec):
			// only a comprehension checks a context, and they have none.
			assert.Equal(t, upTo == math.MaxUint64, r.Condition.Linear())
			if r.Condition.Linear() {
				assert.False(t, hasComprehension(r.Condition.AST()), "a linear program holds no comprehension")
				for _, n := range []uint64{0, 1, compile.MaxProvenInput, math.MaxUint64} {
					assert.True(t, r.Condition.Tracked() == r.Condition.For(n), "a linear program is the same program at every size")
				}
			}
			if upTo > 0 && upTo < math.MaxUint64 {
				assert.LessOrEqual(t, bound, set.Env().CostLimit())
				assert.True(t, r.Condition.Tracked() != r.Condition.For(upTo), "a proven program has a second program without accounting")
				assert.True(t, r.Condition.Tracked() == r.Condition.For(upTo+1), "past its proven size, a program accounts")
			}
			if upTo == 0 {
				assert.True(t, r.Condition.Tracked() == r.Condition.For(0), "an unproven program always accounts")
			}
		})
	}
}

// hasComprehension reports whether a checked expression holds a
// comprehension (a macro such as exists, all, map or filter, or cel.bind).
func hasComprehension(ast *cel.Ast) bool {
	found := false
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			found = true
		}
	}))
	return found
}
