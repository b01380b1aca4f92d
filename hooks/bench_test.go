package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
)

// BenchmarkHookProcess measures one hook invocation end to end, as a host
// sees it: start the celguard binary, read the event, load and compile the
// built-in policies, take the session lock, load the state, decide, save
// the state, answer. The binary is built once, before the timer starts.
func BenchmarkHookProcess(b *testing.B) {
	bin := celguardBinary(b)
	events := map[string]map[string]any{
		"PreToolUse": claudeEvent("PreToolUse", map[string]any{"tool_name": "Bash",
			"tool_input": map[string]any{"command": "npm test", "description": "Run tests", "timeout": 120000}}),
		"PostToolUseFailure": claudeEvent("PostToolUseFailure", map[string]any{"tool_name": "Bash",
			"tool_input": map[string]any{"command": "npm test"}, "error": "Exit code 1"}),
		"UserPromptSubmit": claudeEvent("UserPromptSubmit", map[string]any{"prompt": "hi"}),
		// Ignored: no policies compiled, no state touched.
		"Notification": claudeEvent("Notification", map[string]any{"message": "m"}),
	}
	for _, name := range []string{"PreToolUse", "PostToolUseFailure", "UserPromptSubmit", "Notification"} {
		data, err := json.Marshal(events[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			state := b.TempDir()
			for b.Loop() {
				cmd := exec.Command(bin, "hook", "claude-code", "--state-dir", state)
				cmd.Env = noDaemon()
				cmd.Stdin = bytes.NewReader(data)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %s", err, stderr.String())
				}
			}
		})
	}
}

// BenchmarkProcessStart is the floor: starting the same binary to print its
// version, with no policies and no state.
func BenchmarkProcessStart(b *testing.B) {
	bin := celguardBinary(b)
	for b.Loop() {
		if err := exec.Command(bin, "--version").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunnerEvents measures the hook's own work for one prompt, one
// PreToolUse and one PostToolUse of a session, in process (no process
// start, no compile): hold the session's lock, resume it from the state
// directory through the file store, decide and commit. The policies are
// the built-in ones; the engine is built once, as a daemon would.
func BenchmarkRunnerEvents(b *testing.B) {
	r := testRunner(b, "claude-code", Options{}, testEngine(b))
	prompt := []byte(`{"session_id":"bench","cwd":"/srv/app","hook_event_name":"UserPromptSubmit","prompt":"hi"}`)
	pre := []byte(`{"session_id":"bench","cwd":"/srv/app","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"npm test","description":"Run tests","timeout":120000}}`)
	post := []byte(`{"session_id":"bench","cwd":"/srv/app","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"npm test"},"tool_response":{"stdout":"ok","stderr":"","interrupted":false}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, ev := range [][]byte{prompt, pre, post} {
			if resp := r.Run(ctx, ev); resp.Exit != 0 {
				b.Fatal(resp.Stderr)
			}
		}
	}
}
