package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/celguard/celguard/policy"
)

func TestSuppressions(t *testing.T) {
	src := `apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  # celguard:ignore missing_reason -- above the rule
  - id: a
    condition: '"# celguard:ignore shadowed_rule -- in a string" != ""'
    verdict: block
  - id: b   # celguard:ignore cost_over_budget -- at the end of a line
    verdict: block
    reason: r
  # celguard:ignore missing_reason, shadowed_rule -- two codes
  - id: c
    verdict: block
  - id: d
    verdict: block
    message: >
      "folded"
    # celguard:ignore missing_reason -- between its lines, past a folded block
`
	p, ds := policy.Parse("p.yaml", []byte(src))
	var got []string
	for _, s := range p.Suppressions {
		got = append(got, string(s.Code)+" "+s.Pos.String()+" "+s.Reason)
	}
	assert.Equal(t, []string{
		"missing_reason p.yaml:5:3 above the rule",
		"cost_over_budget p.yaml:9:13 at the end of a line",
		"missing_reason p.yaml:19:5 between its lines, past a folded block",
	}, got)
	assert.Equal(t, [2]int{5, 8}, [2]int{p.Suppressions[0].From, p.Suppressions[0].To})
	assert.Equal(t, [2]int{9, 11}, [2]int{p.Suppressions[1].From, p.Suppressions[1].To})
	if assert.Len(t, ds, 1) {
		assert.Equal(t, policy.CodeInvalidSuppression, ds[0].Code)
		assert.Equal(t, 12, ds[0].Pos.Line)
		assert.Equal(t, policy.SeverityWarning, ds[0].Severity)
	}

	warn := policy.Diagnostic{Code: policy.CodeMissingReason, Severity: policy.SeverityWarning, Pos: policy.Pos{File: "p.yaml", Line: 8, Col: 14}}
	other := warn
	other.Pos.Line = 14 // rule c: not covered
	err := warn
	err.Severity = policy.SeverityError
	all := policy.Diagnostics{warn, other, err}
	all.Suppress(p.Suppressions)
	assert.NotNil(t, all[0].Suppressed)
	assert.Nil(t, all[1].Suppressed)
	assert.Nil(t, all[2].Suppressed, "errors are never suppressed")
	assert.Len(t, all.Unsuppressed(), 2)
}
