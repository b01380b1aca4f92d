package mcpproxy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/internal/npmhost"
	"github.com/celguard/celguard/mcpproxy"
	celstore "github.com/celguard/celguard/store"
)

// BenchmarkToolsCall measures one tools/call sent directly to an upstream
// and the same call through the proxy (decided before and after by
// testPolicy), side by side in one run: with an in-process SDK server
// (the proxy's own cost) and with the real filesystem server over stdio.
//
//	go test -run '^$' -bench ToolsCall -benchtime 2000x -benchmem ./mcpproxy
//	go test -c -o mcpproxy.test ./mcpproxy && scripts/instr.sh ./mcpproxy.test 'ToolsCall/in-process/' 100 600
func BenchmarkToolsCall(b *testing.B) {
	ctx := context.Background()
	echo := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Path string `json:"path"`
	}
	mcp.AddTool(echo, &mcp.Tool{Name: "read_file"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + a.Path}}}, nil, nil
	})
	inMemory := func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = echo.Run(ctx, st) }()
		return ct
	}
	bin, err := npmhost.Install(filesystemServer)
	if err != nil {
		b.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(root, "a.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	fs := func() mcp.Transport { return &mcp.CommandTransport{Command: exec.Command(bin, root)} }

	for _, up := range []struct {
		name      string
		transport func() mcp.Transport
	}{{"in-process", inMemory}, {"filesystem-stdio", fs}} {
		args := map[string]any{"path": file}
		b.Run(up.name+"/direct", func(b *testing.B) {
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := c.Connect(ctx, up.transport(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchCalls(b, cs, args)
		})
		// The proxy keeping its sessions in memory, and in a state
		// directory (the file store `celguard mcp proxy` uses by default:
		// every decision commits the session's signed state file).
		for _, store := range []string{"memory", "state-dir"} {
			name := up.name + "/proxy"
			if store == "state-dir" {
				name += "-state-dir"
			}
			b.Run(name, func(b *testing.B) {
				ecfg := engineConfig(b)
				if store == "state-dir" {
					ecfg.Store, ecfg.ApprovalRequests = celstore.NewFile(b.TempDir()), true
				}
				p, err := mcpproxy.New(ctx, mcpproxy.Config{Name: "fs", Upstream: up.transport, Engine: ecfg})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				st, ct := mcp.NewInMemoryTransports()
				go func() { _ = p.Run(ctx, st) }()
				c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
				cs, err := c.Connect(ctx, ct, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				benchCalls(b, cs, args)
			})
		}
	}
}

func benchCalls(b *testing.B, cs *mcp.ClientSession, args map[string]any) {
	b.Helper()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
