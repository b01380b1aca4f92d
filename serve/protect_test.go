package serve_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

// TestTokenFilesAreProtected configures the server's engine, through the
// composition root, with its token files as protected files: the
// mandatory self-protection policy blocks a read (Read, cat) or a write
// of either through the decision endpoint, and leaves a file beside them
// alone.
func TestTokenFilesAreProtected(t *testing.T) {
	data, err := fs.ReadFile(policies.FS(), "self-protection.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opFile, agentFile := filepath.Join(dir, "operator.token"), filepath.Join(dir, "agent.token")
	srcs := []policy.Source{policies.ToolClasses(), {Name: policies.SelfProtectionSource, Data: data, Layer: policy.LayerBuiltin}}
	f := newFixture(t, func(c *serve.Config) {
		c.Engine = celguard.Config{
			Sources:        func() ([]policy.Source, error) { return srcs, nil },
			ProtectedFiles: []string{opFile, agentFile},
		}
	})
	decide := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		a := f.do("POST", "/v1/sessions/p/before", map[string]any{"tool": tool, "args": args, "cwd": "/srv/app"})
		if a.status != 200 {
			t.Fatalf("%s %v: %d %s", tool, args, a.status, a.body)
		}
		return a.json(t)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"Read", map[string]any{"file_path": opFile}, "block"},
		{"Read", map[string]any{"file_path": agentFile}, "block"},
		{"Bash", map[string]any{"command": "cat " + opFile}, "block"},
		{"Bash", map[string]any{"command": "cd " + dir + " && cat ./operator.token"}, "block"},
		{"Write", map[string]any{"file_path": opFile, "content": "mine"}, "block"},
		{"Bash", map[string]any{"command": "echo mine > " + opFile}, "block"},
		// benign twins
		{"Read", map[string]any{"file_path": filepath.Join(dir, "notes.txt")}, "allow"},
		{"Bash", map[string]any{"command": "cat " + filepath.Join(dir, "notes.txt")}, "allow"},
	} {
		d := decide(c.tool, c.args)
		if d["verdict"] != c.want {
			t.Errorf("%s %v: %v (%v), want %s", c.tool, c.args, d["verdict"], d["rule_id"], c.want)
			continue
		}
		if c.want == "block" && d["code"] != "self_protection" {
			t.Errorf("%s %v: code %v, want self_protection", c.tool, c.args, d["code"])
		}
	}
	// Without ProtectedFiles, the same read is not blocked.
	g := newFixture(t, func(c *serve.Config) {
		c.Engine = celguard.Config{Sources: func() ([]policy.Source, error) { return srcs, nil }}
	})
	if a := g.do("POST", "/v1/sessions/p/before", map[string]any{"tool": "Read", "args": map[string]any{"file_path": opFile}, "cwd": "/srv/app"}); a.json(t)["verdict"] != "allow" {
		t.Fatalf("a read without ProtectedFiles: %s", a.body)
	}
	// A relative protected file is refused by the composition root.
	if _, err := (celguard.Config{Sources: func() ([]policy.Source, error) { return srcs, nil }, ProtectedFiles: []string{"operator.token"}}).Select(); err == nil {
		t.Fatal("a relative protected file was accepted")
	}
}
