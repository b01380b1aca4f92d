package hooks

import (
	"bytes"
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
