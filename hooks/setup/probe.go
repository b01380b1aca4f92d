package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/celguard/celguard/hooks"
)

// ProbeCommand is the ordinary call doctor puts to an installed hook: a
// shell listing of the project directory, which no policy meant for
// everyday work refuses.
const ProbeCommand = "ls"

// probeTimeout bounds one probe: the hosts' own hook timeout (30 s as
// install writes it) is the most a host would wait.
const probeTimeout = 30 * time.Second

// HookRun is one run of a hook command line, as a host runs it: the
// command through the shell, the event on stdin, in the project directory.
type HookRun struct {
	Stdout []byte
	Stderr string
	// Exit is the exit code; -1 when the command did not finish (Err).
	Exit int
	// Err is why the command could not be run or did not finish in time.
	Err error
}

// RunHookCommand runs command with sh -c in dir with event on stdin, as
// the hosts run a command hook, within timeout.
func RunHookCommand(ctx context.Context, command, dir string, event []byte, timeout time.Duration) HookRun {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(event)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	r := HookRun{Stdout: out.Bytes(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Exit, r.Err = -1, fmt.Errorf("no answer within %s", timeout)
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		r.Exit, r.Err = -1, err
	}
	return r
}

// probeEvent is the host's event for a call about to run: ProbeCommand in
// the shell tool, in dir, in a session of doctor's own.
func probeEvent(host, dir, session string) ([]byte, error) {
	var ev map[string]any
	switch host {
	case hooks.ClaudeCode, hooks.Codex:
		ev = map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "cwd": dir,
			"permission_mode": "default", "tool_name": "Bash", "tool_input": map[string]any{"command": ProbeCommand},
			"tool_use_id": "celguard-doctor"}
	case hooks.Gemini:
		ev = map[string]any{"hook_event_name": "BeforeTool", "session_id": session, "cwd": dir,
			"tool_name": "run_shell_command", "tool_input": map[string]any{"command": ProbeCommand}}
	case hooks.Cursor:
		ev = map[string]any{"hook_event_name": "beforeShellExecution", "conversation_id": session, "cwd": dir,
			"workspace_roots": []string{dir}, "command": ProbeCommand}
	case hooks.OpenCode:
		ev = map[string]any{"hook_event_name": "tool.execute.before", "session_id": session, "cwd": dir,
			"tool_name": "bash", "tool_input": map[string]any{"command": ProbeCommand}}
	case hooks.Copilot:
		ev = map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "cwd": dir,
			"timestamp": time.Now().UTC().Format(time.RFC3339), "tool_name": "Bash", "tool_input": map[string]any{"command": ProbeCommand}}
	default:
		return nil, fmt.Errorf("doctor has no probe event for %s", host)
	}
	return json.Marshal(ev)
}

// Answer is what a host makes of a hook's answer to a call about to run.
type Answer struct {
	// Verdict is "allow" (the hook approved the call), "none" (no
	// objection: the host's own permission rules decide), "ask" (the host
	// asks the user), "deny" (the call does not run), "fail-closed"
	// (celguard failed, and the host does not run the call) or "fail-open"
	// (the hook failed, and the host runs the call unguarded).
	Verdict string
	// Reason is the hook's reason, or what it wrote on stderr.
	Reason string
}

// ReadAnswer reads a hook's answer to a call about to run as host reads it
// (docs/hooks.md): exit code 2 blocks (celguard's failure answer; Cursor's
// also carries a deny), another non-zero exit is a non-blocking error, and
// exit 0 is decided by the JSON on stdout. An answer the host could not
// read is an error.
func ReadAnswer(host string, r HookRun) (Answer, error) {
	stderr := strings.TrimSpace(r.Stderr)
	switch {
	case r.Err != nil:
		return Answer{}, r.Err
	case r.Exit == 2, r.Exit != 0 && host == hooks.Copilot:
		// Copilot CLI denies a call whose PreToolUse hook exits non-zero.
		return Answer{Verdict: "fail-closed", Reason: stderr}, nil
	case r.Exit != 0:
		return Answer{Verdict: "fail-open", Reason: fmt.Sprintf("exit code %d: %s", r.Exit, stderr)}, nil
	}
	if strings.HasPrefix(stderr, "celguard (failing open):") {
		// celguard's own failure, answered as the host's allow.
		return Answer{Verdict: "fail-open", Reason: stderr}, nil
	}
	out := bytes.TrimSpace(r.Stdout)
	if len(out) == 0 {
		if host == hooks.Cursor {
			return Answer{}, errors.New("no answer on stdout (Cursor expects JSON)")
		}
		return Answer{Verdict: "none"}, nil
	}
	var m struct {
		Decision           string `json:"decision"`
		Reason             string `json:"reason"`
		Continue           *bool  `json:"continue"`
		StopReason         string `json:"stopReason"`
		Permission         string `json:"permission"`
		PermissionDecision string `json:"permissionDecision"`
		PermissionReason   string `json:"permissionDecisionReason"`
		AgentMessage       string `json:"agent_message"`
		HookSpecificOutput *struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return Answer{}, fmt.Errorf("the answer on stdout is not JSON: %v", err)
	}
	a := Answer{Verdict: "none"}
	switch host {
	case hooks.Cursor:
		a = Answer{Verdict: m.Permission, Reason: m.AgentMessage}
		if a.Verdict == "" {
			return Answer{}, errors.New(`the answer has no "permission"`)
		}
	case hooks.OpenCode:
		switch m.Decision {
		case "allow", "deny":
			a = Answer{Verdict: m.Decision, Reason: m.Reason}
		default:
			return Answer{}, fmt.Errorf("the answer has no decision the plugin reads: %s", out)
		}
	case hooks.Copilot:
		if m.PermissionDecision != "" {
			a = Answer{Verdict: m.PermissionDecision, Reason: m.PermissionReason}
		}
	case hooks.Gemini:
		switch m.Decision {
		case "allow", "ask", "deny":
			a = Answer{Verdict: m.Decision, Reason: m.Reason}
		case "block":
			a = Answer{Verdict: "deny", Reason: m.Reason}
		}
	default:
		if hso := m.HookSpecificOutput; hso != nil && hso.PermissionDecision != "" {
			a = Answer{Verdict: hso.PermissionDecision, Reason: hso.PermissionDecisionReason}
		} else if m.Decision == "block" {
			a = Answer{Verdict: "deny", Reason: m.Reason}
		}
	}
	if m.Continue != nil && !*m.Continue && a.Verdict != "deny" {
		a = Answer{Verdict: "deny", Reason: strings.TrimSpace(m.StopReason + " (the agent is stopped)")}
	}
	return a, nil
}

// probeCheck runs one installed hook command on the probe call and says
// what it answered: a failure answer (a policy that does not compile, a
// server that is down) refuses every call and fails the check, a hook
// that fails open lets every call through and fails it too, a refusal of
// the ordinary call is a warning, an allow or ask passes.
func probeCheck(host, path string, scope InstallScope, command string, env DoctorEnv) Check {
	c := Check{Host: host, Settings: path, Scope: scope}
	session := "celguard-doctor-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(env.now().UnixNano(), 36)
	event, err := probeEvent(host, env.ProjectDir, session)
	if err != nil {
		c.Level, c.Message = LevelWarn, err.Error()
		return c
	}
	info, _ := hooks.LookupHost(host)
	call := fmt.Sprintf("an ordinary call (%s: %s, in %s)", shellTool(host), ProbeCommand, env.ProjectDir)
	r := env.RunHook(command, env.ProjectDir, event)
	a, err := ReadAnswer(host, r)
	if err != nil {
		c.Level = LevelFail
		c.Message = fmt.Sprintf("the hook, run on %s, gave no answer %s can use: %v", call, info.Title, err)
		if s := strings.TrimSpace(r.Stderr); s != "" {
			c.Message += "; stderr: " + firstLine(s)
		}
		c.Fix = "run the hook command by hand (" + command + ") with the event on stdin to see why"
		return c
	}
	switch a.Verdict {
	case "fail-closed":
		c.Level = LevelFail
		c.Message = fmt.Sprintf("the hook refuses every call: run on %s it failed (%s)", call, firstLine(a.Reason))
		c.Fix = "fix what the message names (a policy that does not compile: celguard lint; a server that is down: start celguard serve), then run celguard doctor again"
	case "fail-open":
		c.Level = LevelFail
		c.Message = fmt.Sprintf("the hook fails and %s then runs every call unguarded: run on %s it answered %s", info.Title, call, firstLine(a.Reason))
		c.Fix = "fix what the message names, then run celguard doctor again"
	case "deny":
		c.Level = LevelWarn
		c.Message = fmt.Sprintf("the hook refused %s: %s", call, firstLine(a.Reason))
		c.Fix = "if your policies do not mean to refuse it, celguard eval shows the rule that decides"
	case "allow":
		c.Level, c.Message = LevelOK, fmt.Sprintf("the hook ran a real decision on %s and allowed it", call)
	case "ask":
		c.Level, c.Message = LevelOK, fmt.Sprintf("the hook ran a real decision on %s and has %s ask the user", call, info.Title)
	default:
		c.Level, c.Message = LevelOK, fmt.Sprintf("the hook ran a real decision on %s and let it through (%s's own permission rules decide)", call, info.Title)
	}
	return c
}

// shellTool is the host's name for its shell tool, for people.
func shellTool(host string) string {
	switch host {
	case hooks.Gemini:
		return "run_shell_command"
	case hooks.Cursor:
		return "shell"
	case hooks.OpenCode:
		return "bash"
	}
	return "Bash"
}

// firstLine is s on one line, shortened.
func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 600
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}
