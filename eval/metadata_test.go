package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

const metadataPolicy = `
metadata:
  owner: security
  ticket: SEC-1
rules:
  - id: no-rm
    condition: 'args.command.startsWith("rm ")'
    verdict: block
    metadata:
      ticket: SEC-42
      severity: high
  - id: plain
    condition: 'args.command == "ls"'
    verdict: allow
`

// TestDecisionRuleMetadata: the deciding rule's metadata is copied into the
// decision over its policy's (the rule's key wins), the policy's alone when
// the rule has none, and none when no rule decided.
func TestDecisionRuleMetadata(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": metadataPolicy})
	eng, err := eval.New(set)
	require.NoError(t, err)
	s := eng.NewSession("s", nil)
	for _, tc := range []struct {
		command string
		want    map[string]string
	}{
		{"rm -rf /", map[string]string{"owner": "security", "ticket": "SEC-42", "severity": "high"}},
		{"ls", map[string]string{"owner": "security", "ticket": "SEC-1"}},
		{"pwd", nil},
	} {
		d, err := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": tc.command}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, d.Metadata, tc.command)
		// Without WithDecisionMetadata the audit fields stay empty.
		assert.Empty(t, d.DecisionID, tc.command)
		assert.True(t, d.Time.IsZero(), tc.command)
	}
	// A decision's metadata is its own copy.
	d, _ := s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}})
	d.Metadata["owner"] = "someone"
	d, _ = s.Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "ls"}})
	assert.Equal(t, "security", d.Metadata["owner"])
}

// TestDecisionAuditRecord: with WithDecisionMetadata every decision carries
// a fresh 128-bit hex id, the engine clock's time in UTC, the set's digest
// and the session id, and they appear in its JSON.
func TestDecisionAuditRecord(t *testing.T) {
	set := mustSet(t, map[string]string{"p.yaml": metadataPolicy})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	eng, err := eval.New(set, eval.WithDecisionMetadata(), eval.WithClock(func() time.Time { return at }))
	require.NoError(t, err)
	s := eng.NewSession("sess-1", nil)
	call := eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}, ID: "c1"}
	a, err := s.Before(context.Background(), call)
	require.NoError(t, err)
	b, err := s.After(context.Background(), call, eval.Result{})
	require.NoError(t, err)
	e, err := s.EndTurn(context.Background())
	require.NoError(t, err)
	for _, d := range []eval.Decision{a, b, e} {
		assert.Regexp(t, `^[0-9a-f]{32}$`, d.DecisionID)
		assert.Equal(t, at.UTC(), d.Time)
		assert.Equal(t, time.UTC, d.Time.Location())
		assert.Equal(t, set.Digest(), d.PolicyDigest)
		assert.Equal(t, "sess-1", d.SessionID)
	}
	assert.NotEqual(t, a.DecisionID, b.DecisionID)
	assert.NotEqual(t, b.DecisionID, e.DecisionID)

	var m map[string]any
	out, err := json.Marshal(a)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(out, &m))
	assert.Equal(t, "2026-01-02T02:04:05Z", m["time"])
	assert.Equal(t, a.DecisionID, m["decision_id"])
	assert.Equal(t, set.Digest(), m["policy_digest"])
	assert.Equal(t, "sess-1", m["session_id"])
	assert.Equal(t, map[string]any{"owner": "security", "ticket": "SEC-42", "severity": "high"}, m["metadata"])

	// An injected id source replaces the random ids.
	eng, err = eval.New(set, eval.WithDecisionIDs(func() string { return "id-1" }))
	require.NoError(t, err)
	d, err := eng.NewSession("s", nil).Before(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, "id-1", d.DecisionID)
	_, err = eval.New(set, eval.WithDecisionIDs(nil))
	assert.Error(t, err)
}

// TestPolicySetDigest: the digest changes when a byte of a policy, its
// name, layer or trust changes, and not when nothing does or the sources
// come in another order.
func TestPolicySetDigest(t *testing.T) {
	hdr := "apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\nrules:\n  - id: r-%s\n    verdict: allow\n    reason: %s\n"
	src := func(name, reason string) policy.Source {
		return policy.Source{Name: name + ".yaml", Data: fmt.Appendf(nil, hdr, name, name, reason)}
	}
	digest := func(srcs ...policy.Source) string {
		t.Helper()
		set, err := compile.Compile(srcs)
		require.NoError(t, err)
		require.Regexp(t, `^sha256:[0-9a-f]{64}$`, set.Digest())
		return set.Digest()
	}
	base := digest(src("a", "x"), src("b", "y"))
	assert.Equal(t, base, digest(src("a", "x"), src("b", "y")))
	assert.Equal(t, base, digest(src("b", "y"), src("a", "x")))
	assert.NotEqual(t, base, digest(src("a", "x"), src("b", "z")))
	user := src("b", "y")
	user.Layer = policy.LayerUser
	assert.NotEqual(t, base, digest(src("a", "x"), user))
	assert.Equal(t, base, compile.Digest([]policy.Source{src("b", "y"), src("a", "x")}))
}
