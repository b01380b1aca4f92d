package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

// FuzzHookEndpoint: whatever body a host (or an attacker) posts to a hook
// endpoint, the answer is HTTP 200 with one JSON object, never a panic or
// another status: Claude Code's http hooks run the call on anything else.
func FuzzHookEndpoint(f *testing.F) {
	srv, err := serve.New(serve.Config{
		Engine: celguard.Config{Sources: func() ([]policy.Source, error) {
			return []policy.Source{policies.ToolClasses(), {Name: "t.yaml", Data: []byte(testPolicy), Layer: policy.LayerExplicit}}, nil
		}},
		MaxBodyBytes: 4096,
	})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	for _, s := range []string{
		`{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`,
		`{"hook_event_name":"PostToolUse","session_id":"s","tool_name":"Read","tool_input":{},"tool_response":"SECRET"}`,
		`{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"hi"}`,
		`{"hook_event_name":"Stop","session_id":"s"}`,
		`{"hook_event_name":"PreToolUse","session_id":"a/b","tool_name":"Bash","tool_input":"x"}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(s), "claude-code")
		f.Add([]byte(s), "cursor")
	}
	f.Fuzz(func(t *testing.T, body []byte, host string) {
		switch host {
		case "claude-code", "codex", "gemini", "cursor":
		default:
			host = "claude-code"
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/hooks/"+host, bytes.NewReader(body)))
		var m map[string]any
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &m) != nil {
			t.Fatalf("%s: %d %q", host, w.Code, w.Body.String())
		}
	})
}
