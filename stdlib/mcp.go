package stdlib

import (
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// MCP returns the mcp library: the server and tool of an MCP tool's name
// as each host spells it.
func (l *Lib) MCP() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "mcp"})
}

// MCPName splits a tool name into the MCP server and tool it names:
// Claude Code's and Codex's mcp__server__tool, Gemini CLI's mcp_server_tool
// (server names hold no "_"), Cursor's MCP:tool (no server) and
// server.tool. A name of none of these forms gives "", "".
func MCPName(name string) (server, tool string) {
	switch {
	case strings.HasPrefix(name, "mcp__"):
		rest := name[len("mcp__"):]
		if s, t, ok := strings.Cut(rest, "__"); ok && s != "" && t != "" {
			return s, t
		}
	case strings.HasPrefix(name, "MCP:"):
		if t := name[len("MCP:"):]; t != "" {
			return "", t
		}
	case strings.HasPrefix(name, "mcp_"):
		rest := name[len("mcp_"):]
		if s, t, ok := strings.Cut(rest, "_"); ok && s != "" && t != "" {
			return s, t
		}
	default:
		if s, t, ok := strings.Cut(name, "."); ok && s != "" && t != "" && !strings.ContainsAny(name, " /") {
			return s, t
		}
	}
	return "", ""
}

// # mcp.server
//
// The MCP server a tool name names: "github" for Claude Code's and Codex's
// mcp__github__create_issue, Gemini CLI's mcp_github_create_issue and
// github.create_issue; "" for Cursor's MCP:create_issue (which names no
// server) and for a name that is none of these.
//
//	mcp.server(<string>) -> <string>
//
// Examples:
//
//	mcp.server("mcp__github__create_issue") // "github"
//	mcp.server("Bash")                     // ""
//
// Introduced in stdlib version 3.
//
// # mcp.tool
//
// The tool an MCP tool name names, without its server: "create_issue" for
// mcp__github__create_issue, mcp_github_create_issue, github.create_issue
// and MCP:create_issue; "" for a name that is none of these.
//
//	mcp.tool(<string>) -> <string>
//
// Examples:
//
//	mcp.tool("mcp__github__create_issue") // "create_issue"
//	mcp.tool("MCP:query")                 // "query"
//
// Introduced in stdlib version 3.
func (l *Lib) mcpFns() []*fnDef {
	part := func(i int) func(ref.Val) ref.Val {
		return func(v ref.Val) ref.Val {
			s, ok := v.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			server, tool := MCPName(string(s))
			if i == 0 {
				return types.String(server)
			}
			return types.String(tool)
		}
	}
	s := []*cel.Type{cel.StringType}
	return []*fnDef{
		{ns: "mcp", name: "mcp.server", version: 3, ovs: []*ovDef{{
			id: "mcp_server_string", args: s, result: cel.StringType, cost: linearCost(2, 0, 0.1).withSize(firstArgSize(0)),
			unary: part(0),
		}}},
		{ns: "mcp", name: "mcp.tool", version: 3, ovs: []*ovDef{{
			id: "mcp_tool_string", args: s, result: cel.StringType, cost: linearCost(2, 0, 0.1).withSize(firstArgSize(0)),
			unary: part(1),
		}}},
	}
}
