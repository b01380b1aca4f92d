package eval

import (
	"fmt"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// MaxRefusedCalls bounds the before-decisions a session remembers by call
// id to match after-events against (Session.After): the most recent
// refusals are kept, the oldest forgotten first.
const MaxRefusedCalls = 256

// refusedCalls remembers, by call id, the before-decisions that refused a
// call (block or halt), most recent last. An ask is not remembered: the
// host may have asked the user, who let the call run.
type refusedCalls struct {
	byID  map[string]Decision
	order []string
}

// RefusedCall is a remembered refusal in a SessionState: the call id and
// the rule that refused it.
type RefusedCall struct {
	CallID  string         `json:"call_id"`
	Verdict policy.Verdict `json:"verdict"`
	compile.RuleRef
}

// remember records the before-decision d of call id; a call let through
// forgets an earlier refusal of the same id. The caller holds s.mu.
func (r *refusedCalls) remember(id string, d Decision) {
	if id == "" {
		return
	}
	if _, ok := r.byID[id]; ok {
		delete(r.byID, id)
		for i, x := range r.order {
			if x == id {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	if d.Verdict != policy.Block && d.Verdict != policy.Halt {
		return
	}
	if r.byID == nil {
		r.byID = map[string]Decision{}
	}
	if len(r.order) >= MaxRefusedCalls {
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
	r.byID[id] = Decision{Verdict: d.Verdict, RuleRef: d.RuleRef}
	r.order = append(r.order, id)
}

// export lists the remembered refusals, oldest first.
func (r *refusedCalls) export() []RefusedCall {
	var out []RefusedCall
	for _, id := range r.order {
		d := r.byID[id]
		out = append(out, RefusedCall{CallID: id, Verdict: d.Verdict, RuleRef: d.RuleRef})
	}
	return out
}

// restore remembers the refusals of a state, within the bound.
func (r *refusedCalls) restore(calls []RefusedCall) {
	for _, c := range calls {
		if c.Verdict != policy.Halt {
			c.Verdict = policy.Block // a state can only name refusals
		}
		r.remember(c.CallID, Decision{Verdict: c.Verdict, RuleRef: c.RuleRef})
	}
}

// refusedBefore returns the refusal of an after-event whose call id names
// a call its before-decision refused, if it does: the tool should not have
// run, so its result does not reach the model, and it is not counted. The
// decision names the rule that refused the call.
func (s *Session) refusedBefore(call Call) (Decision, bool) {
	if call.ID == "" {
		return Decision{}, false
	}
	s.mu.Lock()
	b, ok := s.refused.byID[call.ID]
	s.mu.Unlock()
	if !ok {
		return Decision{}, false
	}
	d := refusal(policy.PhaseAfter, call.Tool, CodeCallRefused,
		fmt.Sprintf("call %s was refused (%s) before it ran, so its result is withheld", call.ID, b.Verdict), nil)
	d.RuleRef = b.RuleRef
	return d, true
}

// rememberBefore records a before-decision by call id (refusedBefore).
func (s *Session) rememberBefore(call Call, d Decision) {
	if call.ID == "" {
		return
	}
	s.mu.Lock()
	s.refused.remember(call.ID, d)
	s.mu.Unlock()
}
