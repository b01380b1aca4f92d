package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
)

// TestGoAPIDecidesAsTheCLI is issue 16, point 3: the same call through
// package celguard (Load, then session.Before, with the approver that
// defers asks as the command line's does) and through `celguard eval`
// gives the same Decision, for the explicit-files selection and for the
// layers. README.md's Go snippet is this path.
func TestGoAPIDecidesAsTheCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	team := "../../testdata/team"
	calls := []eval.Call{
		{Tool: "Bash", Args: map[string]any{"command": "git push origin main"}},
		{Tool: "Bash", Args: map[string]any{"command": "make", "timeout": 3600000.0}},
		{Tool: "Bash", Args: map[string]any{"command": "cd /tmp && sudo rm -fr /"}},
		{Tool: "Read", Args: map[string]any{"file_path": "/home/u/.ssh/id_rsa"}, Cwd: "/home/u/w"},
		{Tool: "Write", Args: map[string]any{"file_path": "/etc/passwd", "content": "x"}, Cwd: "/home/u/w"},
		{Tool: "mcp__db__query", Args: map[string]any{"sql": "select 1"}},
	}
	selections := []struct {
		name string
		args []string
		opts []celguard.Option
	}{
		{"--policy alone", []string{"--policy", team},
			[]celguard.Option{celguard.WithPolicies(team)}},
		{"the layers", []string{"--user-dir", "-", "--project-dir", "-"},
			[]celguard.Option{celguard.WithUserDir("-"), celguard.WithProjectDir("-")}},
		{"the layers and --policy", []string{"--user-dir", "-", "--project-dir", "-", "--policy", team},
			[]celguard.Option{celguard.WithUserDir("-"), celguard.WithProjectDir("-"), celguard.WithPolicies(team)}},
		{"--bundle minimal", []string{"--bundle", "minimal", "--project-dir", "-"},
			[]celguard.Option{celguard.WithBundle("minimal"), celguard.WithProjectDir("-")}},
	}
	ctx := context.Background()
	for _, sel := range selections {
		t.Run(sel.name, func(t *testing.T) {
			guard, err := celguard.Load(ctx, append(sel.opts, celguard.WithApprover(celguard.DeferAsks))...)
			require.NoError(t, err)
			for _, call := range calls {
				d, err := guard.NewSession("cli", nil).Before(ctx, call)
				require.NoError(t, err)
				api, err := json.Marshal(d)
				require.NoError(t, err)

				in, err := json.Marshal(call)
				require.NoError(t, err)
				var stdout, stderr bytes.Buffer
				code := run(append([]string{"eval"}, sel.args...), bytes.NewReader(in), &stdout, &stderr)
				require.Equal(t, exitOK, code, "celguard eval: %s", stderr.String())
				var cli eval.Decision
				require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &cli), stdout.String())
				// The CLI's decision carries its audit record, with the
				// digest of the set the Guard decides with; the rest is
				// the Go API's decision.
				assert.Regexp(t, `^[0-9a-f]{32}$`, cli.DecisionID)
				assert.False(t, cli.Time.IsZero())
				assert.Equal(t, guard.Digest(), cli.PolicyDigest)
				assert.Equal(t, "cli", cli.SessionID)
				cli.DecisionID, cli.Time, cli.PolicyDigest, cli.SessionID = "", time.Time{}, "", ""
				want, err := json.Marshal(cli)
				require.NoError(t, err)
				assert.JSONEq(t, string(want), string(api), "%s %v", call.Tool, call.Args)
			}
		})
	}
}

// parityPolicy has a rule a judge decides, a block and a counter-based
// warn: judges, monitor mode and counters all show in the decisions.
const parityPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: parity
counters:
  - name: calls
    phase: before
    increment_when: 'true'
rules:
  - id: judged-deploy
    match: {tools: [Bash]}
    condition: 'command.startsWith("deploy ")'
    verdict: ask
    judge: reviewer
    reason: deploys are reviewed
  - id: no-rm
    match: {tools: [Bash]}
    condition: 'command.startsWith("rm ")'
    verdict: block
    reason: no rm
    code: no_rm
  - id: busy
    condition: 'counters.calls >= 3'
    verdict: warn
    reason: a busy session
`

// parityJudges is a command judge that refuses deploys to prod.
const parityJudges = `{"judges": {"reviewer": {"type": "command", "timeout": "5s", "command": ["/bin/sh", "-c", "read -r line; case \"$line\" in *prod*) echo '{\"verdict\":\"deny\",\"reason\":\"not prod\"}';; *) echo '{\"verdict\":\"allow\"}';; esac"]}}}`

// parityCalls is the one call stream every path decides.
var parityCalls = []string{"ls", "rm -r build", "deploy prod", "deploy staging", "make"}

// TestJudgesSinksAndMonitorAlikeEverywhere is issue 24, point 1's done-when:
// one policy, one call stream, decided through `celguard eval`, `celguard
// hook`, `celguard serve` (the real binary) and the Go API (package
// celguard), enforcing and in monitor mode, each with a decision log: the
// judge is asked alike, the decisions are alike, and the decision logs
// record the same decisions under the same policy digest.
func TestJudgesSinksAndMonitorAlikeEverywhere(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	dir := t.TempDir()
	pol, userDir := filepath.Join(dir, "parity.yaml"), filepath.Join(dir, "user")
	require.NoError(t, os.WriteFile(pol, []byte(parityPolicy), 0o644))
	require.NoError(t, os.Mkdir(userDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(userDir, "judges.json"), []byte(parityJudges), 0o644))
	sel := []string{"--policy", pol, "--bundle", "none", "--user-dir", userDir, "--project-dir", "-"}
	ctx := context.Background()
	call := func(cmd string) eval.Call {
		return eval.Call{Tool: "Bash", Args: map[string]any{"command": cmd}, Cwd: "/srv/app"}
	}

	for _, monitor := range []bool{false, true} {
		t.Run(fmt.Sprintf("monitor=%v", monitor), func(t *testing.T) {
			logs := t.TempDir()
			logOf := func(path string) string { return filepath.Join(logs, path+".jsonl") }
			flags := func(path string) []string {
				out := append(slices.Clone(sel), "--decision-log", logOf(path))
				if monitor {
					out = append(out, "--monitor")
				}
				return out
			}
			decisions := map[string][]eval.Decision{}

			// eval: the stream on stdin.
			var stream bytes.Buffer
			for _, c := range parityCalls {
				b, _ := json.Marshal(map[string]any{"event": "before", "tool": "Bash", "args": map[string]any{"command": c}, "cwd": "/srv/app"})
				stream.Write(append(b, '\n'))
			}
			var stdout, stderr bytes.Buffer
			require.Equal(t, exitOK, run(append([]string{"eval"}, flags("eval")...), &stream, &stdout, &stderr), stderr.String())
			for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				var d eval.Decision
				require.NoError(t, json.Unmarshal([]byte(line), &d), line)
				decisions["eval"] = append(decisions["eval"], d)
			}

			// hook: one process per event, one session, state in a directory.
			state := t.TempDir()
			for i, c := range parityCalls {
				ev, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "parity", "cwd": "/srv/app",
					"tool_name": "Bash", "tool_input": map[string]any{"command": c}, "tool_use_id": fmt.Sprintf("toolu_%d", i)})
				stdout.Reset()
				stderr.Reset()
				code := run(append([]string{"hook", "claude-code", "--state-dir", state}, flags("hook")...), bytes.NewReader(ev), &stdout, &stderr)
				require.Contains(t, []int{0, 2}, code, stderr.String())
			}

			// serve: the real binary, the session API.
			srv := startServe(t, append([]string{"--listen", "127.0.0.1:0", "--reload-interval", "0"}, flags("serve")...)...)
			for _, c := range parityCalls {
				b, _ := json.Marshal(call(c))
				res, err := http.Post(srv.url+"/v1/sessions/parity/before", "application/json", bytes.NewReader(b))
				require.NoError(t, err)
				var d eval.Decision
				require.NoError(t, json.NewDecoder(res.Body).Decode(&d))
				res.Body.Close()
				decisions["serve"] = append(decisions["serve"], d)
			}
			srv.stop(t)

			// The Go API.
			opts := []celguard.Option{celguard.WithPolicies(pol), celguard.WithBundle("none"), celguard.WithUserDir(userDir),
				celguard.WithProjectDir("-"), celguard.WithApprover(celguard.DeferAsks),
				celguard.WithDecisionLog(logOf("go"), decisionlog.FileSinkOptions{})}
			if monitor {
				opts = append(opts, celguard.WithMonitor())
			}
			guard, err := celguard.Load(ctx, opts...)
			require.NoError(t, err)
			sess := guard.NewSession("parity", nil)
			for _, c := range parityCalls {
				d, err := sess.Before(ctx, call(c))
				require.NoError(t, err)
				decisions["go"] = append(decisions["go"], d)
			}

			// The decisions: what decided, the judge's word, the monitored rule.
			type outcome struct {
				Verdict   string
				Rule      string
				Code      string
				Judge     *eval.JudgeRecord
				Monitored *eval.Monitored
			}
			outcomes := map[string][]outcome{}
			for path, ds := range decisions {
				for _, d := range ds {
					outcomes[path] = append(outcomes[path], outcome{d.Verdict.String(), d.RuleID, d.Code, d.Judge, d.Monitored})
				}
			}
			require.Len(t, outcomes["eval"], len(parityCalls))
			assert.Equal(t, outcomes["eval"], outcomes["serve"], "serve decides as eval")
			assert.Equal(t, outcomes["eval"], outcomes["go"], "the Go API decides as eval")
			judged := outcomes["eval"][2]
			if monitor {
				assert.Equal(t, "allow", outcomes["eval"][1].Verdict, "monitor mode reports rm, the default verdict decides")
				require.NotNil(t, outcomes["eval"][1].Monitored)
			} else {
				assert.Equal(t, "block", outcomes["eval"][1].Verdict)
				assert.Equal(t, "block", judged.Verdict, "the judge refused deploy prod")
				require.NotNil(t, judged.Judge)
				assert.Equal(t, "not prod", judged.Judge.Reason)
				assert.Equal(t, "allow", outcomes["eval"][3].Verdict, "the judge allowed deploy staging")
			}

			// The decision logs: every path records the same decisions, under
			// the same policy digest.
			records := map[string][]map[string]any{}
			for _, path := range []string{"eval", "hook", "serve", "go"} {
				data, err := os.ReadFile(logOf(path))
				require.NoError(t, err, path)
				for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					var rec map[string]any
					require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
					// who is per process by design (the hook names its
					// agent host; serve and the Go API name none): checked
					// below, apart from the decisions.
					if path == "hook" {
						who, _ := rec["who"].(map[string]any)
						assert.Equal(t, "claude-code", who["agent_host"], "the hook's records name its host")
					}
					for _, k := range []string{"decision_id", "time", "session_id", "call_id", "agent", "who"} {
						delete(rec, k)
					}
					records[path] = append(records[path], rec)
				}
			}
			require.Len(t, records["eval"], len(parityCalls))
			assert.Equal(t, guard.Digest(), records["eval"][0]["policy_digest"])
			for _, path := range []string{"hook", "serve", "go"} {
				assert.Equal(t, records["eval"], records[path], "%s's decision log against eval's", path)
			}
		})
	}
}
