// Command barehook is the floor a hook process is measured against
// (BENCHMARKS.md, "Hook latency"): a bare Go binary that reads a Claude Code
// hook event from stdin, decodes it and prints an answer, with no policy,
// no state and no decision. It lives under bench/ because it is a yardstick
// for the benchmarks, not part of celguard; it imports nothing of the module.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// event is the part of a Claude Code hook event a hook reads.
type event struct {
	SessionID      string         `json:"session_id"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolResponse   any            `json:"tool_response"`
}

// answer is Claude Code's hook answer.
type answer struct {
	HookSpecificOutput struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

func main() {
	data, err := io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if ev.HookEventName != "PreToolUse" {
		return
	}
	var a answer
	a.HookSpecificOutput.HookEventName = ev.HookEventName
	a.HookSpecificOutput.PermissionDecision = "allow"
	a.HookSpecificOutput.PermissionDecisionReason = "barehook: " + ev.ToolName
	out, _ := json.Marshal(a)
	fmt.Println(string(out))
}
