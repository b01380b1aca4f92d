package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/trust"
)

// deployPolicy is the project policy of the parity repositories: it blocks
// what the built-in policies let through.
const deployPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: deploy
rules:
  - id: no-deploy
    match: {tools: [Bash, Shell, run_shell_command, shell, bash]}
    condition: 'command.contains("make deploy")'
    verdict: block
    reason: Deploys go through the release pipeline.
    code: deploy_refused
`

// parityRepos makes three repositories under base: trusted (its .celguard/
// trusted in the user's trust store), untrusted (the same policy, not
// trusted) and plain (no .celguard/). It returns their directories.
func parityRepos(t *testing.T, base string) map[string]string {
	t.Helper()
	repos := map[string]string{}
	for _, name := range []string{"trusted", "untrusted", "plain"} {
		dir := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
		if name != "plain" {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, ".celguard"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".celguard", "deploy.yaml"), []byte(deployPolicy), 0o644))
		}
		repos[name] = dir
	}
	trustProject(t, repos["trusted"])
	return repos
}

// trustProject records dir's project layer in the user's trust store, as
// `celguard trust` does once the user says yes.
func trustProject(t *testing.T, dir string) {
	t.Helper()
	path, err := trust.DefaultPath()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	store, err := trust.Load(path)
	require.NoError(t, err)
	proj, err := policies.ProjectLayer(policies.Options{WorkDir: dir, TrustFile: path})
	require.NoError(t, err)
	require.NotNil(t, proj)
	store.Set(trust.Entry{Root: proj.Root, Digest: proj.Digest, Files: proj.Files, TrustedAt: time.Now().UTC().Truncate(time.Second)})
	require.NoError(t, store.Save())
}

// parityEvents are the hooks' golden events of host, each with its working
// directory set to dir and its session id to session, and a call of make
// deploy (a shell command as the host sends it), in file name order.
func parityEvents(t *testing.T, testdata, host, dir, session string) []parityEvent {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata, host, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	if raceEnabled {
		// Under the race detector each in-process hook run compiles and
		// decides the whole bundle many times slower (the full set took
		// over 15 minutes): every fourth event, deterministically. Without
		// -race every event runs.
		var sample []string
		for i, f := range files {
			if i%4 == 0 {
				sample = append(sample, f)
			}
		}
		files = sample
	}
	var out []parityEvent
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			if _, ok := m["cwd"]; ok || host != "cursor" {
				m["cwd"] = dir
			}
			if _, ok := m["workspace_roots"]; ok {
				m["workspace_roots"] = []any{dir}
			}
			for _, k := range []string{"session_id", "conversation_id"} {
				if _, ok := m[k]; ok {
					m[k] = session
				}
			}
			data, _ = json.Marshal(m)
		}
		out = append(out, parityEvent{filepath.Base(f), data})
	}
	deploy := map[string]any{"session_id": session + "-deploy", "cwd": dir, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "make deploy"}, "tool_use_id": "toolu_deploy"}
	switch host {
	case "gemini":
		deploy["hook_event_name"], deploy["tool_name"] = "BeforeTool", "run_shell_command"
	case "opencode":
		// celguard's OpenCode plugin names OpenCode's tools.
		deploy["hook_event_name"], deploy["tool_name"] = "tool.execute.before", "bash"
	case "cursor":
		deploy = map[string]any{"conversation_id": session + "-deploy", "hook_event_name": "beforeShellExecution", "command": "make deploy",
			"cwd": dir, "workspace_roots": []any{dir}}
	}
	data, _ := json.Marshal(deploy)
	return append(out, parityEvent{"zz-make-deploy.json", data})
}

// parityEvent is one event of parityEvents, named by its file.
type parityEvent struct {
	file string
	data []byte
}

// approvalID is an approval request's id in an answer: random per request.
var approvalID = regexp.MustCompile(`\b[0-9a-f]{8,}\b|[a-z]+-[a-z]+-[a-z]+-[0-9]+`)

// TestServeDecidesEachRepositoryAsItsHook is issue 26's parity of one
// server and many repositories: the hooks' golden events of every host,
// sent from three repositories (one whose .celguard/ the user trusts, one
// with the same policy untrusted, one without), answered by `celguard hook`
// run in each repository and by one `celguard serve` started elsewhere,
// give the same answers; make deploy, which only the repositories' policy
// blocks, is blocked in both repositories by both, and allowed in the third.
func TestServeDecidesEachRepositoryAsItsHook(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	testdata, err := filepath.Abs(filepath.Join("..", "..", "hooks", "testdata"))
	require.NoError(t, err)
	pol := filepath.Join(testdata, "policy.yaml")
	sel := []string{"--policy", pol, "--bundle", "recommended"}
	repos := parityRepos(t, t.TempDir())

	// The server: started in a directory of no repository.
	t.Chdir(t.TempDir())
	var sp serveParams
	sp.policies.paths, sp.policies.bundle = []string{pol}, "recommended"
	sp.listen = "127.0.0.1:0"
	// The test compares answers, not speed: under the race detector on a
	// loaded CI machine a decision that first reaches a phase's rules (their
	// expressions are decoded then) can pass serve's 5 s default and be
	// answered deadline_exceeded while the in-process hook, with its own
	// clock, decides (the CI run at c2516d2 saw it twice).
	sp.timeout = time.Minute
	cfg, err := sp.config(nil)
	require.NoError(t, err)
	cfg.Engine.HostFS = true // one machine: the hook's file system is the server's
	srv, err := serve.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, host := range hooks.Hosts() {
		for name, dir := range repos {
			t.Run(host+"/"+name, func(t *testing.T) {
				t.Chdir(dir)
				state := t.TempDir()
				for _, pe := range parityEvents(t, testdata, host, dir, host+"-"+name) {
					file, ev := pe.file, pe.data
					var stdout, stderr bytes.Buffer
					code := run(append([]string{"hook", host, "--state-dir", state}, sel...), bytes.NewReader(ev), &stdout, &stderr)
					res, err := http.Post(ts.URL+"/v1/hooks/"+host+"?form=command", "application/json", bytes.NewReader(ev))
					require.NoError(t, err)
					var a serve.CommandAnswer
					require.NoError(t, json.NewDecoder(res.Body).Decode(&a))
					res.Body.Close()
					hookOut, srvOut := approvalID.ReplaceAllString(stdout.String(), "ID"), approvalID.ReplaceAllString(a.Stdout, "ID")
					if strings.Contains(hookOut, "celguard approve") || strings.Contains(srvOut, "approvals are disabled") {
						// An ask a host cannot put to its user: the hook names
						// its approve command, a server without an operator
						// token says approvals are disabled. The verdict is
						// the same.
						assert.Equal(t, code, a.Exit, "%s: the exit code", file)
						continue
					}
					assert.Equal(t, code, a.Exit, "%s: the exit code (hook stderr %s; server stderr %s)", file, stderr.String(), a.Stderr)
					assert.JSONEq(t, orNull(hookOut), orNull(srvOut), "%s: stdout", file)
					if file == "zz-make-deploy.json" {
						blocked := code == 2 || strings.Contains(hookOut, "deploy_refused") || strings.Contains(hookOut, "Deploys go through")
						assert.Equal(t, name != "plain", blocked, "%s: make deploy in %s: %s %s", host, name, hookOut, stderr.String())
					}
				}
			})
		}
	}
	assert.Len(t, srv.Guard().Projects(), 3, "one compiled set per repository")
}

// orNull is s, or JSON null when s is empty (an answer with no stdout).
func orNull(s string) string {
	if strings.TrimSpace(s) == "" {
		return "null"
	}
	return s
}

// TestServeSessionAPIDecidesInTheCallsProject: a session API call is
// decided with the project layer of its own working directory, as the
// hook endpoints decide, not with the server's directory's: make deploy,
// which only the repositories' policy blocks, is blocked from the trusted
// and the untrusted repository, allowed from the plain one and from a
// directory that is not on this machine, in one session.
func TestServeSessionAPIDecidesInTheCallsProject(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	repos := parityRepos(t, t.TempDir())
	t.Chdir(t.TempDir())
	var sp serveParams
	sp.policies.bundle = "recommended"
	sp.listen = "127.0.0.1:0"
	sp.timeout = time.Minute // answers, not speed (TestServeDecidesEachRepositoryAsItsHook)
	cfg, err := sp.config(nil)
	require.NoError(t, err)
	cfg.Engine.HostFS = true
	srv, err := serve.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, c := range []struct {
		cwd     string
		blocked bool
	}{{repos["trusted"], true}, {repos["plain"], false}, {repos["untrusted"], true}, {"/nonexistent/elsewhere", false}, {"", false}} {
		body, _ := json.Marshal(map[string]any{"tool": "Bash", "args": map[string]any{"command": "make deploy"}, "cwd": c.cwd})
		res, err := http.Post(ts.URL+"/v1/sessions/api-projects/before", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		var d struct {
			Verdict string `json:"verdict"`
			Code    string `json:"code"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&d))
		res.Body.Close()
		assert.Equal(t, c.blocked, d.Code == "deploy_refused", "make deploy in %q: %+v", c.cwd, d)
	}
}
