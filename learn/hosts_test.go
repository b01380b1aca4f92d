package learn_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/learn"
	"github.com/celguard/celguard/policies"
)

// TestReplayRealHostRecords reads, with --from replay, the transcripts
// the real Claude Code, Codex and Gemini CLI wrote in the real-host suite
// (replay/testdata/hosts), decided with the suite's policy: every record
// reads, and the asks of Codex and Gemini CLI, which cannot ask and so
// refused the call, are not approvals.
func TestReplayRealHostRecords(t *testing.T) {
	root := filepath.Join("..", "replay", "testdata", "hosts")
	files, err := filepath.Glob(filepath.Join(root, "*", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cfg := celguard.Config{Policies: policies.Options{Explicit: []string{filepath.Join(root, "policy.yaml")}}}
	for _, f := range files {
		apps, digest, ds, err := learn.ReadReplay(context.Background(), f, cfg)
		require.NoError(t, err, f)
		assert.Empty(t, ds.Errors(), f)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, digest)
		host := filepath.Base(filepath.Dir(filepath.Dir(f)))
		t.Logf("%s: %d approvals", f, len(apps))
		if strings.HasSuffix(filepath.Dir(f), "ask") && host != "claude-code" {
			assert.Empty(t, apps, "%s: %s cannot ask; its refused call is no approval", f, host)
		}
		for _, a := range apps {
			assert.Equal(t, "e2e-ask", a.Rule, f)
		}
	}
}
