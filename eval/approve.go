package eval

import "context"

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
