package eval

import (
	"context"
	"errors"
	"strings"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
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
func (ev *evaluation) ask(d Decision, r *compile.Rule) (out Decision, err error) {
	s := ev.s
	var judged *JudgeRecord
	defer func() {
		if judged != nil && out.Judge == nil {
			out.Judge = judged
		}
	}()
	ac := ev.approvalCall()
	digest, err := CallDigest(ac)
	if err != nil {
		return ev.policyError(r, err, nil), nil
	}
	callKey := approvalKey(r.ID, digest)
	ruleKey := r.ID + "\x00*"
	if out, ok := ev.denied(d, r, digest); ok {
		return out, nil
	}
	if out, ok := ev.remembered(d, r, callKey, ruleKey, digest); ok {
		return out, nil
	}
	if r.Judge != "" {
		var done bool
		if out, judged, done = ev.settleByJudge(d, r, digest); done {
			return out, nil
		}
	}
	a := s.eng.cfg.approver
	if a == nil {
		rec := ApprovalRecord{Rule: r.ID, Outcome: ApprovalUnavailable, Request: ev.request(d, r, digest)}
		return ev.refuseAsk(r, CodeApprovalRequired, d.Reason, rec), nil
	}
	ans, asked := s.be.answered(callKey) // a decision that runs again (storesession.go) asks once
	if !asked {
		ans, err = a.Approve(ev.ctx, ApprovalRequest{SessionID: s.id, Rule: r.ID, Policy: r.Policy.Name, Reason: d.Reason, Code: r.Code, Call: ev.call})
		if err == nil {
			s.be.noteAnswer(callKey, ans)
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
		remember := ans.Remember
		if !liftable(r) {
			remember = RememberNone
		}
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalApproved, Remember: remember.String(), Reason: ans.Reason}
		s.mu.Lock()
		switch remember {
		case RememberCall:
			s.book.remember(callKey)
		case RememberRule:
			s.book.remember(ruleKey)
		}
		s.mu.Unlock()
	case Defer:
		d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalDeferred, Request: ev.request(d, r, digest)}
	default:
		reason := d.Reason
		if ans.Reason != "" {
			reason = strings.TrimSpace(reason + " (denied: " + ans.Reason + ")")
		}
		return ev.refuseAsk(r, CodeApprovalDenied, reason, ApprovalRecord{Rule: r.ID, Outcome: ApprovalDenied, Reason: ans.Reason}), nil
	}
	return d, nil
}

// denied refuses rule r's ask of the call with digest when a person denied
// its request in this session (Session.Deny): code approval_denied, with
// the person's note, before any grant, judge or approver is consulted,
// and no new request.
func (ev *evaluation) denied(d Decision, r *compile.Rule, digest string) (Decision, bool) {
	s := ev.s
	s.mu.Lock()
	dn, ok := s.book.denied(r.ID, digest)
	s.mu.Unlock()
	if !ok {
		return Decision{}, false
	}
	reason := d.Reason + " (denied"
	if dn.By != "" {
		reason += " by " + dn.By
	}
	if dn.Note != "" {
		reason += ": " + dn.Note
	}
	reason += ")"
	return ev.refuseAsk(r, CodeApprovalDenied, strings.TrimSpace(reason), ApprovalRecord{Rule: r.ID, Outcome: ApprovalDenied, Reason: dn.Note, Request: dn.ID}), true
}

// remembered settles the ask d of rule r by an approval remembered or
// granted earlier (ok), never for a rule no such approval lifts (liftable).
func (ev *evaluation) remembered(d Decision, r *compile.Rule, callKey, ruleKey, digest string) (Decision, bool) {
	if !liftable(r) {
		return d, false
	}
	s := ev.s
	s.mu.Lock()
	g, remembered := s.book.covering(r.ID, ev.approvalCall().Tool, callKey, ruleKey, digest)
	s.mu.Unlock()
	if !remembered {
		return d, false
	}
	d.Verdict = policy.Allow
	d.Approval = &ApprovalRecord{Rule: r.ID, Outcome: ApprovalRemembered, Remember: string(g.Scope), Request: g.ID}
	return d, true
}

// request records the ask d of rule r about the call with digest as a
// pending request a person can answer later, and returns its id; "" when
// the engine makes no requests (WithApprovalRequests) or no later approval
// lifts the rule (liftable).
func (ev *evaluation) request(d Decision, r *compile.Rule, digest string) string {
	s := ev.s
	if !s.eng.cfg.requests || !liftable(r) {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := ev.approvalCall()
	req := s.book.request(r.ID, r.Policy.Name, d.Reason, c, digest, s.eng.cfg.now())
	if ev.io != nil && ev.io.resource != nil && !req.Read {
		// The request was made just now (a retried read finds its own).
		s.book.markRead(req.ID)
		req.Read = true
	}
	return req.ID
}

// markRead marks request id as a read's (PendingRequest.Read).
func (b *approvalBook) markRead(id string) {
	if i := b.find(id); i >= 0 {
		b.requests[i].Read = true
	}
}

// approvalCall is the call an approval of this evaluation is bound to: the
// call itself, or for a read of phase resource (which has no call) the
// read as a call of its own (ReadCall), so that approving one read never
// lets another through.
func (ev *evaluation) approvalCall() Call {
	if ev.io != nil && ev.io.resource != nil {
		return ReadCall(*ev.io.resource)
	}
	return ev.call
}

// ReadCall is the call an approval of a read of phase resource is bound
// to: the tool mcp__SERVER__resources/read with the URI, or
// mcp__SERVER__prompts/get with the prompt's name and arguments (names no
// MCP tool can have, so no tool call's approval covers a read). Its
// digest (CallDigest) is what a grant of the read binds.
func ReadCall(r Resource) Call {
	if r.Kind == KindPrompt {
		args := map[string]any{}
		for k, v := range r.Arguments {
			args[k] = v
		}
		return Call{Tool: "mcp__" + r.Server + "__prompts/get", Args: map[string]any{"name": r.Name, "arguments": args}, Agent: r.Agent}
	}
	return Call{Tool: "mcp__" + r.Server + "__resources/read", Args: map[string]any{"uri": r.URI}, Agent: r.Agent}
}

// refuseAsk is the refusal of ask rule r's call, with how it was settled.
func (ev *evaluation) refuseAsk(r *compile.Rule, code, reason string, rec ApprovalRecord) Decision {
	d := ev.refuse(code, reason, r)
	d.Approval = &rec
	return d
}

// liftable is the mandatory exception, in one predicate: whether an
// approval given other than by answering this very ask (an approver's
// answer remembered earlier, a grant, a request for a person to answer
// later, a judge's allow) may lift rule r's ask. No approval lifts a
// mandatory rule: its asks make no request, grants and remembered
// approvals do not apply to it, an approver's answer to it is never
// remembered, and a judge's allow of it is an ask.
func liftable(r *compile.Rule) bool { return !r.Mandatory }

// approvalKey identifies a call to rule for remembered approvals: the
// rule and the call's digest (CallDigest: the tool, the canonical form of
// the arguments and the working directory), so that the canonical form is
// built once per ask and a remembered key stays 64 hex digits however
// large the call (a Write's whole content).
func approvalKey(rule, digest string) string {
	return rule + "\x00" + digest
}
