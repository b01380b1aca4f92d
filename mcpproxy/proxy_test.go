package mcpproxy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/mcpproxy"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/store"
	"github.com/celguard/celguard/store/statedir"
)

// filesystemServer is the reference MCP filesystem server the tests run
// as the upstream, installed from npm into the hosts' cache.
var filesystemServer = npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"}

// testPolicy decides the filesystem server's calls as a hook would decide
// the same calls named mcp__fs__TOOL.
const testPolicy = `apiVersion: celguard.dev/v1
kind: Policy
name: mcp-proxy-test
rules:
  - id: no-blocked-file
    match: {tools: [mcp__fs__write_file]}
    condition: 'mcp.server(tool) == "fs" && mcp.tool(tool) == "write_file" && args.path.endsWith("blocked.txt")'
    verdict: block
    reason: writing blocked.txt is not allowed
    code: test_blocked
  - id: drafts-go-elsewhere
    match: {tools: [mcp__fs__write_file]}
    condition: 'args.path.endsWith("draft.txt")'
    verdict: modify
    modify:
      set: {path: 'regex.replace(args.path, "draft\\.txt$", "moved.txt")'}
  - id: ask-for-approved
    match: {tools: [mcp__fs__write_file]}
    condition: 'args.path.endsWith("ask.txt")'
    verdict: ask
    reason: writing ask.txt needs approval
  - id: redact-secret
    phase: after
    match: {tools: [mcp__fs__read_file, mcp__fs__read_text_file]}
    condition: 'has(result.content) && string(result.content).contains("SECRET-")'
    verdict: modify
    modify:
      content: 'regex.replace(string(result.content), "SECRET-[0-9]+", "[REDACTED]")'
`

// engineConfig is a composition root reading testPolicy alone: no user,
// project or administrator files of this machine.
func engineConfig(t testing.TB) celguard.Config {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.yaml")
	if err := os.WriteFile(p, []byte(testPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	return celguard.Config{Policies: policies.Options{Explicit: []string{p}}, JudgeFiles: []string{}, BundleFiles: []string{}}
}

// upstreamCmds makes the filesystem server's commands over root and keeps
// the last one, so that a test can kill it.
type upstreamCmds struct {
	bin, root string
	mu        sync.Mutex
	last      *exec.Cmd
	started   int
}

func (u *upstreamCmds) transport() mcp.Transport {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.last = exec.Command(u.bin, u.root)
	u.started++
	return &mcp.CommandTransport{Command: u.last}
}

// connect starts a proxy over cfg and connects a Go SDK client to it.
func connect(t testing.TB, cfg mcpproxy.Config, copts *mcp.ClientOptions) (*mcpproxy.Proxy, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := mcpproxy.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		p.Close()
	})
	return p, cs
}

func filesystemUpstream(t *testing.T) *upstreamCmds {
	t.Helper()
	bin, err := npmhost.Install(filesystemServer)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &upstreamCmds{bin: bin, root: root}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestFilesystemServer(t *testing.T) {
	up := filesystemUpstream(t)
	_, cs := connect(t, mcpproxy.Config{Name: "fs", Upstream: up.transport, Engine: engineConfig(t)}, nil)

	t.Run("tools/list passes the upstream's tools through", func(t *testing.T) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, tl := range res.Tools {
			names[tl.Name] = true
		}
		for _, want := range []string{"write_file", "read_file", "list_directory"} {
			if !names[want] {
				t.Errorf("tools/list lacks %s: %v", want, names)
			}
		}
		// A result a rule may rewrite is text alone: its tool is offered
		// without an output schema, which a strict client would check.
		for _, tl := range res.Tools {
			if (tl.Name == "read_text_file" || tl.Name == "read_file") && tl.OutputSchema != nil {
				t.Errorf("%s is offered with its output schema, and the policy may rewrite its result", tl.Name)
			}
		}
	})

	t.Run("an allowed write reaches the server", func(t *testing.T) {
		p := filepath.Join(up.root, "ok.txt")
		res := call(t, cs, "write_file", map[string]any{"path": p, "content": "hello"})
		if res.IsError {
			t.Fatalf("refused: %s", text(res))
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "hello" {
			t.Fatalf("ok.txt = %q, %v", b, err)
		}
	})

	t.Run("a blocked write never reaches the server", func(t *testing.T) {
		p := filepath.Join(up.root, "blocked.txt")
		res := call(t, cs, "write_file", map[string]any{"path": p, "content": "x"})
		if !res.IsError || !strings.Contains(text(res), "rule no-blocked-file") || !strings.Contains(text(res), "code test_blocked") {
			t.Fatalf("want a refusal naming the rule and code, got %v %q", res.IsError, text(res))
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("blocked.txt exists after the refusal: %v", err)
		}
	})

	t.Run("a modify rewrites the path the server sees", func(t *testing.T) {
		draft, moved := filepath.Join(up.root, "draft.txt"), filepath.Join(up.root, "moved.txt")
		res := call(t, cs, "write_file", map[string]any{"path": draft, "content": "rewritten"})
		if res.IsError {
			t.Fatalf("refused: %s", text(res))
		}
		if _, err := os.Stat(draft); !os.IsNotExist(err) {
			t.Fatalf("draft.txt was written: %v", err)
		}
		if b, err := os.ReadFile(moved); err != nil || string(b) != "rewritten" {
			t.Fatalf("moved.txt = %q, %v", b, err)
		}
	})

	t.Run("an ask without elicitation is refused with the way to approve it", func(t *testing.T) {
		p := filepath.Join(up.root, "ask.txt")
		res := call(t, cs, "write_file", map[string]any{"path": p, "content": "x"})
		if !res.IsError || !strings.Contains(text(res), "needs approval") || !strings.Contains(text(res), "declares no elicitation") || !strings.Contains(text(res), "no approval can let it run") {
			t.Fatalf("want an approval refusal, got %v %q", res.IsError, text(res))
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("ask.txt exists after the refusal: %v", err)
		}
	})

	t.Run("a redaction removes the secret from read_file", func(t *testing.T) {
		p := filepath.Join(up.root, "creds.txt")
		if err := os.WriteFile(p, []byte("user=alice\ntoken=SECRET-123456\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"read_file", "read_text_file"} {
			res := call(t, cs, tool, map[string]any{"path": p})
			got := text(res)
			if res.IsError || strings.Contains(got, "SECRET-") || !strings.Contains(got, "token=[REDACTED]") || !strings.Contains(got, "user=alice") {
				t.Errorf("%s: want the secret redacted and the rest kept, got %v %q", tool, res.IsError, got)
			}
			if res.StructuredContent != nil {
				t.Errorf("%s: the structured copy of a redacted result was passed on: %v", tool, res.StructuredContent)
			}
		}
	})

	t.Run("an upstream that dies fails the call closed and the proxy keeps serving", func(t *testing.T) {
		up.mu.Lock()
		cmd := up.last
		up.mu.Unlock()
		// SIGKILL: the server runs no more code once Kill returns. The
		// SDK's transport reaps it (Cmd.Wait) when the proxy drops it.
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(up.root, "after-death.txt")
		res := call(t, cs, "write_file", map[string]any{"path": p, "content": "x"})
		if !res.IsError || !strings.Contains(text(res), mcpproxy.CodeUpstreamFailed) {
			t.Fatalf("want a fail-closed refusal, got %v %q", res.IsError, text(res))
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("after-death.txt exists: %v", err)
		}
		res = call(t, cs, "write_file", map[string]any{"path": p, "content": "again"})
		if res.IsError {
			t.Fatalf("the next call was refused: %s", text(res))
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "again" {
			t.Fatalf("after-death.txt = %q, %v", b, err)
		}
	})
}

// TestUpstreamHangs: an upstream that does not answer within CallTimeout
// fails that call closed; the others are served.
func TestUpstreamHangs(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	type in struct {
		Hang bool `json:"hang"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "work"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		if a.Hang {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	upstream := func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = srv.Run(ctx, st) }()
		return ct
	}
	_, cs := connect(t, mcpproxy.Config{Name: "slow", Upstream: upstream, Engine: engineConfig(t), CallTimeout: 200 * time.Millisecond}, nil)
	res := call(t, cs, "work", map[string]any{"hang": true})
	if !res.IsError || !strings.Contains(text(res), mcpproxy.CodeUpstreamFailed) {
		t.Fatalf("want a fail-closed refusal, got %v %q", res.IsError, text(res))
	}
	res = call(t, cs, "work", map[string]any{"hang": false})
	if res.IsError || text(res) != "done" {
		t.Fatalf("the next call: %v %q", res.IsError, text(res))
	}
}

// TestElicitation: an ask is put to the user through MCP elicitation when
// the client declares it; the call runs only when the user approves.
func TestElicitation(t *testing.T) {
	up := filesystemUpstream(t)
	var asked []string
	approve := true
	handler := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if approve {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	_, cs := connect(t, mcpproxy.Config{Name: "fs", Upstream: up.transport, Engine: engineConfig(t)}, &mcp.ClientOptions{ElicitationHandler: handler})
	p := filepath.Join(up.root, "ask.txt")
	res := call(t, cs, "write_file", map[string]any{"path": p, "content": "approved"})
	if res.IsError {
		t.Fatalf("an approved ask was refused: %s", text(res))
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "approved" {
		t.Fatalf("ask.txt = %q, %v", b, err)
	}
	approve = false
	q := filepath.Join(up.root, "sub-ask.txt")
	res = call(t, cs, "write_file", map[string]any{"path": q, "content": "declined"})
	if !res.IsError || !strings.Contains(text(res), "did not approve") {
		t.Fatalf("a declined ask: %v %q", res.IsError, text(res))
	}
	if _, err := os.Stat(q); !os.IsNotExist(err) {
		t.Fatalf("sub-ask.txt exists after a declined ask: %v", err)
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "rule ask-for-approved") {
		t.Fatalf("elicitations: %q", asked)
	}
}

// requestID is the approval request a refusal names.
var requestID = regexp.MustCompile(`approval request ([0-9a-f]{8})`)

// TestApprovalWithoutElicitation: a client that declares no elicitation
// gets, for an ask, a refusal that names an approval request recorded in
// the proxy's state directory and the command that approves it; once a
// person approves it there (as `celguard approve ID` does), the identical
// call reaches the server, once; a different call is still asked; a
// session approval covers the rule's calls of that tool.
func TestApprovalWithoutElicitation(t *testing.T) {
	up := filesystemUpstream(t)
	dir := t.TempDir()
	sd := &statedir.Dir{Dir: dir}
	ecfg := engineConfig(t)
	ecfg.Store, ecfg.ApprovalRequests = store.NewFileDir(sd), true
	approveCmd := "celguard approve --state-dir " + dir
	_, cs := connect(t, mcpproxy.Config{Name: "fs", Upstream: up.transport, Engine: ecfg,
		ApproveCommand: func(string) string { return approveCmd }}, nil)
	ctx := context.Background()

	asked := func(path string) string {
		t.Helper()
		res := call(t, cs, "write_file", map[string]any{"path": path, "content": "x"})
		m := requestID.FindStringSubmatch(text(res))
		if !res.IsError || m == nil || !strings.Contains(text(res), approveCmd+" "+m[1]) || !strings.Contains(text(res), "rule ask-for-approved") {
			t.Fatalf("want a refusal naming the request and %q, got %v %q", approveCmd, res.IsError, text(res))
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s exists after the refusal: %v", path, err)
		}
		return m[1]
	}
	approve := func(id string, scope eval.GrantScope) {
		t.Helper()
		req, _, err := hooks.FindRequest(ctx, sd, id)
		if err != nil {
			t.Fatal(err)
		}
		if req.Tool != "mcp__fs__write_file" {
			t.Fatalf("request %s is for %s", id, req.Tool)
		}
		if _, err := hooks.Approve(ctx, sd, req, scope, "test"); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) *mcp.CallToolResult {
		return call(t, cs, "write_file", map[string]any{"path": path, "content": content})
	}

	p := filepath.Join(up.root, "ask.txt")
	id := asked(p)
	if again := asked(p); again != id {
		t.Fatalf("the retried call made request %s, not %s", again, id)
	}
	approve(id, eval.GrantOnce)
	other := filepath.Join(up.root, "other-ask.txt")
	otherID := asked(other)
	if otherID == id {
		t.Fatal("a different call shares the approved request")
	}
	if res := write(p, "x"); res.IsError {
		t.Fatalf("the approved call was refused: %s", text(res))
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
		t.Fatalf("ask.txt = %q, %v", b, err)
	}
	if res := write(p, "x"); !res.IsError {
		t.Fatal("an approval once let the call run twice")
	}

	approve(otherID, eval.GrantSession)
	third := filepath.Join(up.root, "third-ask.txt")
	if res := write(third, "3"); res.IsError {
		t.Fatalf("a session approval did not cover another call of the rule: %s", text(res))
	}
	if b, err := os.ReadFile(third); err != nil || string(b) != "3" {
		t.Fatalf("third-ask.txt = %q, %v", b, err)
	}
}

// TestNoApprovalsHere: an engine that records no requests refuses an ask
// with what the proxy was told (Config.NoApprovals) and names no command.
func TestNoApprovalsHere(t *testing.T) {
	up := filesystemUpstream(t)
	_, cs := connect(t, mcpproxy.Config{Name: "fs", Upstream: up.transport, Engine: engineConfig(t), NoApprovals: "this proxy keeps its sessions in memory"}, nil)
	res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(up.root, "ask.txt"), "content": "x"})
	if !res.IsError || !strings.HasSuffix(text(res), ", and this proxy keeps its sessions in memory") || strings.Contains(text(res), "celguard approve") {
		t.Fatalf("got %v %q", res.IsError, text(res))
	}
}
