package hostse2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/setup"
)

// cursorCase is one verdict put to celguard's installed Cursor hook as the
// events of Cursor's hook documentation carry it, and what that
// documentation says Cursor does with the answer.
type cursorCase struct {
	phase, verdict string
	// event is the hook event name; fields its documented fields beside
	// the common ones.
	event  string
	fields map[string]any
	// broken and missing install a policy that does not compile, or a
	// hook command whose binary does not exist.
	broken, missing bool
	// then is a second event of the same conversation, answered after the
	// first (a halt refuses it).
	then map[string]any
	// read checks the answers and says what Cursor does with them, per its
	// documentation.
	read func(t *testing.T, first, then answer) hooks.Capability
}

// answer is the installed hook's answer to one event, as Cursor's
// documentation reads it: exit code 2 blocks; otherwise the JSON on stdout
// (permission, user_message, agent_message for the before events; after
// events are observe-only).
type answer struct {
	exit         int
	stderr       string
	Permission   string `json:"permission"`
	AgentMessage string `json:"agent_message"`
	UserMessage  string `json:"user_message"`
	Question     string `json:"question"`
}

// documented is a cell of Cursor's row: what the documentation says.
func documented(s hooks.Support, becomes, observed string) hooks.Capability {
	return hooks.Capability{Support: s, Becomes: becomes, Observed: "documented, not run: " + observed}
}

var cursorCases = []cursorCase{
	{phase: "before", verdict: "allow", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-allowed"},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			wantPermission(t, a, "allow")
			return documented(hooks.SupportExact, "", "permission allow: the command runs")
		}},
	{phase: "before", verdict: "warn", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-warn"},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			wantPermission(t, a, "allow")
			wantMessage(t, a.AgentMessage, "E2E-WARN-REASON")
			wantMessage(t, a.UserMessage, "E2E-WARN-REASON")
			return documented(hooks.SupportExact, "", "permission allow, the warning in agent_message (to the agent) and user_message (to the user)")
		}},
	{phase: "before", verdict: "block", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-blocked"},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			wantPermission(t, a, "deny")
			wantMessage(t, a.AgentMessage, "E2E-BLOCK-REASON")
			return documented(hooks.SupportExact, "", "permission deny: the command does not run; agent_message gives the agent the reason")
		}},
	{phase: "before", verdict: "ask", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-ask"},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			wantPermission(t, a, "ask")
			return documented(hooks.SupportExact, "", "permission ask: Cursor asks the user before the command runs")
		}},
	{phase: "before", verdict: "halt", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-halt"},
		then: map[string]any{"command": "touch celguard-next"},
		read: func(t *testing.T, a, next answer) hooks.Capability {
			wantPermission(t, a, "deny")
			wantMessage(t, a.AgentMessage, "E2E-HALT-REASON")
			wantPermission(t, next, "deny")
			return documented(hooks.SupportDegraded, "a block that ends nothing: Cursor's before hooks cannot end the turn; celguard refuses every later call of the session",
				"permission deny, and deny for the conversation's next command")
		}},
	{phase: "before", verdict: "modify", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-before"},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			wantPermission(t, a, "deny")
			wantMessage(t, a.AgentMessage, "celguard-after")
			return documented(hooks.SupportDegraded, "a deny whose agent_message gives the rewritten arguments to run instead (Cursor's hooks cannot rewrite a call)",
				"permission deny with the rewritten command in agent_message")
		}},
	{phase: "after", verdict: "modify", event: "afterShellExecution", fields: map[string]any{"command": "echo E2ESECRET-42", "output": "E2ESECRET-42\n", "duration": 12},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			if a.exit != 0 {
				t.Errorf("afterShellExecution: exit %d: %s", a.exit, a.stderr)
			}
			return documented(hooks.SupportNone, "the original output: Cursor's after hooks observe only and cannot change what the agent reads",
				"afterShellExecution is observe-only; celguard's counters see the output")
		}},
	{phase: "output", verdict: "modify", event: "afterAgentResponse", fields: map[string]any{"text": "The key is AKIAIOSFODNN7EXAMPLE."},
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			return documented(hooks.SupportNone, "nothing: Cursor's afterAgentResponse hook observes only and cannot change the answer",
				"afterAgentResponse is observe-only; celguard does not register it")
		}},
	{phase: "failure", verdict: "policy", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-broken"}, broken: true,
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			if a.exit != 2 && a.Permission != "deny" {
				t.Errorf("a policy that does not compile: exit %d, permission %q: want exit 2 or deny", a.exit, a.Permission)
			}
			wantMessage(t, a.stderr+a.AgentMessage, "broken.yaml:6")
			return documented(hooks.SupportExact, "", "a policy that does not compile: exit code 2 (and deny), which refuses the command; the reason names the file and line")
		}},
	{phase: "failure", verdict: "binary", event: "beforeShellExecution", fields: map[string]any{"command": "touch celguard-unguarded"}, missing: true,
		read: func(t *testing.T, a, _ answer) hooks.Capability {
			if a.exit == 0 || a.exit == 2 {
				t.Errorf("a missing binary: exit %d, want the shell's failure to start it", a.exit)
			}
			return documented(hooks.SupportNone, "unknown: Cursor's documentation does not say what a hook that cannot start does; count on the command running unguarded",
				"the hook command cannot start (exit 127), which the documentation leaves undefined")
		}},
}

func wantPermission(t *testing.T, a answer, want string) {
	t.Helper()
	if a.exit != 0 || a.Permission != want {
		t.Errorf("answer: exit %d, permission %q (stderr %q): want exit 0 and permission %q", a.exit, a.Permission, a.stderr, want)
	}
}

func wantMessage(t *testing.T, msg, want string) {
	t.Helper()
	if !strings.Contains(msg, want) {
		t.Errorf("the message %q does not carry %q", msg, want)
	}
}

// TestCursorDocumented makes Cursor's row of the capability matrix, marked
// documented, not run. The Cursor CLI (cursor-agent) is downloaded from
// cursor.com and is on no package registry (npm's cursor-agent is an
// unrelated package; @cursor/sdk runs every turn through Cursor's hosted
// models, docs cursor.com/docs/api/sdk/typescript), so the suite cannot
// run it against the fake model. Instead it installs celguard's Cursor hook
// (`celguard hook install cursor`), runs the command it wrote, as Cursor
// runs a hook, on the events of Cursor's hook documentation (common fields
// conversation_id, generation_id, workspace_roots, model, cursor_version;
// per event command and cwd, output and duration), checks celguard's
// answers, and records what the documentation says Cursor does with them.
func TestCursorDocumented(t *testing.T) {
	celguard := celguardBinary(t)
	rec := &recorder{source: hooks.SourceDocumented}
	t.Cleanup(func() { rec.finish(t) })
	for _, c := range cursorCases {
		t.Run(c.phase+"-"+c.verdict, func(t *testing.T) {
			command, work := installCursor(t, celguard, c)
			first := runCursorHook(t, command[c.event], work, c.event, c.fields)
			var then answer
			if c.then != nil {
				then = runCursorHook(t, command[c.event], work, c.event, c.then)
			}
			cell := c.read(t, first, then)
			if !t.Failed() {
				rec.add(hooks.Cursor, "", c.phase, c.verdict, cell)
			}
		})
	}
}

// installCursor installs celguard's Cursor hook in a home of the test's and
// returns the command it registered for each event, and the project.
func installCursor(t *testing.T, celguard string, c cursorCase) (map[string]string, string) {
	t.Helper()
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(root, "policy.yaml")
	if c.broken {
		policyFile = filepath.Join(root, "broken.yaml")
		writeFile(t, policyFile, brokenPolicy)
	} else {
		writeFile(t, policyFile, e2ePolicy)
	}
	args := []string{"hook", "install", hooks.Cursor, "--user", "--policy", policyFile, "--state-dir", filepath.Join(root, "state")}
	if c.missing {
		args = append(args, "--command", filepath.Join(root, "gone", "celguard"))
	}
	install := exec.Command(celguard, args...)
	install.Dir, install.Env = work, append(baseEnv(home, root), "CELGUARD_DAEMON=off")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("celguard hook install cursor: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(home, ".cursor", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatalf("~/.cursor/hooks.json: %v\n%s", err, data)
	}
	command := map[string]string{}
	for event, entries := range settings.Hooks {
		if len(entries) > 0 {
			command[event] = entries[0].Command
		}
	}
	if command["beforeShellExecution"] == "" || command["afterShellExecution"] == "" {
		t.Fatalf("install registered no shell hooks:\n%s", data)
	}
	t.Setenv("HOME", home) // the hook command finds its layers as Cursor's user would
	t.Setenv("CELGUARD_DAEMON", "off")
	return command, work
}

// runCursorHook runs the installed command on one documented event of the
// conversation, as Cursor runs a hook (the shell, the event on stdin, in
// the project). An event celguard registers no hook for is not run: Cursor
// would not call it.
func runCursorHook(t *testing.T, command, work, event string, fields map[string]any) answer {
	t.Helper()
	if command == "" {
		return answer{}
	}
	ev := map[string]any{"hook_event_name": event, "conversation_id": "conv-e2e", "generation_id": "gen-e2e",
		"workspace_roots": []string{work}, "model": "gpt-4", "cursor_version": "2.0.77", "cwd": work}
	for k, v := range fields {
		ev[k] = v
	}
	in, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	r := setup.RunHookCommand(context.Background(), command, work, in, daemonWait)
	if r.Err != nil && r.Exit != -1 {
		t.Fatalf("running the hook: %v", r.Err)
	}
	a := answer{exit: r.Exit, stderr: r.Stderr}
	if r.Exit == 0 && len(strings.TrimSpace(string(r.Stdout))) > 0 {
		if err := json.Unmarshal(r.Stdout, &a); err != nil {
			t.Errorf("the answer to %s is not JSON Cursor can read: %v\n%s", event, err, r.Stdout)
		}
	}
	return a
}
