package eval

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/internal/jsonkind"
	"github.com/celguard/celguard/policy"
)

// Call is one tool call as the agent asked for it.
type Call struct {
	// Tool is the tool's name as the host calls it, e.g. "Bash".
	Tool string `json:"tool"`
	// Args are the call's arguments, as decoded from JSON.
	Args map[string]any `json:"args,omitempty"`
	// Cwd is the agent's working directory.
	Cwd string `json:"cwd,omitempty"`
	// ID is the host's id of the call (Claude Code's and Codex's
	// tool_use_id, AutoGen's call_id), "" when the host sends none. Rules
	// read it as call.id; every Decision echoes it; an after-event with an
	// id is matched to the before-decision of the same id (Session.After).
	ID string `json:"call_id,omitempty"`
	// Agent is who made the call; rules read it as agent.name and
	// agent.ids. Every Decision echoes it.
	Agent Agent `json:"agent,omitzero"`
}

// Agent identifies the agent that made a call.
type Agent struct {
	// Name is the agent's name as the host gives it (AutoGen's
	// agent_name, a subagent's type), "" when unknown.
	Name string `json:"name,omitempty"`
	// IDs are the host-given ids of the agent (e.g. "agent_id",
	// "conversation_id"), by the host's name for each.
	IDs map[string]string `json:"ids,omitempty"`
}

// IsZero reports whether a names no agent and carries no ids.
func (a Agent) IsZero() bool { return a.Name == "" && len(a.IDs) == 0 }

// Result is what a tool returned.
type Result struct {
	// IsError says whether the tool failed.
	IsError bool
	// Content is the text the model will see.
	Content string
	// Fields are whatever else the host reports, such as exit_code; CEL sees
	// them next to is_error and content in `result`.
	Fields map[string]any
}

// MarshalJSON writes the result as one flat object: is_error, content and
// the extra fields.
func (r Result) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(r.Fields)+2)
	maps.Copy(m, r.Fields)
	m["is_error"] = r.IsError
	m["content"] = r.Content
	return json.Marshal(m)
}

// UnmarshalJSON reads a flat object: is_error and content, every other key
// becomes a field.
func (r *Result) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*r = Result{}
	if v, ok := m["is_error"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return fmt.Errorf("result.is_error must be true or false, not %s", jsonkind.Of(v))
		}
		r.IsError = b
		delete(m, "is_error")
	}
	if v, ok := m["content"]; ok {
		switch c := v.(type) {
		case string:
			r.Content = c
		case nil:
		default:
			// Structured content is kept as its JSON text, so rules can
			// still search it.
			enc, _ := json.Marshal(c)
			r.Content = string(enc)
		}
		delete(m, "content")
	}
	if len(m) > 0 {
		r.Fields = m
	}
	return nil
}

// Codes of the decisions the engine makes itself, beside the codes rules set.
const (
	CodePolicyError      = "policy_error"      // a rule's expression failed at run time (fail closed)
	CodeApprovalRequired = "approval_required" // an ask rule matched and nobody could be asked
	CodeApprovalTimeout  = "approval_timeout"  // an ask rule matched and the approver did not answer in time
	CodeApprovalDenied   = "approval_denied"   // the approver said no
	CodeJudgeDenied      = "judge_denied"      // the rule's judge refused the call
	CodeTurnHalted       = "turn_halted"       // an earlier call halted this turn
	CodeInvalidCall      = "invalid_call"      // the call itself is malformed (no tool name)
	CodeCallRefused      = "call_refused"      // an after-event whose call id names a call refused before it ran (Session.After)
	CodeCanceled         = "canceled"          // the context ended before a decision
	CodeRewriteConflict  = "rewrite_conflict"  // an untrusted project's rewrites did not settle with the trusted rules' (decide.go, rule 11)
	CodeUntrustedRewrite = "untrusted_rewrite" // an untrusted project rewrote the call: asked, never applied unseen (decide.go, rule 12)
	// CodeStateTampered marks a decision made with a session state that
	// failed its check (changed outside celguard): see
	// Engine.RestoreTampered and Decision.StateTampered.
	CodeStateTampered = "state_tampered"
)

// Decision is the engine's answer for one call, and the record an audit log
// writes. Its JSON field names are stable.
type Decision struct {
	Verdict policy.Verdict `json:"verdict"`
	Phase   policy.Phase   `json:"phase"`
	Tool    string         `json:"tool"`
	// CallID and Agent echo the call's id and agent (Call.ID, Call.Agent).
	CallID string `json:"call_id,omitempty"`
	Agent  Agent  `json:"agent,omitzero"`
	// RuleRef identifies the rule that decided; empty when no rule matched
	// and the default verdict applied.
	compile.RuleRef
	// Reason is the rule's message, or its reason when it has none.
	Reason string `json:"reason,omitempty"`
	Code   string `json:"code,omitempty"`
	// Args are the rewritten arguments, when a modify rule applied before
	// the call.
	Args map[string]any `json:"args,omitempty"`
	// Content is the rewritten result content, when a modify rule applied
	// after the call.
	Content *string `json:"content,omitempty"`
	// Messages are the rewritten messages, when a modify rule applied in
	// the input phase: the whole list the model is to be sent.
	Messages []Message `json:"messages,omitempty"`
	// Output is the rewritten output, when a modify rule applied in the
	// output phase.
	Output *ModelOutput `json:"output,omitempty"`
	// Description is the tool's rewritten description, when a modify rule
	// applied in the tools phase.
	Description *string `json:"description,omitempty"`
	// Modified lists the modify rules applied, in order.
	Modified []string `json:"modified_by,omitempty"`
	// Approval records how an ask rule was settled.
	Approval *ApprovalRecord `json:"approval,omitempty"`
	// Judge is what the ask rule's judge said, if it has one.
	Judge *JudgeRecord `json:"judge,omitempty"`
	// Error is the run-time error behind a policy_error decision.
	Error string `json:"error,omitempty"`
	// Untrusted says the decision is an untrusted project's (docs/layers.md):
	// made by its rule, its default verdict or its rule's failure, and
	// stricter than the trusted layers' decision.
	Untrusted bool `json:"untrusted,omitempty"`
	// StateTampered says the session's stored state failed its check
	// before this call (it was changed outside celguard), so the call was
	// decided with the state restored fail-closed (Engine.RestoreTampered).
	// The engine never sets it; the host that found the fault does.
	StateTampered bool `json:"state_tampered,omitempty"`
	// Metadata is the deciding rule's metadata over its policy's (a rule's
	// key wins); empty when no rule decided or neither declares any.
	Metadata map[string]string `json:"metadata,omitempty"`
	// DecisionID, Time, PolicyDigest and SessionID are the decision's audit
	// record, set on every decision of an engine built with
	// WithDecisionMetadata (and empty otherwise, so that tests and goldens
	// stay stable): a random 128-bit id (32 hex digits, or the
	// WithDecisionIDs source's), the engine clock's time in UTC (WithClock),
	// the compile.PolicySet.Digest of the set that decided, and the
	// session's id.
	DecisionID   string    `json:"decision_id,omitempty"`
	Time         time.Time `json:"time,omitzero"`
	PolicyDigest string    `json:"policy_digest,omitempty"`
	SessionID    string    `json:"session_id,omitempty"`
	// Bundles are the signed policy bundles in the set that decided
	// (compile.PolicySet.Bundles: NAME@VERSION/serial-N), with the audit
	// record; empty when the set holds none.
	Bundles []string `json:"bundles,omitempty"`
	// Listing is what one tools/list showed, on the one decision that
	// records the list (Session.ToolList); nil on every other decision.
	Listing *ToolListing `json:"listing,omitempty"`
	// Monitored is what a monitored rule (a rule of a policy in monitor
	// mode, or any rule that is not mandatory under WithMonitor) would
	// have decided: the first one that matched before the rule that did
	// decide, which the decision went past as if it were absent. Nil when
	// none matched.
	Monitored *Monitored `json:"monitored,omitempty"`
	// Trace lists the rules considered, when tracing was asked for.
	Trace []TraceStep `json:"trace,omitempty"`
}

// Monitored is the would-be decision of a monitored rule (monitor mode):
// its verdict, code and reason (or, for a condition that failed under a
// closed failure policy, a block with code policy_error and the error).
// An ask is not put to the approver, a modify not applied, a halt does not
// halt the turn.
type Monitored struct {
	// RuleRef identifies the monitored rule (never empty).
	compile.RuleRef
	Verdict  policy.Verdict    `json:"verdict"`
	Code     string            `json:"code,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Error    string            `json:"error,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Untrusted says the rule is an untrusted project's.
	Untrusted bool `json:"untrusted,omitempty"`
}

// Allowed reports whether the tool may run (before) or its result reach the
// model (after): allow, warn and modify.
func (d Decision) Allowed() bool {
	switch d.Verdict {
	case policy.Allow, policy.Warn, policy.Modify:
		return true
	}
	return false
}

// ApprovalRecord says how an ask rule was settled.
type ApprovalRecord struct {
	// Rule is the ask rule's id.
	Rule string `json:"rule_id"`
	// Outcome is how: approved, denied, deferred, remembered, or
	// unavailable and error when nobody could approve.
	Outcome ApprovalOutcome `json:"outcome"`
	// Remember is the scope the approval was remembered for, if any.
	Remember string `json:"remember,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Request is the id of the approval request a person can answer
	// (outcome deferred or unavailable, with WithApprovalRequests), or of
	// the request whose grant let the call run (outcome remembered).
	Request string `json:"request_id,omitempty"`
}

// TraceStep is one rule as the evaluator considered it.
type TraceStep struct {
	// Rule is the rule's id.
	Rule    string `json:"rule_id"`
	Policy  string `json:"policy"`
	Verdict string `json:"verdict"`
	// Outcome is one of: tool_not_matched, no_match, matched, applied
	// (a modify), already_applied, error, monitored.
	Outcome Outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"`
	// Untrusted marks a rule of an untrusted project: its track decides
	// apart from the trusted rules' (docs/layers.md).
	Untrusted bool `json:"untrusted,omitempty"`
}

// Outcome is what came of one rule the evaluator considered, in a trace
// and in an explanation. Its values are stable JSON strings.
type Outcome string

// Rule outcomes.
const (
	// OutcomeToolNotMatched: the rule's tool matcher excludes the tool.
	OutcomeToolNotMatched Outcome = "tool_not_matched"
	// OutcomeNoMatch: the condition was false.
	OutcomeNoMatch Outcome = "no_match"
	// OutcomeMatched: the rule decided the call.
	OutcomeMatched Outcome = "matched"
	// OutcomeApplied: a modify rule rewrote the call (or result).
	OutcomeApplied Outcome = "applied"
	// OutcomeAlreadyApplied: a modify rule skipped on a later pass.
	OutcomeAlreadyApplied Outcome = "already_applied"
	// OutcomeError: the condition or the rewrite failed.
	OutcomeError Outcome = "error"
	// OutcomeMonitored: a monitored rule matched (or failed closed); the
	// decision went past it and reports it in Decision.Monitored.
	OutcomeMonitored Outcome = "monitored"
)
