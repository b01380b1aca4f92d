package hostse2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/internal/npmhost"
)

// mcpPolicy blocks one MCP call, named as Claude Code names an MCP tool.
const mcpPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: hosts-e2e-mcp
rules:
  - id: e2e-mcp-block
    match: {tools: [mcp__fs__write_file]}
    condition: 'mcp.server(tool) == "fs" && args.path.endsWith("mcp-blocked.txt")'
    verdict: block
    reason: E2E-MCP-BLOCK-REASON the blocked file must not be written
    code: e2e_mcp_block
`

// TestClaudeCodeMCP: Claude Code, with the reference filesystem server in
// the project's .mcp.json, is made to call its write_file on a file the
// policy forbids, twice: once guarded by celguard's hook in front of the
// server itself, once with no hook and the server behind `celguard mcp
// proxy` in the same .mcp.json. Both refuse the call by the same rule
// before it reaches the server (the file is never written), the model
// reads the rule's reason both times, and the two decision logs hold the
// same decision of the same call.
func TestClaudeCodeMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real hosts")
	}
	celguard := celguardBinary(t)
	claude := hostBinary(t, claudePkg)
	fsBin, err := npmhost.Install(npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	type record struct {
		Phase   string `json:"phase"`
		Tool    string `json:"tool"`
		Verdict string `json:"verdict"`
		RuleID  string `json:"rule_id"`
		Code    string `json:"code"`
		Reason  string `json:"reason"`
		Path    string
	}
	decide := func(t *testing.T, viaProxy bool) record {
		root := t.TempDir()
		home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
		for _, d := range []string{home, work} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		work, err := filepath.EvalSymlinks(work)
		if err != nil {
			t.Fatal(err)
		}
		policyFile, decisions := filepath.Join(root, "policy.yaml"), filepath.Join(root, "decisions.jsonl")
		writeFile(t, policyFile, mcpPolicy)
		blocked := filepath.Join(work, "mcp-blocked.txt")
		m, url := startFakeModel(t, "anthropic", "")
		m.CallTool("mcp__fs__write_file", map[string]any{"path": blocked, "content": "x"})
		// The MCP tools in the request itself, not behind ToolSearch.
		env := append(baseEnv(home, root), append(hostsUnderTest[0].setup(t, home, url), "ENABLE_TOOL_SEARCH=false",
			// A loaded machine starts the proxy (and its server) slowly.
			"MCP_TIMEOUT=120000")...)

		server := map[string]any{"command": fsBin, "args": []string{work}}
		if viaProxy {
			server = map[string]any{"command": celguard, "args": []string{"mcp", "proxy", "--name", "fs", "--policy", policyFile,
				"--decision-log", decisions, "--", fsBin, work}}
		} else {
			install := exec.Command(celguard, "hook", "install", "claude-code", "--user", "--policy", policyFile,
				"--state-dir", filepath.Join(root, "state"), "--decision-log", decisions)
			install.Dir, install.Env = work, env
			if out, err := install.CombinedOutput(); err != nil {
				t.Fatalf("celguard hook install: %v\n%s", err, out)
			}
		}
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fs": server}})
		writeFile(t, filepath.Join(work, ".mcp.json"), string(cfg))
		// Project servers run once approved; headless, the project's
		// settings approve them.
		writeFile(t, filepath.Join(work, ".claude", "settings.json"), `{"enableAllProjectMcpServers": true}`+"\n")

		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, "-p", "Write x into mcp-blocked.txt with the fs server's write_file tool.",
			"--allowedTools", "mcp__fs__write_file", "--model", "claude-sonnet-4-5", "--output-format", "text")
		cmd.Dir, cmd.Env = work, env
		cmd.Stdin = bytes.NewReader(nil)
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("claude did not finish: %v\n%s\nmodel requests:\n%s", ctx.Err(), out, m.Log())
		}
		if err != nil {
			t.Logf("claude exited with %v", err)
		}
		if _, err := os.Stat(blocked); !os.IsNotExist(err) {
			t.Fatalf("the blocked file was written (proxy %v): %v\n%s", viaProxy, err, out)
		}
		results := strings.Join(m.Results(), "\n")
		if !strings.Contains(results, "E2E-MCP-BLOCK-REASON") {
			log := m.Log()
			if i := strings.Index(log, "mcp__fs__write_file"); i >= 0 {
				log = log[max(0, i-200):min(len(log), i+400)]
			} else if len(log) > 3000 {
				log = log[:3000]
			}
			t.Fatalf("the model did not read the rule's reason (proxy %v): %q\noutput:\n%s\nmodel requests:\n%s", viaProxy, results, out, log)
		}
		f, err := os.Open(decisions)
		if err != nil {
			t.Fatalf("decision log (proxy %v): %v\n%s", viaProxy, err, out)
		}
		defer f.Close()
		var got []record
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r record
			var raw struct {
				Args map[string]any `json:"args"`
			}
			if json.Unmarshal(sc.Bytes(), &r) == nil && json.Unmarshal(sc.Bytes(), &raw) == nil && r.Tool == "mcp__fs__write_file" && r.Phase == "before" {
				r.Path, _ = raw.Args["path"].(string)
				got = append(got, r)
			}
		}
		if len(got) != 1 {
			t.Fatalf("decisions of the call (proxy %v): %+v", viaProxy, got)
		}
		return got[0]
	}
	hook := decide(t, false)
	proxy := decide(t, true)
	if hook.Verdict != "block" || hook.RuleID != "e2e-mcp-block" || hook.Code != "e2e_mcp_block" {
		t.Fatalf("the hook's decision: %+v", hook)
	}
	hook.Path, proxy.Path = filepath.Base(hook.Path), filepath.Base(proxy.Path)
	if hook != proxy {
		t.Fatalf("the hook and the proxy decided the same call apart:\nhook:  %+v\nproxy: %+v", hook, proxy)
	}
}
