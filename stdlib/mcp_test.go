package stdlib

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMCPName(t *testing.T) {
	for name, want := range map[string][2]string{
		"mcp__github__create_issue":    {"github", "create_issue"},
		"mcp__desktop-commander__a__b": {"desktop-commander", "a__b"},
		"mcp_github_create_issue":      {"github", "create_issue"},
		"MCP:query":                    {"", "query"},
		"github.create_issue":          {"github", "create_issue"},
		"exec.run":                     {"exec", "run"},
		"Bash":                         {"", ""},
		"mcp__":                        {"", ""},
		"mcp__x":                       {"", ""},
		"a/b.c":                        {"", ""},
		"MCP:":                         {"", ""},
	} {
		s, tool := MCPName(name)
		assert.Equal(t, want, [2]string{s, tool}, name)
	}
}
