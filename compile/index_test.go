package compile_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TestIndexAgreesWithMatchers builds random rule sets mixing exact names,
// globs, classes (named and globbed) and match-all rules, and checks that
// the tool index returns, for every probe tool, exactly the rules whose
// matcher admits it, in evaluation order.
func TestIndexAgreesWithMatchers(t *testing.T) {
	tools := []string{"Bash", "Read", "Write", "mcp__a__x", "mcp__b__y", "Other", "run_shell_command", "mcp__ab__z", "mcp_", "m", "mcp__a__x*", "x__x"}
	matchers := []string{
		"{tools: [Bash]}", "{tools: [Read, Write]}", "{tools: [\"mcp__*\"]}", "{tools: [\"mcp__a__*\"]}",
		"{classes: [shell]}", "{classes: [mcp]}", "{classes: [files]}", "{tools: [Other], classes: [shell]}", "",
		// Globs by their literal prefix (the index's key), with none, and
		// with braces, classes and escapes right after it.
		"{tools: [\"mcp__a*\"]}", "{tools: [\"*__x\"]}", "{tools: [\"mcp__{a,b}__*\"]}", "{tools: [\"m?p__*\"]}",
		"{tools: [\"mcp__a__x\\\\*\"]}", "{tools: [\"mcp__[ab]b__*\", Bash]}",
	}
	classes := `apiVersion: celguard.dev/v1
kind: ToolClasses
name: classes
classes:
  - {name: shell, tools: [Bash, run_shell_command]}
  - {name: mcp, tools: ["mcp__*"]}
  - {name: files, tools: [Read, Write, "mcp__b__*"]}
`
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var b strings.Builder
		b.WriteString("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n")
		for i := 0; i < 25; i++ {
			m := matchers[r.IntN(len(matchers))]
			if m != "" {
				m = "\n    match: " + m
			}
			fmt.Fprintf(&b, "  - id: r%d\n    priority: %d%s\n    condition: 'true'\n    verdict: warn\n    reason: x\n", i, r.IntN(4), m)
		}
		set, err := compile.Compile([]policy.Source{{Name: "c.yaml", Data: []byte(classes)}, {Name: "p.yaml", Data: []byte(b.String())}})
		require.NoError(t, err)
		// Twice: the second time from the index's memo.
		for _, tool := range slices.Concat(tools, []string{"never_named"}, tools) {
			var want []string
			for _, rule := range set.Rules() {
				if rule.MatchesTool(tool) {
					want = append(want, rule.ID)
				}
			}
			var got []string
			for _, rule := range set.Candidates(policy.PhaseBefore, tool) {
				got = append(got, rule.ID)
			}
			require.Equal(t, want, got, "seed %d, tool %s", seed, tool)
		}
	}
}
