package hooks

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/<host>/")

// TestGolden answers every event under testdata/<host>/*.json, built from
// the host's documented example payloads, with the policy in
// testdata/policy.yaml (one rule per verdict and phase) and a fresh state
// directory, and compares the answer (exit code, stdout, stderr) with the
// .golden file next to it. `go test ./hooks -update` rewrites the golden
// files; review the diff.
func TestGolden(t *testing.T) {
	eng := testEngine(t, filepath.Join("testdata", "policy.yaml"))
	for _, host := range Hosts() {
		files, err := filepath.Glob(filepath.Join("testdata", host, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "no golden cases for %s", host)
		for _, in := range files {
			name := strings.TrimSuffix(filepath.Base(in), ".json")
			t.Run(host+"/"+name, func(t *testing.T) {
				input, err := os.ReadFile(in)
				require.NoError(t, err)
				r := testRunner(t, host, Options{}, eng)
				got := r.Run(context.Background(), input)
				checkWire(t, host, got)
				goldenPath := strings.TrimSuffix(in, ".json") + ".golden"
				enc := encodeGolden(got)
				if *update {
					require.NoError(t, os.WriteFile(goldenPath, enc, 0o644))
					return
				}
				want, err := os.ReadFile(goldenPath)
				require.NoError(t, err, "run `go test ./hooks -update` to create it")
				assert.Equal(t, string(want), string(enc))
			})
		}
	}
}

func encodeGolden(r Response) []byte {
	a := &txtar.Archive{Comment: []byte("exit " + strconv.Itoa(r.Exit) + "\n")}
	a.Files = append(a.Files, txtar.File{Name: "stdout", Data: r.Stdout}, txtar.File{Name: "stderr", Data: []byte(r.Stderr)})
	return txtar.Format(a)
}

// checkWire asserts the rules of each host's protocol that decide whether
// an answer is honoured at all, independently of the golden files.
func checkWire(t *testing.T, host string, r Response) {
	t.Helper()
	if r.Exit == 2 {
		assert.NotEmpty(t, strings.TrimSpace(r.Stderr), "exit 2 needs a reason on stderr (Codex ignores it otherwise)")
	}
	if len(r.Stdout) == 0 && r.Exit == 0 {
		assert.NotEqual(t, "gemini", host, "Gemini expects JSON on stdout")
		assert.NotEqual(t, "cursor", host, "Cursor expects JSON on stdout")
	}
	if len(r.Stdout) == 0 {
		return
	}
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout must be one JSON object: %s", r.Stdout)
	hso, _ := out["hookSpecificOutput"].(map[string]any)
	switch host {
	case "claude-code":
		if pd, ok := hso["permissionDecision"]; ok {
			assert.Contains(t, []any{"allow", "deny", "ask"}, pd)
		}
	case "codex":
		// codex-rs/hooks/src/engine/output_parser.rs: answers it rejects,
		// after which the call runs.
		if _, ok := hso["permissionDecision"]; ok || hso["updatedInput"] != nil {
			assert.NotContains(t, out, "continue", "PreToolUse: continue is unsupported")
			assert.NotContains(t, out, "stopReason", "PreToolUse: stopReason is unsupported")
			switch hso["permissionDecision"] {
			case "allow":
				assert.NotNil(t, hso["updatedInput"], "allow without updatedInput is rejected")
			case "deny":
				assert.NotEmpty(t, strings.TrimSpace(hso["permissionDecisionReason"].(string)), "deny needs a reason")
			default:
				t.Errorf("permissionDecision %v is rejected", hso["permissionDecision"])
			}
		}
		if d, ok := out["decision"]; ok {
			assert.Equal(t, "block", d)
			assert.NotEmpty(t, out["reason"], "decision block needs a reason")
		}
		assert.NotContains(t, out, "suppressOutput")
		if hso != nil {
			assert.NotContains(t, hso, "updatedMCPToolOutput")
		}
	case "gemini":
		if d, ok := out["decision"]; ok {
			assert.Contains(t, []any{"allow", "deny"}, d)
			if d == "deny" {
				assert.NotEmpty(t, out["reason"], "deny needs a reason")
			}
		}
	case "copilot":
		// hooks-reference.md: top-level camelCase fields.
		assert.NotContains(t, out, "hookSpecificOutput")
		if pd, ok := out["permissionDecision"]; ok {
			assert.Contains(t, []any{"allow", "deny", "ask"}, pd)
			if pd == "deny" {
				assert.NotEmpty(t, out["permissionDecisionReason"], "deny needs a reason")
			}
		}
		if mr, ok := out["modifiedResult"].(map[string]any); ok {
			assert.Equal(t, "success", mr["resultType"], "modifiedResult must be a success")
		}
		assert.NotContains(t, out, "decision", "a Stop decision forces another turn")
		if r.Exit != 0 {
			assert.Equal(t, 2, r.Exit)
		}
	case "opencode":
		// celguard's plugin (hooks/setup/opencode_plugin.js) reads these.
		for k := range out {
			assert.Contains(t, []string{"decision", "reason", "args", "output", "context", "text"}, k)
		}
		if d, ok := out["decision"]; ok {
			assert.Contains(t, []any{"allow", "deny"}, d)
			if d == "deny" {
				assert.NotEmpty(t, out["reason"], "deny needs a reason")
			}
		}
	case "cursor":
		for k := range out {
			assert.Equal(t, strings.ToLower(k), k, "Cursor's fields are snake_case: %s", k)
		}
		if p, ok := out["permission"]; ok {
			assert.Contains(t, []any{"allow", "deny", "ask"}, p)
		}
	}
}
