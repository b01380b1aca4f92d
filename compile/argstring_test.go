package compile_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"cel.dev/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// argStringPolicy declares the variables TestArgStringShape classifies:
// the ones named yes-* have the ArgString shape, the others do not.
const argStringPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: p
variables:
  - {name: yes_cmd, expression: 'has(args.command) ? string(args.command) : ""'}
  - {name: yes_default, expression: 'has(args.path) ? string(args.path) : "none"'}
  - {name: yes_chain, expression: 'has(args.channel_id) ? string(args.channel_id) : has(args.channel) ? string(args.channel) : ""'}
  - {name: no_other_field, expression: 'has(args.a) ? string(args.b) : ""'}
  - {name: no_no_conversion, expression: 'has(args.a) ? args.a : ""'}
  - {name: no_int_default, expression: 'has(args.a) ? int(args.a) : 0'}
  - {name: no_computed_default, expression: 'has(args.a) ? string(args.a) : tool'}
  - {name: no_negated, expression: '!has(args.a) ? string(args.a) : ""'}
  - {name: no_nested_field, expression: 'has(args.a.b) ? string(args.a.b) : ""'}
  - {name: no_result, expression: 'has(result.a) ? string(result.a) : ""'}
  - {name: no_member, expression: 'has(args.a) ? args.a.lowerAscii() : ""'}
  - {name: no_index, expression: '"a" in args ? string(args["a"]) : ""'}
  - {name: no_concat, expression: '(has(args.a) ? string(args.a) : "") + "x"'}
  - {name: no_plain, expression: 'string(args.a)'}
rules:
  - {id: r, verdict: block, phase: after, condition: 'yes_cmd + yes_default + yes_chain + no_other_field + string(no_no_conversion) + string(no_int_default) + no_computed_default + no_negated + no_nested_field + no_result + no_member + no_index + no_concat + no_plain == "x"'}
`

// Each variable of argStringPolicy is classified as its name says, with
// its fields and literal.
func TestArgStringShape(t *testing.T) {
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(argStringPolicy)}})
	require.NoError(t, err)
	p := set.Policies()[0]
	want := map[string]*compile.ArgString{
		"yes_cmd":     {Fields: []string{"command"}, Otherwise: ""},
		"yes_default": {Fields: []string{"path"}, Otherwise: "none"},
		"yes_chain":   {Fields: []string{"channel_id", "channel"}, Otherwise: ""},
	}
	for _, name := range []string{"yes_cmd", "yes_default", "yes_chain", "no_other_field", "no_no_conversion",
		"no_int_default", "no_computed_default", "no_negated", "no_nested_field", "no_result", "no_member",
		"no_index", "no_concat", "no_plain"} {
		v, ok := p.Variable(name)
		require.True(t, ok, name)
		assert.Equal(t, want[name], v.Program.ArgString(), name)
	}
	r, ok := set.Rule("r")
	require.True(t, ok)
	assert.Nil(t, r.Condition.ArgString(), "a rule's condition of another shape")
}

// argValues are the values an argument takes in TestArgStringAgrees: every
// kind a decoded call holds, and strings CEL must keep byte for byte.
var argValues = []any{
	"", "ls -la", "rm -rf /", "\xff\xfe invalid UTF-8", "é ünïcode", "nul\x00byte",
	int64(7), 3, uint64(9), 2.5, true, nil, []byte("bytes"), []any{"a"}, map[string]any{"k": "v"},
	[]string{"x"}, map[string]string{"k": "v"},
}

// An ArgString's value, when it answers, is the program's for the same
// arguments, over every combination of present, absent and each kind of
// value for the fields it reads; when it does not answer, the program
// decides. The arguments are drawn at random from argValues.
func TestArgStringAgrees(t *testing.T) {
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(argStringPolicy)}})
	require.NoError(t, err)
	p := set.Policies()[0]
	r := rand.New(rand.NewPCG(26, 8))
	answered := 0
	for _, name := range []string{"yes_cmd", "yes_default", "yes_chain"} {
		v, _ := p.Variable(name)
		a := v.Program.ArgString()
		require.NotNil(t, a, name)
		for i := range 2000 {
			args := map[string]any{}
			for _, f := range []string{"command", "path", "channel_id", "channel", "other"} {
				if k := r.IntN(len(argValues) + 1); k < len(argValues) {
					args[f] = argValues[k]
				}
			}
			got, ok := a.Value(args)
			want, _, err := v.Program.Tracked().Eval(map[string]any{"args": args, "tool": "Bash", "result": map[string]any{}})
			if !ok {
				continue
			}
			answered++
			require.NoError(t, err, "%s %d: %v", name, i, args)
			assert.Equal(t, types.True, want.Equal(got), "%s %d: %v: program %v, ArgString %q", name, i, args, want, got)
			assert.Equal(t, want.Value(), got.Value(), "%s %d: %v", name, i, fmt.Sprint(args))
		}
	}
	assert.Greater(t, answered, 1500, "absent and string fields are answered (7 of 18 draws each)")
}

// FuzzArgString holds ArgString's value to the program's for any string,
// present or not, in either field of a chain.
func FuzzArgString(f *testing.F) {
	set, err := compile.Compile([]policy.Source{{Name: "p.yaml", Data: []byte(argStringPolicy)}})
	require.NoError(f, err)
	v, _ := set.Policies()[0].Variable("yes_chain")
	a := v.Program.ArgString()
	require.NotNil(f, a)
	f.Add("C123", true, "general", true)
	f.Add("", false, "\xff", true)
	f.Fuzz(func(t *testing.T, id string, hasID bool, ch string, hasCh bool) {
		args := map[string]any{}
		if hasID {
			args["channel_id"] = id
		}
		if hasCh {
			args["channel"] = ch
		}
		got, ok := a.Value(args)
		if !ok {
			t.Fatalf("strings only, and not answered: %v", args)
		}
		want, _, err := v.Program.Tracked().Eval(map[string]any{"args": args})
		if err != nil {
			t.Fatal(err)
		}
		if want.Value() != got.Value() {
			t.Fatalf("%v: program %q, ArgString %q", args, want.Value(), got.Value())
		}
	})
}

// A set replayed from its compiled-set cache finds the same ArgString
// shapes as the full compile, program by program, over the built-in
// policies and argStringPolicy; the built-ins hold a chain (mcp-arguments).
func TestArgStringReplayed(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	srcs = append(srcs, policy.Source{Name: "p.yaml", Data: []byte(argStringPolicy)})
	full, err := compile.Compile(srcs)
	require.NoError(t, err)
	c := &compile.MemorySetCache{}
	_, err = compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	set, err := compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	shapes := func(s *compile.PolicySet) map[policy.Pos]*compile.ArgString {
		out := map[policy.Pos]*compile.ArgString{}
		for _, p := range s.Policies() {
			for _, v := range p.Variables {
				out[v.Expr.Pos] = v.Program.ArgString()
			}
		}
		for _, r := range s.Rules() {
			if r.Condition != nil {
				out[r.Source.Condition.Pos] = r.Condition.ArgString()
			}
		}
		return out
	}
	want := shapes(full)
	assert.Equal(t, want, shapes(set))
	n := 0
	for _, a := range want {
		if a != nil {
			n++
		}
	}
	assert.GreaterOrEqual(t, n, 6, "the shapes of argStringPolicy and of the built-ins")
}
