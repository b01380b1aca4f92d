package compile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TestClassesByShape pins how a tool that no class with arguments names
// joins classes by the shape of its arguments (issue 15, point 1), and that
// CandidatesFor then gives the rules of those classes in evaluation order.
func TestClassesByShape(t *testing.T) {
	classes := `apiVersion: celguard.dev/v1
kind: ToolClasses
name: classes
classes:
  - name: shell
    tools: [Bash]
    command_args: [command]
    shape: {args: [command, cmd, argv]}
  - name: file_read
    tools: [Read]
    path_args: [file_path]
    shape: {args: [path], names: [read, get]}
  - name: file_write
    tools: [Write]
    path_args: [file_path]
    shape: {args: [path, target]}
  - name: web
    tools: [WebFetch]
    shape: {args: [url]}
  - name: mcp
    tools: ["mcp__*"]
`
	pol := `apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - {id: any, priority: 1, condition: 'true', verdict: warn, reason: x}
  - {id: sh, priority: 9, match: {classes: [shell]}, condition: 'true', verdict: warn, reason: x}
  - {id: wr, priority: 8, match: {classes: [file_write]}, condition: 'true', verdict: warn, reason: x}
  - {id: mc, priority: 7, match: {classes: [mcp]}, condition: 'true', verdict: warn, reason: x}
`
	set, err := compile.Compile([]policy.Source{{Name: "c.yaml", Data: []byte(classes)}, {Name: "p.yaml", Data: []byte(pol)}})
	require.NoError(t, err)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		want   []string
		shaped bool
		rules  []string
	}{
		{"Bash", map[string]any{"command": "ls"}, []string{"shell"}, false, []string{"sh", "any"}},
		{"Write", map[string]any{"command": "ls"}, []string{"file_write"}, false, []string{"wr", "any"}},
		{"exec.run", map[string]any{"cmd": "ls"}, []string{"shell"}, true, []string{"sh", "any"}},
		{"spawn", map[string]any{"argv": []any{"ls"}}, []string{"shell"}, true, []string{"sh", "any"}},
		{"mcp__fs__read_file", map[string]any{"path": "a"}, []string{"mcp", "file_read"}, true, []string{"mc", "any"}},
		{"mcp__fs__write_file", map[string]any{"path": "a"}, []string{"mcp", "file_write"}, true, []string{"wr", "mc", "any"}},
		{"mcp__fs__Get_Info", map[string]any{"path": "a"}, []string{"mcp", "file_read"}, true, []string{"mc", "any"}},
		{"remove", map[string]any{"target": "a.txt", "url": "https://x"}, []string{"file_write", "web"}, true, []string{"wr", "any"}},
		{"deploy", map[string]any{"env": "prod", "path": 3.0}, nil, false, []string{"any"}},
		{"deploy", map[string]any{"command": ""}, nil, false, []string{"any"}},
		{"deploy", map[string]any{"target": "production"}, nil, false, []string{"any"}},
		{"export", map[string]any{"output_path": "out"}, []string{"file_write"}, true, []string{"wr", "any"}},
		{"deploy", map[string]any{"target": "./out"}, []string{"file_write"}, true, []string{"wr", "any"}},
		{"mcp__db__query", map[string]any{"sql": "x"}, []string{"mcp"}, false, []string{"mc", "any"}},
	} {
		got, shaped := set.ClassesFor(tc.tool, tc.args)
		assert.Equal(t, tc.want, got, "%s %v", tc.tool, tc.args)
		assert.Equal(t, tc.shaped, shaped, "%s %v", tc.tool, tc.args)
		cands := set.Candidates(policy.PhaseBefore, tc.tool)
		if shaped {
			cands = set.CandidatesFor(policy.PhaseBefore, tc.tool, got, false)
		}
		var ids []string
		for _, r := range cands {
			ids = append(ids, r.ID)
		}
		assert.Equal(t, tc.rules, ids, "%s %v", tc.tool, tc.args)
	}
}
