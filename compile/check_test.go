package compile_test

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

func src(name, body string) policy.Source { return policy.Source{Name: name, Data: []byte(body)} }

const header = "apiVersion: celguard.dev/v1\nkind: Policy\n"

func TestCheckNoPolicies(t *testing.T) {
	set, ds, err := compile.Check(nil)
	require.NoError(t, err)
	assert.Nil(t, set)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeNoPolicies, ds[0].Code)
	assert.True(t, ds[0].Pos.IsZero())
}

func TestCheckTooManyRules(t *testing.T) {
	s := src("p.yaml", header+"name: p\nrules:\n  - {id: a, verdict: allow}\n  - {id: b, verdict: allow}\n  - {id: c, verdict: allow}\n")
	_, ds, err := compile.Check([]policy.Source{s}, compile.WithMaxRules(2))
	require.NoError(t, err)
	require.Len(t, ds, 1, "got %v", ds)
	assert.Equal(t, policy.CodeTooManyRules, ds[0].Code)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 7, Col: 5}, ds[0].Pos, "at the first rule past the limit")

	set, ds, err := compile.Check([]policy.Source{s}, compile.WithMaxRules(3))
	require.NoError(t, err)
	assert.False(t, ds.HasErrors(), "got %v", ds)
	assert.NotNil(t, set)
}

func TestDuplicateRuleIDPointsAtBoth(t *testing.T) {
	// Sources are compiled in name order, whatever order they are given in.
	srcs := []policy.Source{
		src("b.yaml", header+"name: b\nrules:\n  - id: x\n    verdict: allow\n"),
		src("a.yaml", header+"name: a\nrules:\n  - id: x\n    verdict: block\n"),
	}
	_, err := compile.Compile(srcs)
	var ds policy.Diagnostics
	require.True(t, errors.As(err, &ds), "got %T %v, want policy.Diagnostics", err, err)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeDuplicateRuleID, ds[0].Code)
	assert.Equal(t, policy.Pos{File: "b.yaml", Line: 5, Col: 9}, ds[0].Pos)
	assert.Equal(t, []policy.Pos{{File: "a.yaml", Line: 5, Col: 9}}, ds[0].Related)
	assert.Contains(t, ds[0].Message, "a.yaml:5:9")
}

func TestDuplicatePolicyAndNamesPointAtTheFirst(t *testing.T) {
	srcs := []policy.Source{
		src("a.yaml", header+"name: p\nrules: []\n"),
		src("b.yaml", header+"name: p\nvariables:\n  - {name: v, expression: '1'}\n  - {name: v, expression: '2'}\nrules: []\n"),
	}
	_, ds, err := compile.Check(srcs)
	require.NoError(t, err)
	require.Len(t, ds, 2, "got %v", ds)
	assert.Equal(t, policy.CodeDuplicatePolicy, ds[0].Code)
	assert.Equal(t, []policy.Pos{{File: "a.yaml", Line: 3, Col: 7}}, ds[0].Related)
	assert.Equal(t, policy.CodeDuplicateName, ds[1].Code)
	assert.Equal(t, policy.Pos{File: "b.yaml", Line: 6, Col: 12}, ds[1].Pos)
	assert.Equal(t, []policy.Pos{{File: "b.yaml", Line: 5, Col: 12}}, ds[1].Related)
}

func TestConflictingDefault(t *testing.T) {
	a := src("a.yaml", header+"name: a\ndefaults: {verdict: block}\nrules: []\n")
	b := src("b.yaml", header+"name: b\ndefaults: {verdict: allow}\nrules: []\n")

	_, ds, err := compile.Check([]policy.Source{a, b})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeConflictingDefault, ds[0].Code)
	assert.Equal(t, policy.Pos{File: "b.yaml", Line: 4, Col: 21}, ds[0].Pos)
	assert.Equal(t, []policy.Pos{{File: "a.yaml", Line: 4, Col: 21}}, ds[0].Related)

	// Against the compiler option: no earlier place to point at.
	_, ds, err = compile.Check([]policy.Source{a}, compile.WithDefaultVerdict(policy.Allow))
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, policy.CodeConflictingDefault, ds[0].Code)
	assert.Empty(t, ds[0].Related)

	set, err := compile.Compile([]policy.Source{a}, compile.WithDefaultVerdict(policy.Block))
	require.NoError(t, err)
	assert.Equal(t, policy.Block, set.DefaultVerdict())
	set, err = compile.Compile([]policy.Source{src("c.yaml", header+"name: c\nrules: []\n")})
	require.NoError(t, err)
	assert.Equal(t, policy.Allow, set.DefaultVerdict(), "allow unless configured")
}

func TestOptionErrors(t *testing.T) {
	s := []policy.Source{src("p.yaml", header+"name: p\nrules: []\n")}
	for name, opt := range map[string]compile.Option{
		"WithEnv(nil)":             compile.WithEnv(nil),
		"WithDefaultVerdict(ask)":  compile.WithDefaultVerdict(policy.Ask),
		"WithDefaultVerdict(none)": compile.WithDefaultVerdict(policy.VerdictUnspecified),
		"WithMaxRules(0)":          compile.WithMaxRules(0),
	} {
		_, ds, err := compile.Check(s, opt)
		assert.Error(t, err, "%s: got no error, want one", name)
		assert.Nil(t, ds)
		var d policy.Diagnostics
		assert.False(t, errors.As(err, &d), "%s: an option error is not a diagnostic", name)
	}
}

func TestCompileExample(t *testing.T) {
	b, err := os.ReadFile("../policy/testdata/example.yaml")
	require.NoError(t, err)
	set, err := compile.Compile([]policy.Source{{Name: "example.yaml", Data: b}})
	require.NoError(t, err)
	require.Len(t, set.Rules(), 3)
	assert.Equal(t, "block-rm-root", set.Rules()[0].ID, "priority 900 runs first")
	assert.Len(t, set.Counters(), 2)
	assert.False(t, set.Warnings().HasErrors())
}

// A comprehension variable shadows the built-in of the same name: a
// before-phase rule iterating with `result` reads no result, and a counter
// key iterating with `counters` reads no counter. Outside the comprehension
// the built-ins are checked as always.
func TestComprehensionVariablesShadowBuiltins(t *testing.T) {
	pol := func(cond, key string) []policy.Source {
		return []policy.Source{{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
counters:
  - name: n
    key: '` + key + `'
    increment_when: 'true'
rules:
  - id: r
    condition: '` + cond + `'
    verdict: block
    reason: x
`)}}
	}
	_, err := compile.Compile(pol(`args.items.exists(result, result == "x") && counters.n > 1`, `[tool].exists(counters, counters == "a") ? "k" : tool`))
	require.NoError(t, err)

	_, err = compile.Compile(pol(`args.items.exists(r, r == "x") && result.is_error`, `tool`))
	var ds policy.Diagnostics
	require.ErrorAs(t, err, &ds)
	assert.Equal(t, policy.CodeResultInBefore, ds[0].Code)

	_, err = compile.Compile(pol(`true`, `string(counters.n)`))
	require.ErrorAs(t, err, &ds)
	assert.Equal(t, policy.CodeCounterInCounter, ds[0].Code)
}

// A variable that fails is declared all the same (dyn when it has no type),
// so its mistake is reported once, not again at each use; and the set still
// has an error, so it is never returned to decide: the rules reading the
// failed variable would type-check against dyn, and must not run.
func TestFailedVariableIsOneErrorAndFailsClosed(t *testing.T) {
	for name, c := range map[string]struct {
		variable string
		code     policy.Code
	}{
		"typo":               {"    expression: 'tool == \"Bash\" && comand == \"rm\"'\n", policy.CodeCELType},
		"syntax":             {"    expression: 'tool == '\n", policy.CodeCELSyntax},
		"undeclared counter": {"    expression: 'counters.nope > 3'\n", policy.CodeUndeclaredCounter},
		"empty expression":   {"    expression: ''\n", policy.CodeInvalidValue},
		"no expression":      {"", policy.CodeMissingField},
	} {
		s := []policy.Source{src("p.yaml", header+"name: p\nvariables:\n  - name: risky\n"+c.variable+
			"  - name: risky_bash\n    expression: 'risky && tool == \"Bash\"'\n"+
			"rules:\n  - id: a\n    condition: 'risky'\n    verdict: allow\n"+
			"  - id: b\n    condition: 'risky_bash || risky'\n    verdict: allow\n")}
		set, err := compile.Compile(s)
		assert.Nil(t, set, "%s: got a set, want none", name)
		var ds policy.Diagnostics
		if !assert.ErrorAs(t, err, &ds, "%s", name) {
			continue
		}
		if assert.Len(t, ds, 1, "%s: got %v, want the variable's error alone", name, ds) {
			assert.Equal(t, c.code, ds[0].Code, "%s", name)
		}
		set, ds, err = compile.Check(s)
		require.NoError(t, err)
		assert.Nil(t, set, "%s: Check returned a set", name)
		assert.True(t, ds.HasErrors(), "%s", name)
	}
}
