package eval

import (
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// TamperedConsequence says what a state that failed its check costs the
// session (Engine.RestoreTampered), in the reason of every decision made
// on it (rule 19).
const TamperedConsequence = "its remembered approvals were dropped and its counters read at their ceiling until they reset " +
	"(at the next prompt, once a rate window has passed, or when a rule resets them)"

// markTampered applies rule 19 to d, a decision made on a state restored
// fail-closed: note says why.
func markTampered(d Decision, note string) Decision {
	d.StateTampered = true
	if d.Verdict == policy.Allow {
		// celguard decides the warn, not the rule that allowed.
		d.Verdict, d.Code, d.Reason = policy.Warn, CodeStateTampered, note
		d.RuleRef = compile.RuleRef{}
		return d
	}
	if d.Code == "" {
		d.Code = CodeStateTampered
	}
	d.Reason = strings.TrimSpace(strings.TrimSpace(d.Reason) + " (" + note + ")")
	return d
}
