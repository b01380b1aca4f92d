// Package decisionlog is celguard's decision log: the record of a decision
// as the log writes it (Record, with the call's arguments masked), the
// sink that appends records to a file (FileSink, an eval.DecisionSink), and
// the masking every output that shows a call applies (MaskRequest for the
// approval requests a person is shown). docs/decision-log.md documents the
// record and docs/schema/decision-log.schema.json is its JSON Schema.
//
// It is a package of its own, above the evaluator, because what is logged
// and how it is masked is the audit trail's concern, not the decision's:
// eval hands every decision to a sink unmasked (eval.DecisionEvent), and
// the masking itself (internal/mask) is shared with what eval sends to a
// judge.
package decisionlog

import (
	"fmt"
	"slices"
	"time"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/mask"
	"github.com/celguard/celguard/policy"
)

// Record is one decision as the decision log writes it: the decision's
// audit record and outcome, with the call's tool and arguments (or the
// model's messages or output) masked.
//
// Masking: every argument a trusted policy's decision_log.mask names is
// replaced by "[MASKED]", and every credential the secret-redaction
// patterns find (stdlib.RedactSecrets) in what is left, in any string of
// the record, by "[REDACTED:<kind>]"; a masked value is also cut out of the
// reason and error, which rules may build from the arguments. Masked lists
// the paths masked, never their values. Every string is cut at
// MaxString bytes.
type Record struct {
	DecisionID   string    `json:"decision_id"`
	Time         time.Time `json:"time"`
	PolicyDigest string    `json:"policy_digest"`
	SessionID    string    `json:"session_id"`
	// Bundles are the signed policy bundles of the set that decided.
	Bundles []string     `json:"bundles,omitempty"`
	Agent   eval.Agent   `json:"agent,omitzero"`
	CallID  string       `json:"call_id,omitempty"`
	Phase   policy.Phase `json:"phase"`
	Tool    string       `json:"tool"`
	// Args are the call's arguments, masked.
	Args map[string]any `json:"args,omitempty"`
	// Messages and Output are the model's input or output, masked.
	Messages []eval.Message    `json:"messages,omitempty"`
	Output   *eval.ModelOutput `json:"output,omitempty"`
	// Resource is the read of a resource or prompt (resource phase), its
	// URI and arguments masked.
	Resource *eval.Resource `json:"resource,omitempty"`

	Verdict policy.Verdict `json:"verdict"`
	compile.RuleRef
	Code     string            `json:"code,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Modified and Rewrite are the modify rules applied and what they
	// rewrote (masked as the call is).
	Modified  []string             `json:"modified_by,omitempty"`
	Rewrite   *Rewrite             `json:"rewrite,omitempty"`
	Approval  *eval.ApprovalRecord `json:"approval,omitempty"`
	Error     string               `json:"error,omitempty"`
	Untrusted bool                 `json:"untrusted,omitempty"`
	// Monitored is the would-be decision of a monitored rule (monitor
	// mode), as in the Decision.
	Monitored *eval.Monitored `json:"monitored,omitempty"`
	// Listing is what one tools/list showed, on its one record
	// (eval.Session.ToolList), as in the Decision.
	Listing *eval.ToolListing `json:"listing,omitempty"`
	// Counters are the counters the decision's rules read and the values
	// they read (eval.DecisionEvent.Counters, at most
	// eval.MaxCountersRead), each key masked as the reason is (a key is
	// computed from the call's arguments); CountersOmitted counts those
	// read past the bound.
	Counters        []eval.CounterRead `json:"counters,omitempty"`
	CountersOmitted int                `json:"counters_omitted,omitempty"`
	// Masked lists the paths masked (args.env.TOKEN, messages.0.content),
	// each with why: "policy" (a declared mask) or "secret".
	Masked []mask.Path `json:"masked,omitempty"`
	// Who says who decided where (FileSinkOptions.Who): the repository,
	// the machine, the OS user, the agent host and its version.
	Who *Who `json:"who,omitempty"`
}

// Who is who decides where: the repository (its root, and its origin
// remote without credentials), the machine, the OS user, and the agent
// host and its version. The decision log writes it in every record
// ("who") and telemetry as resource attributes, so that a central view
// tells machines apart.
type Who struct {
	RepoRoot     string `json:"repo_root,omitempty"`
	RepoRemote   string `json:"repo_remote,omitempty"`
	Machine      string `json:"machine,omitempty"`
	User         string `json:"user,omitempty"`
	AgentHost    string `json:"agent_host,omitempty"`
	AgentVersion string `json:"agent_version,omitempty"`
}

// Rewrite is what a modify decision rewrote, as the decision log writes
// it.
type Rewrite struct {
	Args     map[string]any    `json:"args,omitempty"`
	Content  *string           `json:"content,omitempty"`
	Messages []eval.Message    `json:"messages,omitempty"`
	Output   *eval.ModelOutput `json:"output,omitempty"`
	// Description is a tool's rewritten description (tools phase).
	Description *string `json:"description,omitempty"`
}

// MaxString bounds each string of a record, in bytes (cut on a character
// boundary), so that a call with a huge argument does not make a huge
// line.
const MaxString = 4096

// Masks are the argument paths the trusted policies' decision_log.mask
// entries mask for tool.
func Masks(logMasks []compile.LogMask, tool string) [][]string {
	rules := make([]mask.Rule, len(logMasks))
	for i, lm := range logMasks {
		rules[i] = mask.Rule{Tools: lm.Tools, Paths: lm.Paths}
	}
	return mask.For(rules, tool)
}

// NewRecord is the masked record of a decision event, as Record says.
func NewRecord(ev *eval.DecisionEvent) *Record {
	d := ev.Decision
	rec := &Record{
		DecisionID: d.DecisionID, Time: d.Time, PolicyDigest: d.PolicyDigest, SessionID: d.SessionID, Bundles: slices.Clone(d.Bundles),
		Agent: d.Agent, CallID: d.CallID, Phase: d.Phase, Tool: d.Tool,
		Verdict: d.Verdict, RuleRef: d.RuleRef, Code: d.Code,
		Modified: slices.Clone(d.Modified), Untrusted: d.Untrusted, Approval: d.Approval, Listing: d.Listing,
	}
	m := &mask.Masker{MaxString: MaxString}
	masks := Masks(ev.LogMasks, ev.Call.Tool)
	if ev.Call.Args != nil && d.Phase.HasCall() {
		rec.Args = m.Args("args", ev.Call.Args, masks)
	}
	rec.Messages = messages(m, "messages", ev.Messages)
	rec.Output = output(m, "output", ev.Output)
	if r := ev.Resource; r != nil {
		rr := &eval.Resource{Server: r.Server, Kind: r.Kind, URI: m.Text("resource.uri", r.URI), Name: r.Name, Agent: r.Agent}
		for k, v := range r.Arguments {
			if rr.Arguments == nil {
				rr.Arguments = map[string]string{}
			}
			rr.Arguments[k] = m.Text("resource.arguments."+k, v)
		}
		rec.Resource = rr
	}
	if d.Args != nil || d.Content != nil || d.Messages != nil || d.Output != nil || d.Description != nil {
		rw := &Rewrite{Messages: messages(m, "rewrite.messages", d.Messages), Output: output(m, "rewrite.output", d.Output)}
		if d.Args != nil {
			rw.Args = m.Args("rewrite.args", d.Args, masks)
		}
		if d.Content != nil {
			c := m.Text("rewrite.content", *d.Content)
			rw.Content = &c
		}
		if d.Description != nil {
			c := m.Text("rewrite.description", *d.Description)
			rw.Description = &c
		}
		rec.Rewrite = rw
	}
	rec.Reason = m.Free(d.Reason)
	rec.Error = m.Free(d.Error)
	if len(d.Metadata) > 0 {
		rec.Metadata = make(map[string]string, len(d.Metadata))
		for k, v := range d.Metadata {
			rec.Metadata[k] = m.Free(v)
		}
	}
	if d.Monitored != nil {
		mo := *d.Monitored
		mo.Reason, mo.Error = m.Free(mo.Reason), m.Free(mo.Error)
		mo.Metadata = nil
		if len(d.Monitored.Metadata) > 0 {
			mo.Metadata = make(map[string]string, len(d.Monitored.Metadata))
			for k, v := range d.Monitored.Metadata {
				mo.Metadata[k] = m.Free(v)
			}
		}
		rec.Monitored = &mo
	}
	if len(ev.Counters) > 0 {
		rec.Counters = make([]eval.CounterRead, len(ev.Counters))
		for i, c := range ev.Counters {
			c.Key = m.Free(c.Key)
			rec.Counters[i] = c
		}
	}
	rec.CountersOmitted = ev.CountersOmitted
	rec.Masked = m.Paths
	return rec
}

// messages returns the messages with the credentials in their content
// redacted.
func messages(m *mask.Masker, prefix string, ms []eval.Message) []eval.Message {
	if ms == nil {
		return nil
	}
	out := make([]eval.Message, len(ms))
	for i, msg := range ms {
		out[i] = eval.Message{Role: m.Bound(msg.Role), Name: m.Bound(msg.Name), Content: m.Text(fmt.Sprintf("%s.%d.content", prefix, i), msg.Content)}
	}
	return out
}

// output returns the output with the credentials in its text and content
// redacted.
func output(m *mask.Masker, prefix string, o *eval.ModelOutput) *eval.ModelOutput {
	if o == nil {
		return nil
	}
	out := &eval.ModelOutput{Text: m.Text(prefix+".text", o.Text), Content: mask.CopyJSON(o.Content)}
	if s, ok := out.Content.(string); ok {
		out.Content = m.Text(prefix+".content", s)
	} else {
		m.Value(out.Content, prefix+".content")
	}
	return out
}

// MaskRequest is an approval request as a person is shown it (`celguard
// approvals list`, `celguard approve`): its arguments, summary and reason
// masked as the decision log masks a call, with the masks of logMasks
// (nil: credentials only), and strings unbounded. The request a person
// approves is still the exact call (its digest); only what is shown is
// masked.
func MaskRequest(r eval.PendingRequest, logMasks []compile.LogMask) eval.PendingRequest {
	m := &mask.Masker{}
	if r.Args != nil {
		r.Args = m.Args("args", r.Args, Masks(logMasks, r.Tool))
	}
	r.Summary = m.Free(r.Summary)
	r.Reason = m.Free(r.Reason)
	r.Cwd = m.Free(r.Cwd)
	return r
}

// MaskGrant is an approval as a person is shown it: its summary of the
// call masked as MaskRequest masks a request's.
func MaskGrant(g eval.Grant) eval.Grant {
	m := &mask.Masker{}
	g.Summary = m.Free(g.Summary)
	return g
}
