package hooks

import (
	"bytes"
	"math/rand/v2"
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
