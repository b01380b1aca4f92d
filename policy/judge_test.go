package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/celguard/celguard/policy"
)

// TestRuleJudge: a rule names a judge only with verdict ask, by a plain
// name; the judge is kept with where it is written.
func TestRuleJudge(t *testing.T) {
	head := "apiVersion: celguard.dev/v1\nkind: Policy\nname: j\nrules:\n"
	p, ds := policy.Parse("j.yaml", []byte(head+"  - {id: r, verdict: ask, judge: reviewer}\n"))
	assert.Empty(t, ds)
	assert.Equal(t, "reviewer", p.Rules[0].Judge)
	assert.Equal(t, 5, p.Rules[0].JudgePos.Line)
	for body, want := range map[string]string{
		"  - {id: r, verdict: block, judge: reviewer}\n": "j.yaml:5:36: invalid_value: judge needs verdict: ask",
		"  - {id: r, verdict: ask, judge: 'a b'}\n":      `j.yaml:5:34: invalid_value: judge "a b" must be a name`,
	} {
		_, ds := policy.Parse("j.yaml", []byte(head+body))
		assert.ErrorContains(t, ds, want, body)
	}
}
