package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// DecisionRecord is one decision as the decision log writes it: the
// decision's audit record and outcome, with the call's tool and arguments
// (or the model's messages or output) masked. docs/decision-log.md
// documents it and docs/schema/decision-log.schema.json is its JSON Schema.
//
// Masking: every argument a trusted policy's decision_log.mask names is
// replaced by "[MASKED]", and every credential the secret-redaction
// patterns find (stdlib.RedactSecrets) in what is left, in any string of
// the record, by "[REDACTED:<kind>]"; a masked value is also cut out of the
// reason and error, which rules may build from the arguments. Masked lists
// the paths masked, never their values.
type DecisionRecord struct {
	DecisionID   string       `json:"decision_id"`
	Time         time.Time    `json:"time"`
	PolicyDigest string       `json:"policy_digest"`
	SessionID    string       `json:"session_id"`
	Agent        Agent        `json:"agent,omitzero"`
	CallID       string       `json:"call_id,omitempty"`
	Phase        policy.Phase `json:"phase"`
	Tool         string       `json:"tool"`
	// Args are the call's arguments, masked.
	Args map[string]any `json:"args,omitempty"`
	// Messages and Output are the model's input or output, masked.
	Messages []Message    `json:"messages,omitempty"`
	Output   *ModelOutput `json:"output,omitempty"`

	Verdict policy.Verdict `json:"verdict"`
	compile.RuleRef
	Code     string            `json:"code,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Modified and Rewrite are the modify rules applied and what they
	// rewrote (masked as the call is).
	Modified  []string        `json:"modified_by,omitempty"`
	Rewrite   *Rewrite        `json:"rewrite,omitempty"`
	Approval  *ApprovalRecord `json:"approval,omitempty"`
	Error     string          `json:"error,omitempty"`
	Untrusted bool            `json:"untrusted,omitempty"`
	// Monitored is the would-be decision of a monitored rule (monitor
	// mode), as in the Decision.
	Monitored *Monitored `json:"monitored,omitempty"`
	// Masked lists the paths masked (args.env.TOKEN, messages.0.content),
	// each with why: "policy" (a declared mask) or "secret".
	Masked []MaskedPath `json:"masked,omitempty"`
}

// Rewrite is what a modify decision rewrote, as the decision log writes
// it.
type Rewrite struct {
	Args     map[string]any `json:"args,omitempty"`
	Content  *string        `json:"content,omitempty"`
	Messages []Message      `json:"messages,omitempty"`
	Output   *ModelOutput   `json:"output,omitempty"`
}

// MaskedPath is one value the decision log masked.
type MaskedPath struct {
	Path string `json:"path"`
	// By is "policy" (a decision_log.mask entry) or "secret" (a credential
	// the secret patterns found).
	By string `json:"by"`
}

// DecisionSink receives every decision of an engine built with
// WithDecisionSink, as a record, once the decision is made. It is called
// from every session at once, so it must be safe for concurrent use. An
// error is never dropped: the engine hands it to the option's onError, or
// refuses the decision (decision_log_failed).
type DecisionSink interface {
	WriteDecision(ctx context.Context, rec *DecisionRecord) error
}

// CodeDecisionLogFailed is the code of a decision refused because the
// decision log could not record it (WithDecisionSink without onError).
const CodeDecisionLogFailed = "decision_log_failed"

// WithDecisionSink writes every decision to sink as a DecisionRecord, and
// implies WithDecisionMetadata (a record always has its id, time, digest
// and session). When the sink fails, onError is called with the error and
// the decision stands; with a nil onError the decision fails closed: it
// becomes a block with code decision_log_failed, and Before (After,
// EndTurn, Input, Output) returns the error with it. Records are written
// before the decision is returned, so a host never acts on a decision the
// log lacks.
func WithDecisionSink(sink DecisionSink, onError func(error)) Option {
	return func(c *config) error {
		if sink == nil {
			return errors.New("eval.WithDecisionSink: nil sink")
		}
		c.sink, c.sinkError = sink, onError
		if c.auditIDs == nil {
			c.auditIDs = randomID
		}
		return nil
	}
}

// logDecision writes d to the engine's sink, if any: the decision of event
// (call, and io in the input and output phases) by set.
func (s *Session) logDecision(ctx context.Context, set *compile.PolicySet, d Decision, call Call, io *modelIO) (Decision, error) {
	sink := s.eng.cfg.sink
	if sink == nil {
		return d, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rec := newDecisionRecord(set, d, call, io)
	err := sink.WriteDecision(ctx, rec)
	if err == nil {
		return d, nil
	}
	if s.eng.cfg.sinkError != nil {
		s.eng.cfg.sinkError(err)
		return d, nil
	}
	r := refusal(d.Phase, d.Tool, CodeDecisionLogFailed, "the decision could not be written to the decision log: "+err.Error(), nil)
	r.CallID, r.Agent, r.Error = d.CallID, d.Agent, err.Error()
	r.DecisionID, r.Time, r.PolicyDigest, r.SessionID = d.DecisionID, d.Time, d.PolicyDigest, d.SessionID
	return r, fmt.Errorf("eval: decision log: %w", err)
}

// The marks a masked value is replaced with.
const (
	maskedValue = "[MASKED]"
	// maxLoggedString bounds each string of a record (in bytes, cut on a
	// character boundary), so that a call with a huge argument does not
	// make a huge line.
	maxLoggedString = 4096
)

// newDecisionRecord is the record of decision d of call (and of the
// model's io, in the input and output phases; nil otherwise) by set,
// masked as DecisionRecord says.
func newDecisionRecord(set *compile.PolicySet, d Decision, call Call, io *modelIO) *DecisionRecord {
	rec := &DecisionRecord{
		DecisionID: d.DecisionID, Time: d.Time, PolicyDigest: d.PolicyDigest, SessionID: d.SessionID,
		Agent: d.Agent, CallID: d.CallID, Phase: d.Phase, Tool: d.Tool,
		Verdict: d.Verdict, RuleRef: d.RuleRef, Code: d.Code,
		Modified: slices.Clone(d.Modified), Untrusted: d.Untrusted, Approval: d.Approval,
	}
	m := &masker{}
	var masks [][]string
	if set != nil {
		masks = masksFor(set.LogMasks(), call.Tool)
	}
	if call.Args != nil && d.Phase.HasCall() {
		rec.Args = m.args("args", call.Args, masks)
	}
	if io != nil {
		rec.Messages = m.messages("messages", io.messages)
		rec.Output = m.output("output", io.output)
	}
	if d.Args != nil || d.Content != nil || d.Messages != nil || d.Output != nil {
		rw := &Rewrite{Messages: m.messages("rewrite.messages", d.Messages), Output: m.output("rewrite.output", d.Output)}
		if d.Args != nil {
			rw.Args = m.args("rewrite.args", d.Args, masks)
		}
		if d.Content != nil {
			c := m.text("rewrite.content", *d.Content)
			rw.Content = &c
		}
		rec.Rewrite = rw
	}
	rec.Reason = m.free(d.Reason)
	rec.Error = m.free(d.Error)
	if len(d.Metadata) > 0 {
		rec.Metadata = make(map[string]string, len(d.Metadata))
		for k, v := range d.Metadata {
			rec.Metadata[k] = m.free(v)
		}
	}
	if d.Monitored != nil {
		mo := *d.Monitored
		mo.Reason, mo.Error = m.free(mo.Reason), m.free(mo.Error)
		mo.Metadata = nil
		if len(d.Monitored.Metadata) > 0 {
			mo.Metadata = make(map[string]string, len(d.Monitored.Metadata))
			for k, v := range d.Monitored.Metadata {
				mo.Metadata[k] = m.free(v)
			}
		}
		rec.Monitored = &mo
	}
	rec.Masked = m.paths
	return rec
}

// masksFor returns the paths masked for tool.
func masksFor(all []compile.LogMask, tool string) [][]string {
	var out [][]string
	for _, lm := range all {
		applies := len(lm.Tools) == 0
		for _, g := range lm.Tools {
			if ok, _ := doublestar.Match(g, tool); ok {
				applies = true
				break
			}
		}
		if applies {
			out = append(out, lm.Paths...)
		}
	}
	return out
}

// finish completes decision d (and its error err) of call (and io, in the
// input and output phases) by set: it echoes the call's identity, fills the
// audit record and writes the decision log.
func (s *Session) finish(ctx context.Context, set *compile.PolicySet, d Decision, err error, call Call, io *modelIO) (Decision, error) {
	d.CallID, d.Agent = call.ID, call.Agent
	d = s.auditWith(d, set)
	d, lerr := s.logDecision(ctx, set, d, call, io)
	if err == nil {
		err = lerr
	}
	return d, err
}

// auditWith fills d's audit record (WithDecisionMetadata), set having
// decided.
func (s *Session) auditWith(d Decision, set *compile.PolicySet) Decision {
	if next := s.eng.cfg.auditIDs; next != nil {
		d.DecisionID, d.Time, d.PolicyDigest, d.SessionID = next(), s.eng.cfg.now().UTC(), set.Digest(), s.id
	}
	return d
}
