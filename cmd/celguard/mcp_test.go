package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
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

// mcpAskPolicy asks before the filesystem server writes ask.txt.
const mcpAskPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: mcp-ask
rules:
  - id: ask-for-it
    match: {tools: [mcp__fs__write_file]}
    condition: 'args.path.endsWith("ask.txt")'
    verdict: ask
    reason: writing ask.txt needs a person
`

// startMCPProxy runs `celguard mcp proxy` with args over pipes and
// connects a Go SDK client (no elicitation) to it; stop ends both and
// returns the proxy's exit code and stderr.
func startMCPProxy(t *testing.T, args ...string) (cs *mcp.ClientSession, stop func() (int, string)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, append([]string{"mcp", "proxy"}, args...), inR, outW, &stderr)
		outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	return cs, func() (int, string) {
		cs.Close()
		inW.Close()
		code := <-done
		cancel()
		return code, stderr.String()
	}
}

// TestMCPProxyApprove: an ask the client cannot put to its user is refused
// as an approval request of the proxy's state directory, naming the
// command; `celguard approve ID --state-dir DIR` from a terminal approves
// it, and the identical call then reaches the server. With a --store that
// celguard approve cannot read, the refusal says so and names no command.
func TestMCPProxyApprove(t *testing.T) {
	for _, m := range agentMarkers {
		t.Setenv(m.name, "")
	}
	oldTerm, oldAnc := stdinIsTerminal, agentAncestor
	stdinIsTerminal = func(io.Reader) bool { return true }
	agentAncestor = func() (string, int, bool) { return "", 0, false }
	t.Cleanup(func() { stdinIsTerminal, agentAncestor = oldTerm, oldAnc })
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
	pol := filepath.Join(home, "ask.yaml")
	if err := os.WriteFile(pol, []byte(mcpAskPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(home, "mcp-state")
	target := filepath.Join(root, "ask.txt")
	write := func(cs *mcp.ClientSession) (bool, string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": target, "content": "approved"}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res.IsError, b.String()
	}

	cs, stop := startMCPProxy(t, "--name", "fs", "--policy", pol, "--state-dir", stateDir, "--", bin, root)
	isErr, msg := write(cs)
	m := regexp.MustCompile(`approval request ([0-9a-f]{8})`).FindStringSubmatch(msg)
	want := "celguard approve --state-dir " + stateDir + " "
	if !isErr || m == nil || !strings.Contains(msg, want+m[1]) {
		t.Fatalf("the ask's refusal: %v %q, want a request and %q", isErr, msg, want)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("ask.txt was written before the approval: %v", err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"approve", m[1], "--state-dir", stateDir}, strings.NewReader("y\n"), &out, &errb); code != exitOK ||
		!strings.Contains(out.String(), "mcp__fs__write_file") || !strings.Contains(out.String(), "Approved "+m[1]) {
		t.Fatalf("celguard approve: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if isErr, msg := write(cs); isErr {
		t.Fatalf("the identical call after the approval: %s", msg)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "approved" {
		t.Fatalf("ask.txt = %q, %v", b, err)
	}
	if code, stderr := stop(); code != exitOK {
		t.Fatalf("celguard mcp proxy exited %d: %s", code, stderr)
	}

	os.Remove(target)
	cs, stop = startMCPProxy(t, "--name", "fs", "--policy", pol, "--store", "memory:", "--", bin, root)
	isErr, msg = write(cs)
	stop()
	if !isErr || strings.Contains(msg, "approval request") || !strings.Contains(msg, "memory: (--store), which celguard approve cannot reach") {
		t.Fatalf("with --store memory:: %v %q", isErr, msg)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("ask.txt was written: %v", err)
	}
}
