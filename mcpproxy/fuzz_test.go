package mcpproxy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/celguard/celguard/mcpproxy"
)

// FuzzCallArguments sends arbitrary JSON as a tools/call's arguments from
// the client's side: the proxy answers every one (a result or a protocol
// error, never a crash) and keeps serving the next call.
func FuzzCallArguments(f *testing.F) {
	for _, seed := range []string{`{"path":"a"}`, `null`, `[]`, `"x"`, `1`, `{"path":{"nested":[1,2]}}`, `{"path":"` + "\u0000" + `"}`, `{}`} {
		f.Add(seed)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "write_file", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	ctx := context.Background()
	upstream := func() mcp.Transport {
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = srv.Run(ctx, st) }()
		return ct
	}
	_, cs := connect(f, mcpproxy.Config{Name: "fs", Upstream: upstream, Engine: engineConfig(f)}, nil)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: json.RawMessage(raw)})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "ok.txt"}})
		if err != nil || res.IsError {
			t.Fatalf("the proxy stopped serving after %q: %v %+v", raw, err, res)
		}
	})
}
