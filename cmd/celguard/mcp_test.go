package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/internal/npmhost"
)

// mcpParityPolicy names the filesystem server's write_file as a hook sees
// it in Claude Code (mcp__fs__write_file) and reads mcp.server/mcp.tool.
const mcpParityPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: mcp-parity
rules:
  - id: no-blocked-file
    match: {tools: [mcp__fs__write_file]}
    condition: 'mcp.server(tool) == "fs" && mcp.tool(tool) == "write_file" && args.path.endsWith("blocked.txt")'
    verdict: block
    reason: writing blocked.txt is not allowed
    code: test_blocked
`

// TestMCPProxyCommand runs `celguard mcp proxy` as a client's mcpServers
// entry runs it, in front of the real filesystem server from npm, and
// decides the same write_file call through Claude Code's hook: both
// refuse it by the same rule, and the file is never written.
func TestMCPProxyCommand(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	bin, err := npmhost.Install(npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(home, "mcp.yaml")
	if err := os.WriteFile(pol, []byte(mcpParityPolicy), 0o644); err != nil {
		t.Fatal(err)
	}

	// The proxy, over a pair of pipes standing for its stdin and stdout.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"mcp", "proxy", "--name", "fs", "--policy", pol, "--", bin, root}, inR, outW, &stderr)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	blocked := filepath.Join(root, "blocked.txt")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": blocked, "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var proxyText string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			proxyText += tc.Text
		}
	}
	okPath := filepath.Join(root, "ok.txt")
	res2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": okPath, "content": "fine"}})
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != exitOK {
		t.Errorf("celguard mcp proxy exited %d: %s", code, stderr.String())
	}
	cancel()
	if !res.IsError || !strings.Contains(proxyText, "rule no-blocked-file") || !strings.Contains(proxyText, "code test_blocked") {
		t.Fatalf("proxy: want the refusal of rule no-blocked-file, got %v %q", res.IsError, proxyText)
	}
	if _, err := os.Stat(blocked); !os.IsNotExist(err) {
		t.Fatalf("blocked.txt was written through the proxy: %v", err)
	}
	if res2.IsError {
		t.Fatalf("proxy refused an allowed write: %+v", res2.Content)
	}
	if b, err := os.ReadFile(okPath); err != nil || string(b) != "fine" {
		t.Fatalf("ok.txt = %q, %v", b, err)
	}

	// The same call through Claude Code's PreToolUse hook.
	ev, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "parity", "cwd": root,
		"tool_name": "mcp__fs__write_file", "tool_input": map[string]any{"path": blocked, "content": "x"}, "tool_use_id": "toolu_1"})
	var stdout, herr bytes.Buffer
	code := run([]string{"hook", "claude-code", "--state-dir", filepath.Join(home, "state"), "--policy", pol}, bytes.NewReader(ev), &stdout, &herr)
	if code != exitOK {
		t.Fatalf("hook exited %d: %s", code, herr.String())
	}
	var out struct {
		HSO struct {
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("hook answer %q: %v", stdout.String(), err)
	}
	if out.HSO.Decision != "deny" || !strings.Contains(out.HSO.Reason, "rule no-blocked-file") {
		t.Fatalf("hook: want deny by rule no-blocked-file, got %s", stdout.String())
	}
}
