package eval

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/celenv"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TestEveryVariableIsSized checks, for every built-in variable of celenv's
// table, that the input size counts it: the programs compiled without cost
// accounting are proven within the limit only for inputs up to a size, and
// that proof is sound only if every variable CEL can read is measured, at
// least as large as the value ResolveName hands CEL. A variable added to the
// table without a size in sizeOfVariable fails here; one marked Unsized must
// be a number or a bool.
func TestEveryVariableIsSized(t *testing.T) {
	set, err := compile.Compile([]policy.Source{
		{Name: "classes.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: ToolClasses
name: classes
classes:
  - name: a_class_with_a_long_name
    tools: [Bash]
    command_args: [command]
    path_args: [paths]
`)},
		{Name: "p.yaml", Data: []byte(`apiVersion: celguard.dev/v1
kind: Policy
name: p
counters:
  - name: a_counter_with_a_rather_long_name
    increment_when: 'true'
rules:
  - id: r
    verdict: allow
`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(set)
	if err != nil {
		t.Fatal(err)
	}
	long := func(c string) string { return strings.Repeat(c, 300) }
	s := eng.NewSession("s", map[string]any{"user": long("u"), "tags": []any{long("t")}})
	call := Call{Tool: "Bash", Cwd: "/srv/app/" + long("c"), ID: long("i"),
		Agent: Agent{Name: long("a"), IDs: map[string]string{"agent_id": long("g")}}, Args: map[string]any{
			"command": "echo " + long("x"),
			"paths":   []any{"/a/" + long("p"), "/b"},
			"nested":  map[string]any{"deep": []any{map[string]any{"k": long("n")}}},
		}}
	res := &Result{Content: long("r"), Fields: map[string]any{"stderr": []any{long("e")}}}
	ev := newEvaluation(context.Background(), s, set, policy.PhaseAfter, call, res)
	defer ev.release()
	ev.cur = set.Policies()[0]
	// The model's input and output are never there together; the test
	// gives both to measure them.
	ev.io = &modelIO{messages: []Message{{Role: "user", Content: long("m"), Name: "n"}},
		output:   &ModelOutput{Text: "t", Content: map[string]any{"k": []any{long("o")}}},
		tool:     &ToolDefinition{Tool: "mcp__s__t", Name: "t", Description: long("d"), InputSchema: map[string]any{"properties": map[string]any{"k": long("s")}}},
		resource: &Resource{Server: "s", Kind: KindPrompt, Name: long("q"), Arguments: map[string]string{"k": long("v")}}}

	for _, v := range celenv.Variables() {
		val, ok := ev.ResolveName(v.Name)
		if !ok {
			t.Errorf("%s: ResolveName does not know it", v.Name)
			continue
		}
		want := valueSize(reflect.ValueOf(val))
		switch v.Size {
		case celenv.Counted:
			if want == 0 {
				t.Errorf("%s: the test's call gives it no size; make it larger so the check means something", v.Name)
			}
			if got := ev.sizeOfVariable(v.Name, 0); got < want || got == ^uint64(0) {
				t.Errorf("%s: sizeOfVariable says %d, its value has size %d", v.Name, got, want)
			}
		case celenv.Unsized:
			if want != 0 {
				t.Errorf("%s is marked Unsized but its value has size %d", v.Name, want)
			}
		default:
			t.Errorf("%s: celenv's table does not say whether it is sized", v.Name)
		}
	}
	if size := ev.inputSize(); size < 300 || size == ^uint64(0) {
		t.Errorf("inputSize = %d, want the largest input (over 300)", size)
	}
}

// valueSize is the size of a value as compile's cost analysis sees it: the
// largest length of any string, list or map in it.
func valueSize(v reflect.Value) uint64 {
	if !v.IsValid() {
		return 0
	}
	if r, ok := v.Interface().(ref.Val); ok && v.Kind() != reflect.String {
		v = reflect.ValueOf(r.Value())
	}
	switch v.Kind() {
	case reflect.String:
		return uint64(v.Len())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return valueSize(v.Elem())
	case reflect.Slice, reflect.Array:
		m := uint64(v.Len())
		for i := range v.Len() {
			m = max(m, valueSize(v.Index(i)))
		}
		return m
	case reflect.Map:
		m := uint64(v.Len())
		for it := v.MapRange(); it.Next(); {
			m = max(m, valueSize(it.Key()), valueSize(it.Value()))
		}
		return m
	}
	return 0
}
