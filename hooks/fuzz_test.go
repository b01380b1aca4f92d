package hooks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// fuzzDecoder feeds arbitrary input to a host's decoder, seeded with the
// golden cases: it never panics, a decoded event is consistent, and
// encoding any verdict for it never panics either.
func fuzzDecoder(f *testing.F, host string) {
	files, _ := filepath.Glob(filepath.Join("testdata", host, "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_input":{"a":[1,{"b":null}]}}`))
	f.Add([]byte(`{"hook_event_name":"afterMCPExecution","tool_name":"x","result_json":"[1,2"}`))
	h, err := New(host, Options{})
	if err != nil {
		f.Fatal(err)
	}
	content := "x"
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := h.Decode(data)
		if err != nil {
			_ = h.Fail(ev, err.Error(), false)
			return
		}
		if (ev.Kind == KindBefore || ev.Kind == KindAfter) && (ev.Call.Tool == "" || ev.Call.Args == nil) {
			t.Fatalf("call event without a tool or args: %+v", ev)
		}
		if ev.Kind != KindIgnore && ev.SessionID == "" {
			t.Fatalf("%s event without a session id", ev.Name)
		}
		if ev.Kind == KindOutput && ev.Output == nil {
			t.Fatalf("output event without an output: %+v", ev)
		}
		for _, m := range ev.Messages {
			if m.Role == "" {
				t.Fatalf("a message without a role: %+v", ev)
			}
		}
		for v := policy.Allow; v <= policy.Halt; v++ {
			_ = h.Encode(ev, eval.Decision{Verdict: v, Args: ev.Call.Args, Content: &content})
			_ = h.Encode(ev, eval.Decision{Verdict: v, Messages: ev.Messages, Output: &eval.ModelOutput{Text: content}})
		}
	})
}

func FuzzClaudeDecode(f *testing.F)   { fuzzDecoder(f, "claude-code") }
func FuzzCodexDecode(f *testing.F)    { fuzzDecoder(f, "codex") }
func FuzzGeminiDecode(f *testing.F)   { fuzzDecoder(f, "gemini") }
func FuzzCursorDecode(f *testing.F)   { fuzzDecoder(f, "cursor") }
func FuzzCopilotDecode(f *testing.F)  { fuzzDecoder(f, "copilot") }
func FuzzOpencodeDecode(f *testing.F) { fuzzDecoder(f, "opencode") }
