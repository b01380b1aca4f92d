package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/mcpproxy"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpDocPath is docs/mcp.md, absolute: the test changes directory.
var mcpDocPath, _ = filepath.Abs(filepath.Join("..", "..", "docs", "mcp.md"))

// mcpDoc is docs/mcp.md's text from the heading section on, up to the
// next heading of the same level.
func mcpDoc(t *testing.T, section string) string {
	t.Helper()
	b, err := os.ReadFile(mcpDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	at := strings.Index(doc, "\n"+section+"\n")
	if at < 0 {
		t.Fatalf("docs/mcp.md has no %q section", section)
	}
	rest := doc[at+len(section)+2:]
	level := strings.Fields(section)[0] + " "
	if end := strings.Index(rest, "\n"+level); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// blocks are the fenced code blocks of lang in text.
func blocks(text, lang string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// asWritten turns a documented command line into one this machine runs:
// the filesystem server installed from npm in place of `npx -y
// @modelcontextprotocol/server-filesystem` (the same package, pinned),
// root in place of the project directory.
func asWritten(args []string, fsBin, root string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "npx" && i+2 < len(args) && args[i+1] == "-y" && args[i+2] == "@modelcontextprotocol/server-filesystem":
			out = append(out, fsBin)
			i += 2
		case args[i] == "/path/to/project" || args[i] == "${workspaceFolder}":
			out = append(out, root)
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// TestMCPDocConfigurations runs docs/mcp.md's client configurations and
// commands as written: each stdio configuration's celguard command as the
// client would start it, driven by the Go SDK's client; the gateway alone
// (`--config --pins --listen`, with the configuration file of "Running it",
// its example remote server left out, and a free port for 9744) reached
// at the URL of the gateway's client configuration; and the pins commands
// on the file the gateway wrote. (celguard serve --mcp-config runs in
// python/tests/test_mcp_proxy.py.)
func TestMCPDocConfigurations(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	fsBin, err := npmhost.Install(npmhost.Host{Pkg: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Bin: "mcp-server-filesystem"})
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The client starts the proxy in the project: rules read it as cwd (the
	// built-in policies ask before a write outside it).
	t.Chdir(root)

	clients := mcpDoc(t, "## Client configurations")
	var stdioConfigs int
	var gatewayURL string
	for _, b := range blocks(clients, "json") {
		var cfg map[string]map[string]mcpproxy.ServerSpec
		if err := json.Unmarshal([]byte(b), &cfg); err != nil {
			t.Fatalf("a configuration that is not JSON: %v\n%s", err, b)
		}
		for key, servers := range cfg {
			for name, s := range servers {
				switch {
				case s.Command == "celguard":
					stdioConfigs++
					t.Run(key+"/"+name, func(t *testing.T) { runStdioConfig(t, asWritten(s.Args, fsBin, root), root) })
				case s.URL != "":
					gatewayURL = s.URL
				default:
					t.Fatalf("%s.%s runs neither celguard nor a URL", key, name)
				}
			}
		}
	}
	if stdioConfigs < 2 || gatewayURL == "" {
		t.Fatalf("docs/mcp.md's client configurations: %d stdio ones and gateway URL %q", stdioConfigs, gatewayURL)
	}

	running := mcpDoc(t, "## Running it")
	configs := blocks(running, "json")
	if len(configs) != 1 {
		t.Fatalf("\"Running it\" has %d JSON blocks, want the one configuration", len(configs))
	}
	var file struct {
		MCPServers map[string]mcpproxy.ServerSpec `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(configs[0]), &file); err != nil {
		t.Fatal(err)
	}
	for name, s := range file.MCPServers {
		if s.URL != "" {
			delete(file.MCPServers, name) // the example remote server, mcp.example.com
			continue
		}
		words := asWritten(append([]string{s.Command}, s.Args...), fsBin, root)
		s.Command, s.Args = words[0], words[1:]
		file.MCPServers[name] = s
	}
	dir := root
	raw, _ := json.Marshal(file)
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var gatewayLine string
	for _, b := range blocks(running, "sh") {
		for _, line := range strings.Split(strings.TrimSpace(b), "\n") {
			if strings.Contains(line, "--listen") && strings.HasPrefix(line, "celguard mcp proxy") {
				gatewayLine = line
			}
		}
	}
	if gatewayLine == "" || !strings.Contains(gatewayURL, "127.0.0.1:9744") || !strings.Contains(gatewayLine, "127.0.0.1:9744") {
		t.Fatalf("the gateway's command %q and URL %q do not meet at 127.0.0.1:9744", gatewayLine, gatewayURL)
	}
	port := freePort(t)
	args := strings.Fields(strings.ReplaceAll(gatewayLine, "127.0.0.1:9744", port))
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, args[1:], strings.NewReader(""), io.Discard, &stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("%s exited %d: %s", gatewayLine, code, stderr.String())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), "serving MCP") {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start: %s", gatewayLine, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := strings.ReplaceAll(gatewayURL, "127.0.0.1:9744", port)
	c := mcp.NewClient(&mcp.Implementation{Name: "doc-gateway", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("%s: %v\n%s", url, err, stderr.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(root, "gateway.txt"), "content": "via the gateway"}})
	if err != nil || res.IsError {
		t.Fatalf("a write through the gateway: %v %+v %s", err, res, resultText(res))
	}
	cs.Close()
	if b, err := os.ReadFile(filepath.Join(root, "gateway.txt")); err != nil || string(b) != "via the gateway" {
		t.Fatalf("gateway.txt = %q, %v", b, err)
	}

	// The pins commands, on the file the gateway wrote, with a changed
	// definition of read_file pending as a proxy records it.
	pinsPath := filepath.Join(dir, "mcp-pins.json")
	pf, err := mcpproxy.ReadPins(pinsPath)
	if err != nil || pf.Pins["fs"]["read_file"] == "" {
		t.Fatalf("the gateway's pins file: %+v %v", pf, err)
	}
	seen := "sha256:" + strings.Repeat("ab", 32)
	pf.Pending["fs"] = map[string]string{"read_file": seen}
	if err := pf.Write(pinsPath); err != nil {
		t.Fatal(err)
	}
	var pinLines []string
	for _, b := range blocks(mcpDoc(t, "## Pinning tool definitions (rug pulls)"), "sh") {
		pinLines = append(pinLines, strings.Split(strings.TrimSpace(b), "\n")...)
	}
	if len(pinLines) != 2 {
		t.Fatalf("the pinning section's commands: %q", pinLines)
	}
	for i, line := range pinLines {
		var out, errb bytes.Buffer
		if code := run(strings.Fields(line)[1:], strings.NewReader(""), &out, &errb); code != exitOK {
			t.Fatalf("%s: exit %d: %s", line, code, errb.String())
		}
		if want := []string{"fs read_file: pinned sha256:", "accepted fs read_file: pinned " + seen}[i]; !strings.Contains(out.String(), want) {
			t.Fatalf("%s: %q, want %q", line, out.String(), want)
		}
	}
	if pf, err := mcpproxy.ReadPins(pinsPath); err != nil || pf.Pins["fs"]["read_file"] != seen || len(pf.PendingPins()) != 0 {
		t.Fatalf("after the acceptance: %+v %v", pf, err)
	}
}

// runStdioConfig runs a client configuration's celguard command as the
// client would (its stdin and stdout the MCP stream), lists the tools and
// writes a file through it.
func runStdioConfig(t *testing.T, args []string, root string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, args, inR, outW, &stderr)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "doc-client", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("celguard %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "write_file") {
		t.Fatalf("tools/list: %v", names)
	}
	p := filepath.Join(root, fmt.Sprintf("doc-%d.txt", time.Now().UnixNano()))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": p, "content": "ok"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	cs.Close()
	inW.Close()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "ok" {
		t.Fatalf("%s = %q, %v", p, b, err)
	}
}

// freePort is a loopback address with a port free now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
