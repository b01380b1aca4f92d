package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/stdlib"
)

// Approver settles ask verdicts: a human prompt, a chat message, an LLM
// judge. Approve may block; the session holds no lock while it runs.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Approval, error)

// Approve implements Approver.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	return f(ctx, req)
}

// ApprovalRequest is what an approver is asked.
type ApprovalRequest struct {
	SessionID string
	Rule      string
	Policy    string
	Reason    string
	Code      string
	Call      Call
}

// Answer is an approver's answer.
type Answer uint8

// Answers.
const (
	// Deny refuses the call: the decision is a block with code approval_denied.
	Deny Answer = iota
	// Approve lets the call run: the decision is an allow.
	Approve
	// Defer hands the question to the host: the decision keeps verdict ask,
	// for hosts that prompt the user themselves.
	Defer
)

// Remember is how long an approval is kept.
type Remember uint8

// Remember scopes.
const (
	// RememberNone asks again next time.
	RememberNone Remember = iota
	// RememberCall approves the same rule for the same tool and arguments
	// for the rest of the session.
	RememberCall
	// RememberRule approves every call the rule asks about for the rest of
	// the session.
	RememberRule
)

// String returns "call", "rule", or "" for RememberNone.
func (r Remember) String() string {
	switch r {
	case RememberCall:
		return "call"
	case RememberRule:
		return "rule"
	}
	return ""
}

// Approval is an approver's answer.
type Approval struct {
	Answer   Answer
	Remember Remember
	// Reason is shown with a denial.
	Reason string
}

// ApprovalOutcome is how an ask rule was settled. Its values are stable
// JSON strings.
type ApprovalOutcome string

// Approval outcomes.
const (
	// ApprovalRemembered: an approval remembered earlier in the session let
	// the call run; nobody was asked.
	ApprovalRemembered ApprovalOutcome = "remembered"
	// ApprovalUnavailable: there is no approver; the call is blocked with
	// code approval_required.
	ApprovalUnavailable ApprovalOutcome = "unavailable"
	// ApprovalError: the approver failed; the call is blocked with code
	// approval_required.
	ApprovalError ApprovalOutcome = "error"
	// ApprovalTimeout: the approver did not answer in time (it returned an
	// error wrapping context.DeadlineExceeded); the call is blocked with
	// code approval_timeout.
	ApprovalTimeout ApprovalOutcome = "timeout"
	// ApprovalApproved: the approver let the call run.
	ApprovalApproved ApprovalOutcome = "approved"
	// ApprovalDeferred: the approver handed the question to the host; the
	// verdict stays ask.
	ApprovalDeferred ApprovalOutcome = "deferred"
	// ApprovalDenied: the approver refused; the call is blocked with code
	// approval_denied.
	ApprovalDenied ApprovalOutcome = "denied"
)

// ask settles the ask verdict d of rule r: through an approval remembered
// earlier or the approver's answer. An approved call gets verdict allow (the
// caller reports it as modify after a rewrite); a call nobody could approve
// is refused.
func (ev *evaluation) ask(d Decision, r *compile.Rule) (Decision, error) {
	s := ev.s
	callKey, err := approvalKey(r.ID, ev.call)
	if err != nil {
		return ev.policyError(r, err, nil), nil
	}
	ruleKey := r.ID + "\x00*"
	s.mu.Lock()
	remembered := s.approvals[callKey] || s.approvals[ruleKey]
	s.mu.Unlock()
	if remembered {
		d.Verdict = policy.Allow
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalRemembered}
		return d, nil
	}
	a := s.eng.cfg.approver
	if a == nil {
		return ev.refuseAsk(r, CodeApprovalRequired, d.Reason, ApprovalRecord{Rule: r.ID, Outcome: ApprovalUnavailable}), nil
	}
	ans, asked := s.st.answers[callKey] // a decision that runs again (store.go) asks once
	if !asked {
		ans, err = a.Approve(ev.ctx, ApprovalRequest{SessionID: s.id, Rule: r.ID, Policy: r.Policy.Name, Reason: d.Reason, Code: r.Code, Call: ev.call})
		if err == nil && s.eng.cfg.store != nil {
			if s.st.answers == nil {
				s.st.answers = map[string]Approval{}
			}
			s.st.answers[callKey] = ans
		}
	}
	if err != nil {
		code, outcome := CodeApprovalRequired, ApprovalError
		if errors.Is(err, context.DeadlineExceeded) {
			// The approver's own timeout or the call's deadline: nobody
			// answered in time, which is not a denial nor a failure.
			code, outcome = CodeApprovalTimeout, ApprovalTimeout
		}
		// The context's end, if that is why the approver failed, is the error.
		return ev.refuseAsk(r, code, d.Reason, ApprovalRecord{Rule: r.ID, Outcome: outcome, Reason: err.Error()}), ev.ctx.Err()
	}
	switch ans.Answer {
	case Approve:
		d.Verdict = policy.Allow
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalApproved, Remember: ans.Remember.String(), Reason: ans.Reason}
		s.mu.Lock()
		switch ans.Remember {
		case RememberCall:
			s.remember(callKey)
		case RememberRule:
			s.remember(ruleKey)
		}
		s.mu.Unlock()
	case Defer:
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalDeferred}
	default:
		reason := d.Reason
		if ans.Reason != "" {
			reason = strings.TrimSpace(reason + " (denied: " + ans.Reason + ")")
		}
		return ev.refuseAsk(r, CodeApprovalDenied, reason, ApprovalRecord{Rule: r.ID, Outcome: ApprovalDenied, Reason: ans.Reason}), nil
	}
	return d, nil
}

// refuseAsk is the refusal of ask rule r's call, with how it was settled.
func (ev *evaluation) refuseAsk(r *compile.Rule, code, reason string, rec ApprovalRecord) Decision {
	d := ev.refuse(code, reason, r)
	d.Approval = &rec
	return d
}

// remember records an approval; the caller holds s.mu. The set is bounded:
// past the bound it is cleared, so the user is asked again (never allowed
// without asking).
func (s *Session) remember(key string) {
	if len(s.approvals) >= DefaultMaxApprovals {
		clear(s.approvals)
	}
	s.approvals[key] = true
}

// approvalKey identifies a call to rule for remembered approvals: the tool
// and the canonical form of the arguments.
func approvalKey(rule string, call Call) (string, error) {
	c, err := stdlib.CanonicalNative(call.Args)
	if err != nil {
		return "", fmt.Errorf("approval key: %w", err)
	}
	return rule + "\x00" + call.Tool + "\x00" + c, nil
}
