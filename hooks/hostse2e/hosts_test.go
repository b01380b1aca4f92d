package hostse2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/hooks/daemonwire"
	"github.com/celguard/celguard/internal/npmhost"
)

// hostRunTimeout bounds one headless run of a host. A run takes seconds on
// an idle machine; OpenCode's, whose plugin starts the hook command for
// every event (about eight a run), took over four minutes at a load of 30
// on two cores.
const hostRunTimeout = 10 * time.Minute

// e2ePolicy decides the scenarios by the marker names in the command.
const e2ePolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: hosts-e2e
rules:
  - id: e2e-block
    condition: 'has(args.command) && string(args.command).contains("celguard-blocked")'
    verdict: block
    reason: E2E-BLOCK-REASON the blocked marker must not be created
  - id: e2e-ask
    condition: 'has(args.command) && string(args.command).contains("celguard-ask")'
    verdict: ask
    reason: E2E-ASK-REASON a person must approve the marker
  - id: e2e-halt
    condition: 'has(args.command) && string(args.command).contains("celguard-halt")'
    verdict: halt
    reason: E2E-HALT-REASON the session must stop here
  - id: e2e-warn
    condition: 'has(args.command) && string(args.command).contains("celguard-warn")'
    verdict: warn
    reason: E2E-WARN-REASON the marker is fine but noted
  # The rewrite keeps only the command: on Gemini CLI it drops the dir_path
  # the model gave, so the call runs in the working directory only if the
  # host replaces the arguments rather than merging them.
  - id: e2e-rewrite
    condition: 'has(args.command) && string(args.command).contains("celguard-before")'
    verdict: modify
    modify:
      args: '{"command": string(args.command).replace("celguard-before", "celguard-after")}'

  - id: e2e-redact
    phase: after
    condition: 'has(result.content) && string(result.content).contains("E2ESECRET")'
    verdict: modify
    modify:
      content: 'string(result.content).replace("E2ESECRET", "REDACTED-BY-CELGUARD")'

  # Gemini CLI's AfterModel: decided across the answer's chunks.
  - id: e2e-redact-output
    phase: output
    condition: 'secrets.has(output.text)'
    verdict: modify
    modify:
      output: 'secrets.redact(output.text)'
`

// brokenPolicy does not compile: its condition is not CEL. Its error is on
// line 6.
const brokenPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: hosts-e2e-broken
rules:
  - id: broken
    condition: 'args.command ++ )'
    verdict: block
`

// host drives one agent host headless.
type host struct {
	name string // celguard's name for it
	api  string // the fake model's API
	pkg  npmhost.Host
	// setup writes the host's own settings under home before celguard's
	// install and returns the environment to run it with.
	setup func(t *testing.T, home, url string) []string
	// run is the command line of one headless prompt.
	run func(bin, prompt string) []string
	// afterInstall runs after `celguard hook install` (Codex: trust).
	afterInstall func(t *testing.T, home string, installOut []byte)
}

var hostsUnderTest = []host{
	{
		name: "claude-code", api: "anthropic", pkg: claudePkg,
		setup: func(t *testing.T, home, url string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-e2e-dummy",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
				"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}
		},
		run: func(bin, prompt string) []string {
			return []string{bin, "-p", prompt, "--allowedTools", "Bash", "--model", "claude-sonnet-4-5", "--output-format", "text"}
		},
	},
	{
		name: "gemini", api: "gemini", pkg: geminiPkg,
		setup: func(t *testing.T, home, url string) []string {
			writeFile(t, filepath.Join(home, ".gemini", "settings.json"),
				`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`+"\n")
			return []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=e2e-dummy", "GEMINI_CLI_NO_RELAUNCH=true",
				// Headless Gemini CLI refuses to run in a folder it has not trusted.
				"GEMINI_CLI_TRUST_WORKSPACE=true"}
		},
		run: func(bin, prompt string) []string {
			return []string{bin, "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"}
		},
	},
	{
		name: "codex", api: "openai", pkg: codexPkg,
		setup: func(t *testing.T, home, url string) []string {
			writeFile(t, filepath.Join(home, ".codex", "config.toml"), `model = "gpt-5.1-codex"
model_provider = "e2e"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.e2e]
name = "e2e"
base_url = "`+url+`/v1"
env_key = "CELGUARD_E2E_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`)
			return []string{"CODEX_HOME=" + filepath.Join(home, ".codex"), "CELGUARD_E2E_KEY=e2e-dummy"}
		},
		run: func(bin, prompt string) []string {
			return []string{bin, "exec", "--skip-git-repo-check", prompt}
		},
		afterInstall: trustCodexHooks,
	},
	{
		// Copilot CLI's BYOK provider: an Anthropic Messages endpoint, no
		// GitHub sign-in (offline mode).
		name: "copilot", api: "anthropic", pkg: copilotPkg,
		setup: func(t *testing.T, home, url string) []string {
			return []string{"COPILOT_HOME=" + filepath.Join(home, ".copilot"), "COPILOT_OFFLINE=true",
				"COPILOT_PROVIDER_BASE_URL=" + url, "COPILOT_PROVIDER_TYPE=anthropic", "COPILOT_PROVIDER_API_KEY=e2e-dummy",
				"COPILOT_MODEL=claude-sonnet-4-5", "COPILOT_AUTO_UPDATE=false"}
		},
		run: func(bin, prompt string) []string {
			return []string{bin, "-p", prompt, "--allow-all-tools", "--no-auto-update", "--disable-client-telemetry"}
		},
	},
	{
		// OpenCode's built-in Anthropic provider pointed at the fake model;
		// no models.dev fetch, no default plugins from npm, no update.
		name: "opencode", api: "anthropic", pkg: opencodePkg,
		setup: func(t *testing.T, home, url string) []string {
			writeFile(t, filepath.Join(home, ".config", "opencode", "opencode.json"), `{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "anthropic/claude-sonnet-4-5",
  "permission": {"bash": "allow", "edit": "allow"},
  "provider": {"anthropic": {"options": {"baseURL": "`+url+`/v1", "apiKey": "e2e-dummy"},
    "models": {"claude-sonnet-4-5": {"name": "e2e", "tool_call": true, "limit": {"context": 200000, "output": 8192}}}}}
}
`)
			return []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1"}
		},
		run: func(bin, prompt string) []string {
			return []string{bin, "run", prompt}
		},
	},
}

// scenario is one tool call and what must follow from it.
type scenario struct {
	name    string
	command string
	// then is a second call the model makes if the host asks it again
	// after the first.
	then   string
	broken bool // install a policy that does not compile
	// missing installs a hook command whose binary does not exist.
	missing bool
	// only names the hosts the scenario runs on (nil: every host).
	only []string
	// stream is the closing answer, streamed in these chunks.
	stream []string
	// check asserts what must hold on every host (a refused call never
	// runs).
	check func(t *testing.T, host, work string, m *fakeModel, out string)
	// phase and verdict name the capability matrix cell the scenario
	// measures (hooks.Capability); observe says what the host did with it.
	phase, verdict string
	observe        func(work string, m *fakeModel, out string) hooks.Capability
}

var scenarios = []scenario{
	{
		name: "allow", command: "touch celguard-allowed",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-allowed"), true)
		},
		phase: "before", verdict: "allow",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			if exists(work, "celguard-allowed") {
				return exact("the call ran")
			}
			return hooks.Capability{Support: hooks.SupportNone, Becomes: "a refusal", Observed: "the call did not run"}
		},
	},
	{
		name: "block", command: "touch celguard-blocked",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-blocked"), false)
			mustReceive(t, m, "E2E-BLOCK-REASON", "")
		},
		phase: "before", verdict: "block",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			switch {
			case exists(work, "celguard-blocked"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow", Observed: "the call ran"}
			case received(m, "E2E-BLOCK-REASON"):
				return exact("the call did not run; the model received the reason")
			}
			return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a block whose reason the model does not see", Observed: "the call did not run; the model did not receive the reason"}
		},
	},
	{
		// A host that can ask a person is told to ask (headless, nobody
		// answers); one that cannot is given a deny naming an approval
		// request the user answers with celguard approve.
		name: "ask", command: "touch celguard-ask",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-ask"), false)
		},
		phase: "before", verdict: "ask",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			switch {
			case exists(work, "celguard-ask"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow", Observed: "the call ran, nobody asked"}
			case received(m, "approval request"):
				return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a deny naming an approval request (celguard approve ID, then the agent retries)",
					Observed: "the call did not run; the model received the approval request"}
			}
			return exact("the host's own permission prompt (headless, nobody answered: the call did not run)")
		},
	},
	{
		// A halt stops the session: the call does not run, nor does any
		// later call of the session. What the host does with the rest of
		// the turn is the measure: it ends it (the model is not asked
		// again), or the turn goes on and celguard refuses the next call.
		name: "halt", command: "touch celguard-halt", then: "touch celguard-next",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-halt"), false)
			mustExist(t, filepath.Join(work, "celguard-next"), false)
			if m.Issued() > 1 {
				// The turn went on: the model read why.
				mustReceive(t, m, "E2E-HALT-REASON", "")
			}
		},
		phase: "before", verdict: "halt",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			shown := ""
			if strings.Contains(out, "E2E-HALT-REASON") {
				shown = "; the user was shown the reason"
			}
			switch {
			case exists(work, "celguard-halt"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow", Observed: "the call ran"}
			case m.Issued() == 1:
				return exact("the call did not run; the host ended the turn, the model was not asked again" + shown)
			case received(m, "E2E-HALT-REASON"):
				return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a block that ends nothing: the turn goes on and celguard refuses every later call of the session",
					Observed: "the call did not run; the model received the reason, the turn went on and its next call was refused" + shown}
			}
			return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a block whose reason the model does not see; the turn goes on and celguard refuses every later call",
				Observed: "the call did not run; the turn went on and its next call was refused" + shown}
		},
	},
	{
		// A warn lets the call run with a message: who reads it (the model,
		// the user, nobody) is the measure.
		name: "warn", command: "touch celguard-warn",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-warn"), true)
		},
		phase: "before", verdict: "warn",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			model := strings.Contains(m.Log(), "E2E-WARN-REASON")
			user := strings.Contains(out, "E2E-WARN-REASON")
			switch {
			case !exists(work, "celguard-warn"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "a refusal", Observed: "the call did not run"}
			case model && user:
				return exact("the call ran; the model received the warning and the user was shown it")
			case model:
				return exact("the call ran; the model received the warning")
			case user:
				return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "an allow whose warning only the user sees",
					Observed: "the call ran; the user was shown the warning, the model did not receive it"}
			}
			return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow: the warning reaches neither the model nor the user",
				Observed: "the call ran; neither the model nor the user received the warning"}
		},
	},
	{
		name: "modify", command: "touch celguard-before",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-before"), false)
			mustExist(t, filepath.Join(work, "sub", "celguard-before"), false)
			mustExist(t, filepath.Join(work, "sub", "celguard-after"), false)
			mustExist(t, filepath.Join(work, "celguard-after"), true)
		},
		phase: "before", verdict: "modify",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			switch {
			case exists(work, "celguard-before") || exists(work, "sub/celguard-before"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow of the original call", Observed: "the original call ran"}
			case exists(work, "celguard-after"):
				return exact("the rewritten call ran")
			}
			return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a block", Observed: "neither call ran"}
		},
	},
	{
		name: "redact", command: "echo E2ESECRET-42",
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustReceive(t, m, "REDACTED-BY-CELGUARD-42", "E2ESECRET")
		},
		phase: "after", verdict: "modify",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			switch {
			case received(m, "E2ESECRET"):
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "the original output", Observed: "the model received the secret"}
			case !received(m, "REDACTED-BY-CELGUARD-42"):
				return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a withheld output", Observed: "the model received neither the output nor its rewrite"}
			case received(m, strings.TrimSpace(hooks.RedactedNote)):
				return hooks.Capability{Support: hooks.SupportDegraded, Becomes: "a tool error carrying the rewritten output",
					Observed: "the model received the rewritten output as the tool's error, with a note that the call ran"}
			}
			return exact("the model received the rewritten output, not the secret")
		},
	},
	{
		name: "broken-policy", command: "touch celguard-broken", broken: true,
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			if m.Requests() == 0 {
				t.Fatalf("the prompt never reached the model; host output:\n%s", out)
			}
			mustExist(t, filepath.Join(work, "celguard-broken"), false)
			// The prompt carries the warning to the model.
			if !strings.Contains(m.Log(), "every tool call is refused until this is fixed") {
				t.Errorf("the prompt did not carry celguard's warning to the model")
			}
			// The refusal names the policy file and the line of the error.
			mustReceive(t, m, "broken.yaml:6", "")
		},
		phase: "failure", verdict: "policy",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			if exists(work, "celguard-broken") {
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow", Observed: "the call ran"}
			}
			return exact("a policy that does not compile: the call did not run; the model received the file and line")
		},
	},
	{
		// A secret in the model's answer split across streamed chunks
		// (Gemini's AfterModel sees one chunk at a time; OpenCode's
		// experimental.text.complete the whole text once it has streamed)
		// is redacted before any part of it is shown (issue 33).
		name: "stream-secret", command: "touch celguard-stream", only: []string{"gemini", "opencode"},
		stream: []string{"The key is AK", "IAIOSFOD", "NN7EXAMPLE, and that", " is all."},
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			mustExist(t, filepath.Join(work, "celguard-stream"), true)
			for _, part := range []string{"AKIA", "IOSFOD", "NN7EX"} {
				if strings.Contains(out, part) {
					t.Errorf("the host showed %q of the secret", part)
				}
			}
			for _, want := range []string{"The key is [REDACTED:aws_access_key], and that is all."} {
				if !strings.Contains(out, want) {
					t.Errorf("the host did not show %q", want)
				}
			}
		},
		phase: "output", verdict: "modify",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			for _, part := range []string{"AKIA", "IOSFOD", "NN7EX"} {
				if strings.Contains(out, part) {
					return hooks.Capability{Support: hooks.SupportNone, Becomes: "the original output", Observed: "the host showed part of the secret"}
				}
			}
			return exact("the streamed answer was shown rewritten, no part of the secret first")
		},
	},
	{
		// What docs/hooks.md says of a missing binary: Claude Code and Codex
		// take the hook's failure to start as a non-blocking error and run
		// the call; Gemini CLI refuses it.
		name: "missing-binary", command: "touch celguard-unguarded", missing: true,
		check: func(t *testing.T, host, work string, m *fakeModel, out string) {
			// Gemini CLI and Copilot CLI (a PreToolUse hook that exits
			// non-zero denies) refuse it.
			mustExist(t, filepath.Join(work, "celguard-unguarded"), host == "claude-code" || host == "codex")
		},
		phase: "failure", verdict: "binary",
		observe: func(work string, m *fakeModel, out string) hooks.Capability {
			if exists(work, "celguard-unguarded") {
				return hooks.Capability{Support: hooks.SupportNone, Becomes: "an allow: every call runs unguarded", Observed: "the hook's binary is missing: the call ran"}
			}
			return exact("the hook's binary is missing: the call did not run")
		},
	},
}

func exact(observed string) hooks.Capability {
	return hooks.Capability{Support: hooks.SupportExact, Observed: observed}
}

func exists(work, name string) bool {
	_, err := os.Stat(filepath.Join(work, name))
	return err == nil
}

// received reports whether a tool result the model received contains s.
func received(m *fakeModel, s string) bool {
	return strings.Contains(strings.Join(m.Results(), "\n"), s)
}

// TestHosts runs every scenario on every host, in parallel, through the
// hook command `celguard hook install` wrote: with the user's decision
// daemon (the hook starts it, and the host's calls go through it), and for
// a representative subset (runsInProcess) again deciding every event in
// the hook's own process (CELGUARD_DAEMON=off), with identical answers.
func TestHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real hosts")
	}
	celguard := celguardBinary(t)
	rec := &recorder{}
	t.Cleanup(func() { rec.finish(t) })
	for _, h := range hostsUnderTest {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			bin := hostBinary(t, h.pkg)
			for _, sc := range scenarios {
				if sc.only != nil && !slices.Contains(sc.only, h.name) {
					// The other hosts have no such event: the verdict
					// never reaches celguard there.
					rec.add(h.name, h.pkg.Version, sc.phase, sc.verdict, hooks.Capability{Support: hooks.SupportNone,
						Becomes: "nothing: the host has no hook event for the " + sc.phase + " phase", Observed: "the host has no such hook event (not run)"})
					continue
				}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					var runs []scenarioRun
					for _, daemon := range []bool{true, false} {
						if daemon && !sc.daemonRuns() || !daemon && !runsInProcess(h.name, sc) {
							continue
						}
						t.Run(modeName(daemon), func(t *testing.T) {
							r := runScenario(t, celguard, bin, h, sc, daemon)
							if t.Failed() || sc.observe == nil {
								return
							}
							// Observed here: the run's directories go with
							// this subtest.
							r.cell, r.answer = sc.observe(r.work, r.m, r.out), r.answers()
							runs = append(runs, r)
						})
					}
					if t.Failed() || len(runs) == 0 {
						return
					}
					for _, r := range runs[1:] {
						// The same answers with and without the daemon: what
						// the host did, and what the model read of celguard.
						if r.cell != runs[0].cell {
							t.Errorf("%s %s: %s did %+v, %s did %+v", h.name, sc.name, modeName(runs[0].daemon), runs[0].cell, modeName(r.daemon), r.cell)
						}
						if r.answer != runs[0].answer {
							t.Errorf("%s %s: the answers differ:\n%s: %s\n%s: %s", h.name, sc.name, modeName(runs[0].daemon), runs[0].answer, modeName(r.daemon), r.answer)
						}
					}
					t.Logf("%s %s, %d runs: %s", h.name, sc.name, len(runs), runs[0].answer)
					rec.add(h.name, h.pkg.Version, sc.phase, sc.verdict, runs[0].cell)
				})
			}
		})
	}
}

// daemonRuns reports whether the scenario runs with the decision daemon:
// not when there is no daemon to run (the hook's binary is missing, or
// the policy does not compile, on which the daemon does not start and
// every event is decided, and refused, in process).
func (sc scenario) daemonRuns() bool { return !sc.missing && !sc.broken }

// runsInProcess reports whether the scenario also runs with the daemon
// off: those with no daemon, the scenarios whose records package replay
// reads (their decision log: a hook with a decision log decides in
// process), and a block, a redaction and a halt on every host; the rest
// run with the daemon only, to keep the suite's time.
func runsInProcess(host string, sc scenario) bool {
	switch {
	case !sc.daemonRuns():
		return true
	case slices.Contains(replayHosts, host) && slices.Contains(recordScenarios, sc.name):
		return true
	}
	return slices.Contains([]string{"block", "redact", "halt"}, sc.name)
}

func modeName(daemon bool) string {
	if daemon {
		return "daemon"
	}
	return "in-process"
}

// scenarioRun is what one run of a scenario left: the work directory, the
// fake model and the host's output.
type scenarioRun struct {
	daemon bool
	work   string
	m      *fakeModel
	out    string
	// cell and answer are what was observed (observe, answers) while the
	// run's directories existed.
	cell   hooks.Capability
	answer string
}

// markers are what the model may read of celguard in a scenario.
var markers = []string{"E2E-BLOCK-REASON", "E2E-ASK-REASON", "E2E-HALT-REASON", "E2E-WARN-REASON",
	"REDACTED-BY-CELGUARD-42", "E2ESECRET", "broken.yaml:6", "approval request", "halted"}

// answers is the run's outcome in comparable form: the marker files the
// calls created and what of celguard's answers reached the model.
func (r scenarioRun) answers() string {
	var got []string
	entries, _ := os.ReadDir(r.work)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "celguard-") {
			got = append(got, "file "+e.Name())
		}
	}
	log := r.m.Log()
	for _, mk := range markers {
		if received(r.m, mk) {
			got = append(got, "result "+mk)
		} else if strings.Contains(log, mk) {
			got = append(got, "request "+mk)
		}
	}
	got = append(got, fmt.Sprintf("calls %d", r.m.Issued()))
	return strings.Join(got, ", ")
}

// runScenario runs sc on host h once, with the user's decision daemon or
// deciding in process.
func runScenario(t *testing.T, celguard, bin string, h host, sc scenario, daemon bool) scenarioRun {
	root := t.TempDir()
	home, state := filepath.Join(root, "home"), filepath.Join(root, "state")
	work := filepath.Join(root, "work")
	for _, d := range []string{home, work, filepath.Join(work, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policyFile := filepath.Join(root, "policy.yaml")
	if sc.broken {
		policyFile = filepath.Join(root, "broken.yaml")
		writeFile(t, policyFile, brokenPolicy)
	} else {
		writeFile(t, policyFile, e2ePolicy)
	}
	commands := []string{sc.command}
	if sc.then != "" {
		commands = append(commands, sc.then)
	}
	m, url := startFakeModel(t, h.api, commands...)
	m.Stream(sc.stream)
	env := append(baseEnv(home, root), h.setup(t, home, url)...)

	decisions := filepath.Join(root, "decisions.jsonl")
	args := []string{"hook", "install", h.name, "--user", "--policy", policyFile, "--state-dir", state}
	if daemon {
		// A hook with a decision log decides in process: no log here.
		t.Cleanup(func() { stopDaemons(t, state) })
	} else {
		args = append(args, "--decision-log", decisions)
		env = append(env, "CELGUARD_DAEMON=off")
	}
	if sc.missing {
		args = append(args, "--command", filepath.Join(root, "gone", "celguard"))
	}
	install := exec.Command(celguard, args...)
	install.Dir, install.Env = work, env
	installOut, err := install.CombinedOutput()
	if err != nil {
		t.Fatalf("celguard hook install %s: %v\n%s", h.name, err, installOut)
	}
	if h.afterInstall != nil {
		h.afterInstall(t, home, installOut)
	}
	if sc.stream != nil && h.name == "gemini" {
		addAfterModel(t, home)
	}
	if sc.name == "allow" || daemon {
		// Doctor runs one decision through the installed hook command: with
		// the daemon on, that call starts it, and the host's calls go
		// through it once it answers.
		checkDoctor(t, celguard, bin, h, work, env, sc.name == "allow")
	}
	if daemon {
		waitDaemon(t, state)
	}

	ctx, cancel := context.WithTimeout(context.Background(), hostRunTimeout)
	defer cancel()
	argv := h.run(bin, "Run this shell command in the current directory: "+sc.command)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = work, env
	cmd.Stdin = bytes.NewReader(nil)
	cmd.WaitDelay = 10 * time.Second
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish: %v\noutput:\n%s\nmodel requests:\n%s", h.name, ctx.Err(), out, m.Log())
	}
	if err != nil && !sc.broken {
		t.Logf("%s exited with %v", h.name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log := m.Log()
			if len(log) > 20000 {
				log = log[:10000] + "\n...\n" + log[len(log)-10000:]
			}
			t.Logf("%s output:\n%s\nmodel requests:\n%s", h.name, out, log)
		}
	})
	if daemon {
		// The daemon answered the host's hooks, in this test's state
		// directory, and it is stopped now.
		if answered := stopDaemons(t, state); answered < 1 {
			t.Errorf("no hook event of %s went through the decision daemon", h.name)
		}
		if socks, _ := filepath.Glob(filepath.Join(home, ".local", "state", "celguard", daemonwire.DirName, "*")); len(socks) > 0 {
			t.Errorf("a daemon ran in the default state directory, not the test's: %q", socks)
		}
	} else if socks, _ := filepath.Glob(filepath.Join(state, daemonwire.DirName, "*.sock")); len(socks) > 0 {
		t.Errorf("CELGUARD_DAEMON=off, and a daemon started: %q", socks)
	}
	sc.check(t, h.name, work, m, out)
	switch {
	case t.Failed() || !slices.Contains(replayHosts, h.name):
		// Package replay reads no record of this host.
	case slices.Contains(recordScenarios, sc.name) && !daemon:
		compareReplay(t, h.name, sc.name, home, policyFile, decisions)
		if *updateRecords {
			keepRecords(t, h.name, sc.name, root, home, decisions)
		}
	default:
		readRecords(t, h.name, home)
	}
	return scenarioRun{daemon: daemon, work: work, m: m, out: out}
}

// addAfterModel registers celguard's Gemini hook for AfterModel too, as
// docs/hooks.md tells users with output rules to (install does not): the
// same handler as BeforeTool's.
func addAfterModel(t *testing.T, home string) {
	t.Helper()
	path := filepath.Join(home, ".gemini", "settings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil || hooks["BeforeTool"] == nil {
		t.Fatalf("install registered no BeforeTool hook:\n%s", data)
	}
	hooks["AfterModel"] = hooks["BeforeTool"]
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(out)+"\n")
}

// baseEnv is a minimal environment: the temporary home, PATH, and nothing
// of the user's own configuration.
func baseEnv(home, root string) []string {
	env := []string{
		"HOME=" + home, "USER=e2e", "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1", "CI=1",
		"PATH=" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"TMPDIR=" + root,
	}
	return env
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, path string, want bool) {
	t.Helper()
	_, err := os.Stat(path)
	if got := err == nil; got != want {
		if want {
			t.Errorf("%s was not created: the call did not run", filepath.Base(path))
		} else {
			t.Errorf("%s was created: the call ran", filepath.Base(path))
		}
	}
}

// mustReceive checks that a tool result the model received contains want
// and none contains unwanted.
func mustReceive(t *testing.T, m *fakeModel, want, unwanted string) {
	t.Helper()
	results := m.Results()
	all := strings.Join(results, "\n")
	if !strings.Contains(all, want) {
		t.Errorf("the model never received %q; it received %d tool results:\n%s", want, len(results), all)
	}
	if unwanted != "" && strings.Contains(all, unwanted) {
		t.Errorf("the model received %q:\n%s", unwanted, all)
	}
}

// trustCodexHooks records celguard's hooks as trusted in Codex's
// config.toml, with the lines `celguard hook install codex` prints.
func trustCodexHooks(t *testing.T, home string, installOut []byte) {
	t.Helper()
	var trust []string
	in := false
	for _, line := range strings.Split(string(installOut), "\n") {
		switch {
		case strings.HasPrefix(line, "[hooks.state."):
			in = true
		case in && strings.HasPrefix(line, "trusted_hash = "):
		default:
			in = false
			continue
		}
		trust = append(trust, line)
	}
	if len(trust) == 0 {
		t.Fatalf("celguard hook install codex printed no trust lines:\n%s", installOut)
	}
	path := filepath.Join(home, ".codex", "config.toml")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + strings.Join(trust, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

// checkDoctor runs `celguard doctor HOST` on the installed hooks, with the
// host's command on PATH, and with check that it says: the hooks are registered, the installed command
// answers a real decision, the host's version is the one tested and
// (Codex) the hooks are trusted. The binary check fails
// (the test's celguard is in a temporary directory the user can write),
// so the exit code is not checked.
func checkDoctor(t *testing.T, celguard, bin string, h host, work string, env []string, check bool) {
	t.Helper()
	cmd := exec.Command(celguard, "doctor", h.name)
	cmd.Dir = work
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			e = "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + strings.TrimPrefix(e, "PATH=")
		}
		cmd.Env = append(cmd.Env, e)
	}
	outb, _ := cmd.CombinedOutput()
	out := string(outb)
	if !check {
		return
	}
	want := []string{"ok    a celguard hook for every event it needs", "ok    " + h.pkg.Bin + " " + h.pkg.Version + " (hooks tested with " + h.pkg.Version + ")",
		// The installed command, run on one ordinary call, decided it.
		"ok    the hook ran a real decision on an ordinary call"}
	if h.name == "codex" {
		want = append(want, "ok    Codex trusts every celguard hook as installed")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("celguard doctor %s does not say %q:\n%s", h.name, w, out)
		}
	}
}
