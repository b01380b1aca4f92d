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

// A set replayed from its compiled-set cache finds the same ArgString and
// VarMatches shapes as the full compile, program by program, over the
// built-in policies, argStringPolicy and varMatchesPolicy; the built-ins
// hold a chain (mcp-arguments).
func TestArgStringReplayed(t *testing.T) {
	srcs, err := policies.Sources()
	require.NoError(t, err)
	srcs = append(srcs, policy.Source{Name: "p.yaml", Data: []byte(argStringPolicy)}, policy.Source{Name: "vm.yaml", Data: []byte(varMatchesPolicy)})
	full, err := compile.Compile(srcs)
	require.NoError(t, err)
	c := &compile.MemorySetCache{}
	_, err = compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	set, err := compile.Compile(srcs, compile.WithSetCache(c))
	require.NoError(t, err)
	require.True(t, set.FromCache())
	type shape struct {
		arg *compile.ArgString
		vm  string // the VarMatches variable and pattern
	}
	of := func(p *compile.Program) shape {
		sh := shape{arg: p.ArgString()}
		if vm := p.VarMatches(); vm != nil {
			sh.vm = vm.Name + " " + fmt.Sprint(vm.Pattern)
		}
		return sh
	}
	shapes := func(s *compile.PolicySet) map[policy.Pos]shape {
		out := map[policy.Pos]shape{}
		for _, p := range s.Policies() {
			for _, v := range p.Variables {
				out[v.Expr.Pos] = of(v.Program)
			}
		}
		for _, r := range s.Rules() {
			if r.Condition != nil {
				out[r.Source.Condition.Pos] = of(r.Condition)
			}
		}
		return out
	}
	want := shapes(full)
	assert.Equal(t, want, shapes(set))
	args, vms := 0, 0
	for _, sh := range want {
		if sh.arg != nil {
			args++
		}
		if sh.vm != "" {
			vms++
		}
	}
	assert.GreaterOrEqual(t, args, 6, "the ArgString shapes of argStringPolicy and of the built-ins")
	assert.GreaterOrEqual(t, vms, 5, "the VarMatches shapes of varMatchesPolicy and of the built-ins")
}

// varMatchesPolicy's rules named yes-* have the VarMatches shape, the
// others do not.
const varMatchesPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: vm
variables:
  - {name: cmd, expression: 'has(args.command) ? string(args.command) : ""'}
  - {name: raw, expression: 'has(args.command) ? args.command : ""'}
  - {name: pat, expression: '"^rm\\s"'}
rules:
  - {id: yes-member, verdict: block, condition: 'cmd.matches("^rm\\s+-rf")'}
  - {id: yes-global, verdict: block, condition: 'matches(cmd, "sudo")'}
  - {id: yes-builtin, verdict: block, condition: 'tool.matches("^mcp__")'}
  - {id: yes-constant, verdict: block, condition: 'cmd.matches(pat)'}
  - {id: yes-dyn, verdict: block, condition: 'raw.matches("x")'}
  - {id: no-computed, verdict: block, condition: 'cmd.matches(tool)'}
  - {id: no-select, verdict: block, condition: 'args.command.matches("x")'}
  - {id: no-negated, verdict: block, condition: '!cmd.matches("x")'}
  - {id: no-and, verdict: block, condition: 'cmd.matches("x") && cmd != ""'}
  - {id: no-call, verdict: block, condition: 'cmd.lowerAscii().matches("x")'}
  - {id: no-contains, verdict: block, condition: 'cmd.contains("x")'}
`

// Each rule of varMatchesPolicy is classified as its id says; the shape's
// pattern answers as the program does.
func TestVarMatchesShape(t *testing.T) {
	set, err := compile.Compile([]policy.Source{{Name: "vm.yaml", Data: []byte(varMatchesPolicy)}})
	require.NoError(t, err)
	want := map[string]string{"yes-member": "cmd", "yes-global": "cmd", "yes-builtin": "tool", "yes-constant": "cmd", "yes-dyn": "raw"}
	for _, r := range set.Rules() {
		vm := r.Condition.VarMatches()
		name, yes := want[r.ID]
		if !yes {
			assert.Nil(t, vm, r.ID)
			continue
		}
		require.NotNil(t, vm, r.ID)
		assert.Equal(t, name, vm.Name, r.ID)
		for _, s := range []string{"", "rm -rf /", "rm  x", "sudo ls", "mcp__a__b", "x", "\xff", "echo rm -rf"} {
			out, _, err := r.Condition.Tracked().Eval(map[string]any{name: s, "tool": s, "args": map[string]any{}})
			require.NoError(t, err, r.ID)
			got, err := vm.Pattern.Match(s, nil)
			require.NoError(t, err)
			assert.Equal(t, out.Value(), got, "%s on %q", r.ID, s)
		}
	}
	v, _ := set.Policies()[0].Variable("cmd")
	assert.Nil(t, v.Program.VarMatches(), "a variable of another shape")
}
