package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/celguard/celguard/internal/benchdata"
)

// fastProtocols are the protocols decodeEvent reads, by name.
var fastProtocols = map[string]eventProtocol{"hook-specific": hookSpecificEvents, "gemini": geminiEvents, "copilot": copilotEvents, "opencode": opencodeEvents}

// eventCases are events that tell decodeEventFast from decodeEventMap:
// objectCases, every host's golden events, and members of every type,
// null, duplicated, misspelled or absent.
func eventCases(t testing.TB) []string {
	cases := objectCases()
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden events: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	values := []string{`null`, `""`, `"x"`, `1`, `-0`, `true`, `false`, `[]`, `{}`, `[1,"a",null]`, `{"a":1}`, `{"a":{"b":[null]}}`, `"Exit code 3\nboom"`, `"Exit code -12"`, `"Exit code 99999999999999999999"`, `1e400`, "\"\xff\""}
	names := []string{"hook_event_name", "session_id", "cwd", "tool_name", "tool_input", "tool_use_id", "agent_type", "agent_id",
		"permission_mode", "model", "turn_id", "prompt", "error", "is_interrupt", "tool_response", "permission_suggestions",
		"transcript_path", "Hook_Event_Name", "SESSION_ID", "Tool_Input", "text", "llm_request", "llm_response", "tool_result", ""}
	events := []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SessionStart", "SessionEnd",
		"PermissionRequest", "Notification", "BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
		"tool.execute.before", "tool.execute.after", "chat.message", "experimental.text.complete", "session.idle", ""}
	for _, e := range events {
		base := `{"hook_event_name":` + quote(e) + `,"session_id":"s1","cwd":"/r","tool_name":"Bash","tool_input":{"command":"ls"}`
		cases = append(cases, base+`}`, `{"hook_event_name":`+quote(e)+`}`, `{"hook_event_name":`+quote(e)+`,"session_id":"s"}`,
			`{"hook_event_name":`+quote(e)+`,"session_id":"s","tool_name":"Bash"}`)
		for _, n := range names {
			for _, v := range values {
				cases = append(cases, base+`,`+quote(n)+`:`+v+`}`)
			}
		}
		// A member given twice, and one misspelled, beside its right spelling.
		cases = append(cases, base+`,"session_id":"s2"}`, base+`,"tool_input":{"command":"rm -rf /"}}`, base+`,"Tool_Name":"Write"}`,
			`{"hook_event_name":`+quote(e)+`,"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`,
			base+`,"permission_mode":"plan","model":"m","agent_id":"a1","agent_type":"sub","turn_id":"t","tool_use_id":"u"}`,
			base+`,"error":"Exit code 7\nno","is_interrupt":true,"tool_response":{"stdout":"x","exit_code":1}}`,
			base+`,"prompt":"hello","permission_suggestions":[{"type":"addRules"}]}`)
		// A member spelled only otherwise (upper case, without its
		// underscores), which encoding/json/v2's case:ignore would match:
		// the map's way does not read it.
		full := [][2]string{{"hook_event_name", quote(e)}, {"session_id", `"s"`}, {"cwd", `"/r"`}, {"tool_name", `"Bash"`},
			{"tool_input", `{"command":"rm -rf /"}`}, {"tool_use_id", `"u"`}, {"agent_type", `"sub"`}, {"agent_id", `"a1"`},
			{"permission_mode", `"plan"`}, {"model", `"m"`}, {"turn_id", `"t"`}, {"prompt", `"hello"`}, {"error", `"Exit code 7"`},
			{"is_interrupt", `true`}, {"tool_response", `{"stdout":"x"}`}, {"permission_suggestions", `[{"type":"addRules"}]`}}
		for i := range full {
			for _, n := range []string{strings.ToUpper(full[i][0]), strings.ReplaceAll(full[i][0], "_", "")} {
				members := make([]string, len(full))
				for j, m := range full {
					if j == i {
						m[0] = n
					}
					members[j] = quote(m[0]) + ":" + m[1]
				}
				cases = append(cases, "{"+strings.Join(members, ",")+"}")
			}
		}
	}
	return cases
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkEventFast holds decodeEventFast to decodeEventMap for data under
// every protocol: where the fast way takes an event, the map's way decodes
// it without an error to the same Event (-0 told from 0).
func checkEventFast(t *testing.T, data []byte) (took int) {
	t.Helper()
	for name, p := range fastProtocols {
		got, ok := decodeEventFast("h", data, p)
		want, err := decodeEventMap("h", data, p)
		if !ok {
			if dev, derr := decodeEvent("h", data, p); fmt.Sprint(derr) != fmt.Sprint(err) || !reflect.DeepEqual(dev, want) {
				t.Fatalf("%s: event %q: decodeEvent %#v, %v; want %#v, %v", name, data, dev, derr, want, err)
			}
			continue
		}
		took++
		if err != nil {
			t.Fatalf("%s: event %q: the fast way took an event the map's way fails: %v", name, data, err)
		}
		if !reflect.DeepEqual(got, want) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("%s: event %q:\n fast %#v\n want %#v", name, data, got, want)
		}
	}
	return took
}

// TestDecodeEventFastDifferential: every event decodes to what the map's
// way decodes it to, or fails with its error.
func TestDecodeEventFastDifferential(t *testing.T) {
	took := 0
	cases := eventCases(t)
	for _, c := range cases {
		took += checkEventFast(t, []byte(c))
	}
	t.Logf("%d events × %d protocols, %d taken by the fast way", len(cases), len(fastProtocols), took)
}

// TestDecodeEventFastTakes: the fast way takes the events a tool call
// sends most (the stream's PreToolUse, and the golden events before and
// after a call), so that the differential test is not about nothing.
func TestDecodeEventFastTakes(t *testing.T) {
	var events [][]byte
	for _, c := range benchdata.Stream(1000)[:200] {
		b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": c.Cwd, "tool_name": c.Tool, "tool_input": c.Args})
		events = append(events, b)
	}
	for _, g := range []string{"pre-allow", "pre-block-subagent", "post-allow", "post-modify", "failure-block", "prompt", "stop", "session-start", "session-end", "permission-request", "notification"} {
		b, err := os.ReadFile(filepath.Join("testdata", "claude-code", g+".json"))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		events = append(events, b)
	}
	for _, e := range events {
		if _, ok := decodeEventFast("claude-code", e, hookSpecificEvents); !ok {
			t.Errorf("the fast way refused %s", e)
		}
	}
}

// FuzzDecodeEventFast: any event decodes to what the map's way decodes it
// to, or fails with its error.
func FuzzDecodeEventFast(f *testing.F) {
	// One in 16 of the cases (TestDecodeEventFastDifferential runs them
	// all): enough to start from, few enough that the fuzzer gets past them.
	for i, c := range eventCases(f) {
		if i%16 == 0 && len(c) < 4096 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkEventFast(t, data)
	})
}
