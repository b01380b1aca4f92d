package hooks

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// outputStrings are the strings appendHookOutput is tried with: empty,
// plain, and every kind encoding/json escapes (with or without HTML
// escaping) or replaces.
var outputStrings = []string{"", "", "x", "celguard: blocked by policy (rule no-rm, code c1)", "PreToolUse", "deny", "allow", "ask", "block", "é中😀", "/slash/",
	// The ones from here on are escaped or replaced.
	`a "quoted" word`, `back\slash`, "tab\there", "new\nline", "nul\x00", "del\x7f", "<script>&amp;</script>", "a > b", "x & y",
	"line\u2028sep", "para\u2029sep", "bad \xff utf-8", "cut \xe2\x80", "\u00a0", "\ufeff"}

// plainStrings is how many of outputStrings are plain.
const plainStrings = 11

// randomHookOutput is a hookOutput with each member set or not at random.
func randomHookOutput(r *rand.Rand) *hookOutput {
	s := func() string {
		if r.IntN(16) == 0 {
			return outputStrings[r.IntN(len(outputStrings))]
		}
		return outputStrings[r.IntN(plainStrings)]
	}
	o := &hookOutput{StopReason: s(), Decision: s(), Reason: s(), SystemMessage: s()}
	switch r.IntN(3) {
	case 1:
		o.Continue = stop()
	case 2:
		t := true
		o.Continue = &t
	}
	if r.IntN(4) != 0 {
		h := &hookSpecificOutput{HookEventName: s(), PermissionDecision: s(), PermissionDecisionReason: s(), AdditionalContext: s()}
		switch r.IntN(8) {
		case 1:
			h.UpdatedInput = map[string]any{"command": s()}
		case 2:
			h.UpdatedInput = map[string]any{}
		case 3:
			h.UpdatedToolOutput = s()
		case 4:
			h.UpdatedMCPToolOutput = []any{s()}
		}
		o.HookSpecificOutput = h
	}
	return o
}

// checkHookOutput holds hookOutputResponse to jsonResponse: the same
// answer, byte for byte.
func checkHookOutput(t *testing.T, o *hookOutput) (direct bool) {
	t.Helper()
	got, want := hookOutputResponse(o), jsonResponse(*o)
	if !bytes.Equal(got.Stdout, want.Stdout) || got.Stderr != want.Stderr || got.Exit != want.Exit {
		t.Fatalf("%+v (%+v):\n got %q\nwant %q", o, o.HookSpecificOutput, got.Stdout, want.Stdout)
	}
	_, direct = appendHookOutput(nil, o)
	return direct
}

// TestAppendHookOutputDifferential: every answer of the hook-specific
// protocol is encoding/json's, byte for byte, over answers whose every
// member is set or not at random, with strings encoding/json escapes.
func TestAppendHookOutputDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 8))
	direct := 0
	const n = 50000
	for range n {
		if checkHookOutput(t, randomHookOutput(r)) {
			direct++
		}
	}
	if direct < n/20 {
		t.Fatalf("only %d of %d answers written directly: the test checks little", direct, n)
	}
	t.Logf("%d of %d answers written directly", direct, n)
}

// TestAppendHookOutputEveryField: each member of hookOutput and
// hookSpecificOutput, set alone, gives encoding/json's answer, so that a
// member added to either and not written by appendHookOutput fails here
// rather than go missing from the answer (randomHookOutput sets only the
// members it knows).
func TestAppendHookOutputEveryField(t *testing.T) {
	for _, hso := range []bool{false, true} {
		top := reflect.TypeFor[hookOutput]()
		for i := range top.NumField() {
			if top.Field(i).Name == "HookSpecificOutput" {
				continue
			}
			o := &hookOutput{}
			if hso {
				o.HookSpecificOutput = &hookSpecificOutput{HookEventName: "PreToolUse"}
			}
			setNonZero(t, reflect.ValueOf(o).Elem().Field(i))
			checkHookOutput(t, o)
		}
		if !hso {
			continue
		}
		inner := reflect.TypeFor[hookSpecificOutput]()
		for i := range inner.NumField() {
			o := &hookOutput{HookSpecificOutput: &hookSpecificOutput{}}
			setNonZero(t, reflect.ValueOf(o.HookSpecificOutput).Elem().Field(i))
			checkHookOutput(t, o)
		}
	}
}

// setNonZero sets v to a value encoding/json writes (a plain string where
// it can).
func setNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		setNonZero(t, v.Elem())
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		setNonZero(t, k)
		setNonZero(t, e)
		v.SetMapIndex(k, e)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		setNonZero(t, v.Index(0))
	case reflect.Struct:
		for i := range v.NumField() {
			setNonZero(t, v.Field(i))
		}
	default:
		t.Fatalf("setNonZero: a member of kind %s", v.Kind())
	}
}

// FuzzAppendHookOutput: any answer's bytes are encoding/json's.
func FuzzAppendHookOutput(f *testing.F) {
	f.Add(uint8(1), "celguard: x", "deny", "", "PreToolUse", "block", "", true)
	f.Add(uint8(2), "a\"b", "<x>", "\u2028", "\xff", "", "ctx", false)
	f.Fuzz(func(t *testing.T, cont uint8, stopReason, decision, reason, event, perm, ctx string, hso bool) {
		o := &hookOutput{StopReason: stopReason, Decision: decision, Reason: reason, SystemMessage: ctx}
		switch cont % 3 {
		case 1:
			o.Continue = stop()
		case 2:
			t := true
			o.Continue = &t
		}
		if hso {
			o.HookSpecificOutput = &hookSpecificOutput{HookEventName: event, PermissionDecision: perm, PermissionDecisionReason: reason, AdditionalContext: ctx}
		}
		checkHookOutput(t, o)
	})
}

// refJSONResponse is jsonResponse as it was: marshal and a newline.
func refJSONResponse(v any) Response {
	b, err := marshal(v)
	if err != nil {
		return Response{Stderr: "celguard: cannot encode the answer: " + err.Error(), Exit: 2}
	}
	return Response{Stdout: append(b, '\n')}
}

// TestJSONResponseDifferential: every host's answer type, and values
// encoding/json cannot encode, give the answer they gave before.
func TestJSONResponseDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 9))
	vals := []any{struct{}{}, nil, "x", map[string]any{"a": "<b>&"}, map[string]any{"bad": func() {}}, []any{1.5, "\u2028", "\xff"},
		copilotOut{PermissionDecision: "deny", PermissionDecisionReason: "a \"b\" <c>"}, opencodeOut{Decision: "block", Reason: "r", Args: map[string]any{"x": []any{}}},
		cursorOut{Permission: "deny", UserMessage: "m", AgentMessage: "m"}, geminiOut{SystemMessage: "s"}}
	for range 2000 {
		vals = append(vals, *randomHookOutput(r))
	}
	for _, v := range vals {
		got, want := jsonResponse(v), refJSONResponse(v)
		if !bytes.Equal(got.Stdout, want.Stdout) || got.Stderr != want.Stderr || got.Exit != want.Exit {
			t.Fatalf("%#v: got %q %q %d, want %q %q %d", v, got.Stdout, got.Stderr, got.Exit, want.Stdout, want.Stderr, want.Exit)
		}
	}
}
