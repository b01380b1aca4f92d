package hostse2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/importer"
	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/policy"
)

// batchModel is a model server on 127.0.0.1 speaking the Anthropic
// Messages API that makes the host call a list of tools, batch calls per
// answer (parallel tool_use blocks), and records each tool_result by the
// call it answers.
type batchModel struct {
	calls []batchCall
	batch int

	mu      sync.Mutex
	next    int
	results map[string]batchResult
}

type batchCall struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
}

type batchResult struct {
	Text    string
	IsError bool
}

func startBatchModel(t *testing.T, calls []batchCall, batch int) (*batchModel, string) {
	t.Helper()
	m := &batchModel{calls: calls, batch: batch, results: map[string]batchResult{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(m.serve)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m, "http://" + ln.Addr().String()
}

func (m *batchModel) serve(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": 10})
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	msgs := list(req["messages"])
	m.mu.Lock()
	if len(msgs) > 0 {
		for _, c := range list(dict(msgs[len(msgs)-1])["content"]) {
			if b := dict(c); b["type"] == "tool_result" {
				text := jsonText(b["content"])
				if l := list(b["content"]); l != nil {
					var parts []string
					for _, p := range l {
						parts = append(parts, str(dict(p)["text"]))
					}
					text = strings.Join(parts, "\n")
				}
				isErr, _ := b["is_error"].(bool)
				m.results[str(b["tool_use_id"])] = batchResult{text, isErr}
			}
		}
	}
	hasTools := len(list(req["tools"])) > 0
	var blocks []map[string]any
	if hasTools {
		for ; m.next < len(m.calls) && len(blocks) < m.batch; m.next++ {
			c := m.calls[m.next]
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_diff_%04d", m.next), "name": c.Tool, "input": c.Input})
		}
	}
	m.mu.Unlock()
	stop := "tool_use"
	if len(blocks) == 0 {
		stop = "end_turn"
		blocks = []map[string]any{{"type": "text", "text": "Done."}}
	}
	model := str(req["model"])
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if stream, _ := req["stream"].(bool); !stream {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_diff", "type": "message", "role": "assistant",
			"model": model, "content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_diff", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range blocks {
		if b["type"] == "tool_use" {
			input, _ := json.Marshal(b["input"])
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// claudeDiffSettings are the permission rules of the Claude Code
// differential test: Bash exact, prefix (:*) and wildcard forms, Read and
// Edit paths relative to the project, absolute (//) and with globs, and MCP
// tools of the reference filesystem server, in all three lists.
const claudeDiffSettings = `{
  "permissions": {
    "allow": [
      "Bash(npm run test:*)", "Bash(git log *)", "Bash(git status)", "Bash(make build)", "Bash(docker ps:*)",
      "Bash(python3 scripts/*.py)", "Bash(yarn test)",
      "Read(src/**)", "Read(//etc/hostname)", "Edit(docs/**)", "Edit(src/gen/**)",
      "mcp__fs__list_directory", "mcp__fs__get_file_info"
    ],
    "ask": [
      "Bash(git push:*)", "Bash(npm publish)", "Bash(docker run *)",
      "Edit(src/**)", "Read(notes/*.md)", "mcp__fs__write_file"
    ],
    "deny": [
      "Bash(rm -rf *)", "Bash(curl:*)", "Bash(git push --force:*)", "Bash(kubectl delete *)",
      "Read(./.env)", "Read(secrets/**)", "Edit(**/*.pem)", "Edit(.github/**)", "mcp__fs__move_file"
    ]
  }
}
`

// claudeStubs are the programs the generated commands run, each a script
// on the front of PATH that only prints its name: a call Claude Code
// allows runs, harmlessly.
var claudeStubs = []string{"git", "npm", "yarn", "make", "docker", "python3", "rm", "curl", "kubectl", "sudo", "chmod"}

// claudeDiffCalls generates the calls: each rule's matches and near
// misses, in plain, wrapped, redirected, nested and compound command lines,
// random compound lines, and reads and writes of paths in and around
// every path rule.
func claudeDiffCalls(work, outside string) []batchCall {
	var out []batchCall
	seen := map[string]bool{}
	shell := func(cmd string) {
		if !seen[cmd] {
			seen[cmd] = true
			out = append(out, batchCall{"Bash", map[string]any{"command": cmd}})
		}
	}
	base := []string{
		"npm run test", "npm run test:unit", "npm run testx", "npm run lint", "npm test",
		"git log", "git log --oneline", "git logx", "git status", "git status -s", "git statusx",
		"make build", "make build2", "make", "docker ps", "docker ps -a", "docker psx", "docker run alpine", "docker run",
		"python3 scripts/a.py", "python3 scripts/sub/b.py", "python3 scripts/a.sh", "yarn test", "yarn test --watch",
		"git push", "git push origin main", "git pushx", "git push --force", "git push --force origin", "git push -f",
		"npm publish", "npm publish --dry-run", "rm -rf build", "rm -rf", "rm -r build", "rm build",
		"curl http://example.invalid", "curlx", "kubectl delete pod x", "kubectl get pods",
		"ls", "echo hi", "cat README.md", "pwd",
	}
	for _, b := range base {
		shell(b)
	}
	for _, b := range base[:len(base)-4] {
		shell(b + " > out.txt")
		shell("bash -c '" + b + "'")
		shell("FOO=1 " + b)
		shell("sudo " + b)
		shell("echo ok && " + b)
	}
	r := rand.New(rand.NewPCG(28, 1))
	ops := []string{" && ", " ; ", " | ", " || "}
	for n := 0; n < 60; n++ {
		k := 2 + r.IntN(2)
		cmd := base[r.IntN(len(base))]
		for i := 1; i < k; i++ {
			cmd += ops[r.IntN(len(ops))] + base[r.IntN(len(base))]
		}
		shell(cmd)
	}
	for _, p := range []string{"src/a.go", "src/deep/b.ts", "src/gen/c.go", ".env", "sub/.env", ".env.local", "secrets/k.txt", "secrets/x/y.txt",
		"docs/x.md", "notes/n.md", "notes/deep/n.md", "README.md", "k.pem", ".github/w.yml"} {
		out = append(out, batchCall{"Read", map[string]any{"file_path": filepath.Join(work, p)}})
	}
	out = append(out, batchCall{"Read", map[string]any{"file_path": "/etc/hostname"}},
		batchCall{"Read", map[string]any{"file_path": filepath.Join(outside, "o.txt")}})
	for i, p := range []string{"docs/new.md", "docs/deep/new.md", "src/new.go", "src/gen/new.go", "src/gen/k.pem", "new.pem", "keys/new.pem",
		".github/new.yml", ".env", "secrets/new.txt", "notes/new.md", "new.md", "docsx/new.md"} {
		ext := filepath.Ext(p)
		p = strings.TrimSuffix(p, ext) + fmt.Sprintf("-%d", i) + ext
		out = append(out, batchCall{"Write", map[string]any{"file_path": filepath.Join(work, p), "content": "x\n"}})
	}
	out = append(out, batchCall{"Write", map[string]any{"file_path": filepath.Join(outside, "w.txt"), "content": "x\n"}})
	// The reference filesystem server's tools, as Claude Code names them.
	for i, d := range []string{".", "src", "docs"} {
		dir := filepath.Join(work, d)
		out = append(out,
			batchCall{"mcp__fs__list_directory", map[string]any{"path": dir}},
			batchCall{"mcp__fs__get_file_info", map[string]any{"path": dir}},
			batchCall{"mcp__fs__read_text_file", map[string]any{"path": filepath.Join(work, "README.md")}},
			batchCall{"mcp__fs__write_file", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("mcp-%d.txt", i)), "content": "x"}},
			batchCall{"mcp__fs__create_directory", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("mcp-dir-%d", i))}},
			batchCall{"mcp__fs__move_file", map[string]any{"source": filepath.Join(work, "k.pem"), "destination": filepath.Join(dir, fmt.Sprintf("moved-%d.pem", i))}})
	}
	return out
}

// claudeRun runs Claude Code headless once with settings as the project's
// permission rules and returns what it did with each call: "allow" (it
// ran), "deny" (a deny rule refused it) or "prompt" (it asked; headless,
// nobody answered).
func claudeRun(t *testing.T, root, bin, fsBin, settings string, calls []batchCall) ([]string, []string, error) {
	home, work, stub, outside := filepath.Join(root, "home"), filepath.Join(root, "work"), filepath.Join(root, "stub"), filepath.Join(root, "outside")
	if err := claudeTree(work, outside); err != nil {
		return nil, nil, err
	}
	for _, p := range claudeStubs {
		if err := put(filepath.Join(stub, p), "#!/bin/sh\necho STUB-RAN "+p+" \"$@\"\n", 0o755); err != nil {
			return nil, nil, err
		}
	}
	// The project's MCP server, approved by the project's settings.
	var sm map[string]any
	if err := json.Unmarshal([]byte(settings), &sm); err != nil {
		return nil, nil, err
	}
	sm["enableAllProjectMcpServers"] = true
	// A tool a deny rule names bare is not offered at all: a call of it
	// is refused as unknown.
	hidden := map[string]bool{}
	if perms, ok := sm["permissions"].(map[string]any); ok {
		for _, d := range list(perms["deny"]) {
			hidden[str(d)] = true
		}
	}
	sb, _ := json.Marshal(sm)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fs": map[string]any{"command": fsBin, "args": []string{work}}}})
	if err := put(filepath.Join(work, ".claude", "settings.json"), string(sb), 0o644); err != nil {
		return nil, nil, err
	}
	if err := put(filepath.Join(work, ".mcp.json"), string(cfg), 0o644); err != nil {
		return nil, nil, err
	}
	// Claude Code reads a project's permission rules only in a workspace
	// the user trusted.
	trust, _ := json.Marshal(map[string]any{"projects": map[string]any{work: map[string]any{"hasTrustDialogAccepted": true}}})
	if err := put(filepath.Join(home, ".claude", ".claude.json"), string(trust), 0o644); err != nil {
		return nil, nil, err
	}
	calls = claudeRebase(calls, work, outside)
	m, url := startBatchModel(t, calls, 100)
	env := append(baseEnv(home, root), "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-ant-e2e-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		// The MCP tools in the request itself, not behind ToolSearch; a
		// loaded machine starts the server slowly.
		"ENABLE_TOOL_SEARCH=false", "MCP_TIMEOUT=120000")
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = "PATH=" + stub + string(os.PathListSeparator) + os.Getenv("PATH")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Make the calls.", "--model", "claude-sonnet-4-5", "--output-format", "text")
	cmd.Dir, cmd.Env = work, env
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || ctx.Err() != nil {
		return nil, nil, fmt.Errorf("claude: %v %v\n%s", err, ctx.Err(), out)
	}
	got := make([]string, len(calls))
	texts := make([]string, len(calls))
	var unknown []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range calls {
		r, ok := m.results[fmt.Sprintf("toolu_diff_%04d", i)]
		texts[i] = r.Text
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("no tool result for call %d %v\nclaude output:\n%s", i, calls[i], out)
		case !r.IsError:
			got[i] = "allow"
		case strings.Contains(r.Text, "has been denied"), strings.Contains(r.Text, "denied by your permission settings"),
			strings.Contains(r.Text, "covered by a Read deny rule"),
			strings.Contains(r.Text, "No such tool available") && hidden[calls[i].Tool]:
			got[i] = "deny"
		case strings.Contains(r.Text, "requested permissions"), strings.Contains(r.Text, "requires approval"), strings.Contains(r.Text, "require approval"),
			strings.Contains(r.Text, "needs approval"), strings.Contains(r.Text, "Approving runs"):
			got[i] = "prompt"
		default:
			unknown = append(unknown, fmt.Sprintf("call %d %v: %q", i, calls[i], r.Text))
		}
	}
	if len(unknown) > 0 {
		return nil, nil, fmt.Errorf("results that are no permission decision:\n%s", strings.Join(unknown, "\n"))
	}
	return got, texts, nil
}

// put writes a file, making its directory.
func put(path, data string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), mode)
}

// diffGolden compares a differential test's report with its golden file
// (-update rewrites it).
func diffGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := put(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from what the test found (run go test -update and review the diff):\n%s", path, got)
	}
}

// claudeTree makes the files the calls read.
func claudeTree(work, outside string) error {
	for _, p := range []string{"src/a.go", "src/deep/b.ts", "src/gen/c.go", ".env", "sub/.env", ".env.local", "secrets/k.txt", "secrets/x/y.txt",
		"docs/x.md", "notes/n.md", "notes/deep/n.md", "README.md", "k.pem", ".github/w.yml", "scripts/a.py"} {
		if err := put(filepath.Join(work, p), "x\n", 0o644); err != nil {
			return err
		}
	}
	return put(filepath.Join(outside, "o.txt"), "x\n", 0o644)
}

// claudeRebase moves the calls' paths from the placeholders to a run's
// own directories.
func claudeRebase(calls []batchCall, work, outside string) []batchCall {
	out := make([]batchCall, len(calls))
	for i, c := range calls {
		in := map[string]any{}
		for k, v := range c.Input {
			if s, ok := v.(string); ok && k != "command" {
				s = strings.Replace(s, "/WORK", work, 1)
				s = strings.Replace(s, "/OUTSIDE", outside, 1)
				v = s
			}
			in[k] = v
		}
		out[i] = batchCall{c.Tool, in}
	}
	return out
}

// TestClaudeDifferential asks Claude Code's own permission checks (2.1.330
// headless, against a fake model that makes every call, no celguard hook)
// and the policy imported from the same settings about the same generated
// calls: every decision must be Claude Code's or stricter (allow < no rule
// < ask < deny), each stricter one listed with why in
// testdata/claude-diff.stricter.golden.txt. Claude Code runs three times:
// with the rules; with the ask rules turned into deny rules, which tells an
// ask rule's prompt from the prompt of no rule; and with no rules, which
// tells what Claude Code allows with no rule at all.
func TestClaudeDifferential(t *testing.T) {
	t.Parallel()
	bin := hostBinary(t, claudePkg)
	fsBin := hostBinary(t, npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"})
	calls := claudeDiffCalls("/WORK", "/OUTSIDE")
	if len(calls) < 200 {
		t.Fatalf("%d calls, want at least 200", len(calls))
	}
	var settings struct {
		Permissions map[string][]string `json:"permissions"`
	}
	if err := json.Unmarshal([]byte(claudeDiffSettings), &settings); err != nil {
		t.Fatal(err)
	}
	askAsDeny := map[string]any{"permissions": map[string]any{"allow": settings.Permissions["allow"],
		"deny": append(append([]string{}, settings.Permissions["deny"]...), settings.Permissions["ask"]...)}}
	b, _ := json.Marshal(askAsDeny)
	var runs [3][]string
	var texts [3][]string
	var errs [3]error
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range []string{claudeDiffSettings, string(b), `{"permissions": {}}`} {
		root := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], texts[i], errs[i] = claudeRun(t, root, bin, fsBin, s, calls)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("three Claude Code runs of %d calls each, in parallel: %v", len(calls), time.Since(start).Round(time.Second))

	res, err := importer.Import(importer.Claude, []importer.File{{Name: ".claude/settings.json", Data: []byte(claudeDiffSettings)}}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := celguard.Load(context.Background(), celguard.WithSources(policy.Source{Name: "imported.yaml", Data: res.Policy}),
		celguard.WithBundle("none"), celguard.WithUserDir("-"), celguard.WithProjectDir("-"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	if err := claudeTree(work, outside); err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{"allow": 0, "none": 1, "ask": 2, "deny": 3}
	var report strings.Builder
	equal, stricter := 0, 0
	for i, c := range claudeRebase(calls, work, outside) {
		want := runs[0][i]
		if want == "prompt" {
			want = map[string]string{"deny": "ask", "prompt": "none", "allow": "none"}[runs[1][i]]
		}
		d, err := g.NewSession("diff", nil).Before(context.Background(), eval.Call{Tool: c.Tool, Args: c.Input, Cwd: work})
		if err != nil {
			t.Fatal(err)
		}
		got := "none"
		switch {
		case d.RuleID == "":
		case d.Verdict == policy.Allow:
			got = "allow"
		case d.Verdict == policy.Block && d.Code == eval.CodeApprovalRequired:
			got = "ask"
		case d.Verdict == policy.Block:
			got = "deny"
		}
		in, _ := json.Marshal(calls[i].Input)
		switch {
		case got == want:
			equal++
		case rank[got] > rank[want]:
			stricter++
			fmt.Fprintf(&report, "%s %s: claude %s, celguard %s (%s): %s\n", c.Tool, in, want, got, d.RuleID, claudeWhy(c, want, got, runs[2][i]))
		default:
			t.Errorf("LOOSER: %s %s: claude %s (%q), celguard %s (%s)", c.Tool, in, want, texts[0][i], got, d.RuleID)
		}
	}
	t.Logf("%d calls: %d equal, %d stricter", len(calls), equal, stricter)
	head := fmt.Sprintf("# Calls on which the policy imported from Claude Code's settings is stricter\n# than Claude Code's own permission checks, with why (TestClaudeDifferential).\n## %d calls, %d equal, %d stricter\n", len(calls), equal, stricter)
	golden := filepath.Join("testdata", "claude-diff.stricter.golden.txt")
	diffGolden(t, golden, head+report.String())
}

// claudeWhy says why the import is stricter on a call.
func claudeWhy(c batchCall, want, got, noRules string) string {
	cmd, _ := c.Input["command"].(string)
	switch {
	case want == "allow" && noRules == "allow":
		return "Claude Code allows it with no rule (a read-only command, or a read in the working directory); the import leaves it to the rest of the policy set"
	case strings.HasPrefix(c.Tool, "mcp__"):
		return "celguard's tool classes count the filesystem server's tools among the file tools, so a path rule (Edit(src/**)) covers them too"
	case want == "allow":
		return "an allow holds only for a plain line of top-level commands without wrappers, assignments or redirections, each matched by an allow rule"
	case c.Tool != "Bash":
		return "a path deny or ask also covers the tool's other path forms (a name at any depth, everything under a directory)"
	case strings.Contains(cmd, "sudo ") || strings.Contains(cmd, "bash -c") || strings.Contains(cmd, "FOO=1"):
		return "deny and ask rules are also tried on the command a wrapper, an assignment or a nested shell runs"
	default:
		return "deny and ask rules are also tried on each command's words and on the whole line"
	}
}
