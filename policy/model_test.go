package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		text string
		want policy.Verdict
	}{
		{"allow", policy.Allow},
		{"warn", policy.Warn},
		{"ask", policy.Ask},
		{"modify", policy.Modify},
		{"block", policy.Block},
		{"halt", policy.Halt},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := policy.ParseVerdict(tt.text)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ParseVerdict(%q): got %s, want %s", tt.text, got, tt.want)
			assert.Equal(t, tt.text, got.String())

			b, err := got.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.text, string(b))
			var back policy.Verdict
			require.NoError(t, back.UnmarshalText(b))
			assert.Equal(t, got, back, "text round trip: got %s, want %s", back, got)

			// Through encoding/json, which uses the text marshalers.
			j, err := json.Marshal(map[string]policy.Verdict{"v": got})
			require.NoError(t, err)
			assert.JSONEq(t, `{"v":"`+tt.text+`"}`, string(j))
			var m map[string]policy.Verdict
			require.NoError(t, json.Unmarshal(j, &m))
			assert.Equal(t, got, m["v"])
		})
	}
	for _, bad := range []string{"", "Block", "deny", " allow", "verdict(9)"} {
		_, err := policy.ParseVerdict(bad)
		assert.Error(t, err, "ParseVerdict(%q): got no error, want one", bad)
		v := policy.Block
		assert.Error(t, v.UnmarshalText([]byte(bad)))
		assert.Equal(t, policy.Block, v, "a failed UnmarshalText leaves the value alone")
	}
	assert.Equal(t, "", policy.VerdictUnspecified.String())
	assert.Equal(t, "verdict(42)", policy.Verdict(42).String())
}

func TestPhase(t *testing.T) {
	for _, tt := range []struct {
		text string
		want policy.Phase
	}{{"before", policy.PhaseBefore}, {"after", policy.PhaseAfter}} {
		got, err := policy.ParsePhase(tt.text)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
		assert.Equal(t, tt.text, got.String())
		b, err := got.MarshalText()
		require.NoError(t, err)
		var back policy.Phase
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, got, back, "text round trip of %s: got %s", got, back)
	}
	for _, bad := range []string{"", "Before", "during"} {
		_, err := policy.ParsePhase(bad)
		assert.Error(t, err, "ParsePhase(%q): got no error, want one", bad)
		p := policy.PhaseAfter
		assert.Error(t, p.UnmarshalText([]byte(bad)))
		assert.Equal(t, policy.PhaseAfter, p)
	}
	var zero policy.Phase
	assert.Equal(t, policy.PhaseBefore, zero, "the zero phase is before")
}

func TestScopeAndFailurePolicyStrings(t *testing.T) {
	assert.Equal(t, "turn", policy.ScopeTurn.String())
	assert.Equal(t, "session", policy.ScopeSession.String())
	var zero policy.Scope
	assert.Equal(t, policy.ScopeTurn, zero, "the zero scope is turn")
	assert.Equal(t, "closed", policy.FailClosed.String())
	assert.Equal(t, "open", policy.FailOpen.String())
	assert.Equal(t, "", policy.FailInherit.String())
}

func TestVerdictStrictness(t *testing.T) {
	order := []policy.Verdict{policy.Allow, policy.Warn, policy.Ask, policy.Block, policy.Halt}
	for i, a := range order {
		for j, b := range order {
			if got := a.Strictness() > b.Strictness(); got != (i > j) {
				t.Errorf("%s stricter than %s = %v, want %v", a, b, got, i > j)
			}
		}
	}
	if policy.Modify.Strictness() != policy.Warn.Strictness() {
		t.Error("warn = modify")
	}
	if policy.Ask.Strictness() <= policy.Modify.Strictness() {
		t.Error("ask is stricter than modify")
	}
	if policy.VerdictUnspecified.Strictness() != -1 {
		t.Error("an unspecified verdict ranks below allow")
	}
}
