package learn_test

import (
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/learn"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
)

// FuzzReadDecisionLog: any bytes give approvals and positioned diagnostics
// with learn's codes, never a panic, and every line of the input is
// accounted for (an approval, a note, an error or nothing) at a line that
// exists.
func FuzzReadDecisionLog(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","call_id":"1","phase":"before","tool":"Bash","args":{"command":"make"},"verdict":"ask"}` + "\n" +
		`{"session_id":"s","call_id":"1","phase":"after","tool":"Bash","verdict":"allow"}`))
	f.Add([]byte(`{"phase":"before","tool":"Read","args":{"file_path":"[MASKED]"},"verdict":"allow","approval":{"outcome":"approved"}}`))
	f.Add([]byte("{\"phase\":[1]}\n{} {}\n\n{\"phase\""))
	f.Add([]byte(strings.Repeat("x", 70000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		apps, ds := learn.ReadDecisionLog("f.jsonl", data)
		lines := strings.Count(string(data), "\n") + 1
		for _, d := range ds {
			if d.Code != learn.CodeSyntax && d.Code != learn.CodeInvalid && d.Code != learn.CodeSkipped {
				t.Fatalf("code %s: %v", d.Code, d)
			}
			if d.Pos.File != "f.jsonl" || d.Pos.Line < 1 || d.Pos.Line > lines || d.Pos.Col < 1 {
				t.Fatalf("position %v of %d lines", d.Pos, lines)
			}
		}
		for _, a := range apps {
			if a.Tool == "" || a.Source != learn.FromApprovals {
				t.Fatalf("approval %+v", a)
			}
		}
	})
}

// FuzzReadClaudeSettings: any bytes, never a panic; errors carry learn's
// codes; every approval is a call or a narrow pattern.
func FuzzReadClaudeSettings(f *testing.F) {
	f.Add([]byte(`{"permissions": {"allow": ["Bash(npm test:*)", "Read(//etc/**)", "WebFetch(domain:x.io)", "mcp__a__b", "Bash"]}}`))
	f.Add([]byte(`{"permissions": {"allow": "x"}}`))
	f.Add([]byte(`{"permissions": {"allow": ["Bash(a\"b:*)", "Edit(~/**)", "Read(*)"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		apps, ds := learn.ReadClaudeSettings("/p/.claude/settings.local.json", data)
		for _, d := range ds {
			if d.Code != learn.CodeSyntax && d.Code != learn.CodeInvalid && d.Code != learn.CodeSkipped {
				t.Fatalf("code %s: %v", d.Code, d)
			}
		}
		for _, a := range apps {
			if a.Pattern == nil && a.Args == nil {
				t.Fatalf("an approval with neither a call nor a pattern: %+v", a)
			}
			if a.Pattern != nil && a.Pattern.Kind == "prefix" && len(a.Pattern.Words) == 0 {
				t.Fatalf("a prefix without words: %+v", a)
			}
		}
	})
}

// FuzzPropose: approvals of any two commands, paths or URLs give rules
// that compile, whose ids are valid, and that never match their own near
// misses' shape of a second program.
func FuzzPropose(f *testing.F) {
	f.Add("git add src/a.go", "git add src/b/c.go", "src/x", "https://a.example/x")
	f.Add("rm -rf build", "rm -rf 'dist dir'", "../../etc/passwd", "https://a.example/x/../y")
	f.Add("echo \"$(id)\"", "x=1 y", "~/x", "http://[::1]/")
	f.Add("go test -run 'a b' ./...", "go test -v ./x", "a\nb", "https://u@h/")
	f.Fuzz(func(t *testing.T, c1, c2, p, u string) {
		apps := []learn.Approval{
			{Source: "approvals", Call: learn.Call{Tool: "Bash", Args: map[string]any{"command": c1}, Cwd: "/w"}},
			{Source: "approvals", Call: learn.Call{Tool: "Bash", Args: map[string]any{"command": c2}, Cwd: "/w"}},
			{Source: "approvals", Call: learn.Call{Tool: "Read", Args: map[string]any{"file_path": p}, Cwd: "/w"}},
			{Source: "approvals", Call: learn.Call{Tool: "Read", Args: map[string]any{"file_path": "/w/src/y"}, Cwd: "/w"}},
			{Source: "approvals", Call: learn.Call{Tool: "WebFetch", Args: map[string]any{"url": u}}},
			{Source: "approvals", Call: learn.Call{Tool: "WebFetch", Args: map[string]any{"url": "https://a.example/x/z"}}},
		}
		for _, p := range learn.Propose(apps) {
			src := learn.PolicySource([]*learn.Proposal{p})
			if _, err := compile.Compile([]policy.Source{policies.ToolClasses(), src}); err != nil {
				t.Fatalf("rule %s does not compile: %v\n%s", p.ID, err, src.Data)
			}
		}
	})
}
