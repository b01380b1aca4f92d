package telemetry

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"

	"github.com/celguard/celguard/decisionlog"
)

// CountersPrefix begins the attributes of the counters a decision read:
// celguard.counters.POLICY/NAME (the value read) and
// celguard.counters.POLICY/NAME.key (its key, masked), and
// celguard.counters.omitted (how many were read past the bound). A
// counter's id always holds a slash, so no counter is named "omitted".
const CountersPrefix = "celguard.counters."

// Attributes are a decision's span and log attributes, from its masked
// record (so every string in them is masked as the decision log masks it,
// and bounded by decisionlog.MaxString). GenAI semantic-convention names
// where they define one (gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.agent.name, gen_ai.conversation.id), celguard.* for the rest;
// docs/telemetry.md lists them. An attribute whose value is empty is left
// out.
func Attributes(rec *decisionlog.Record) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 24)
	str := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	str("gen_ai.tool.name", rec.Tool)
	str("gen_ai.tool.call.id", rec.CallID)
	str("gen_ai.agent.name", rec.Agent.Name)
	str("gen_ai.conversation.id", rec.SessionID)
	str("celguard.decision.id", rec.DecisionID)
	str("celguard.phase", rec.Phase.String())
	str("celguard.verdict", rec.Verdict.String())
	str("celguard.rule.id", rec.RuleID)
	str("celguard.policy", rec.Policy)
	str("celguard.rule.file", rec.File)
	if rec.Line > 0 {
		a = append(a, attribute.Int("celguard.rule.line", rec.Line), attribute.Int("celguard.rule.col", rec.Col))
	}
	str("celguard.code", rec.Code)
	str("celguard.reason", rec.Reason)
	str("celguard.error", rec.Error)
	str("celguard.policy.digest", rec.PolicyDigest)
	if len(rec.Bundles) > 0 {
		a = append(a, attribute.StringSlice("celguard.bundles", rec.Bundles))
	}
	// The layer a decision comes from is known as trusted or not: an
	// untrusted project's rule, default verdict or failure.
	if rec.Untrusted {
		str("celguard.layer", "project-untrusted")
	}
	a = append(a, attribute.Bool("celguard.monitored", rec.Monitored != nil))
	if m := rec.Monitored; m != nil {
		str("celguard.monitored.rule.id", m.RuleID)
		str("celguard.monitored.verdict", m.Verdict.String())
		str("celguard.monitored.code", m.Code)
	}
	if ap := rec.Approval; ap != nil {
		str("celguard.approval.outcome", string(ap.Outcome))
		str("celguard.approval.rule.id", ap.Rule)
		str("celguard.approval.request.id", ap.Request)
		// Who answered, when a person did in the console of celguard serve.
		str("celguard.approval.operator", rec.Metadata["operator"])
	}
	if len(rec.Modified) > 0 {
		a = append(a, attribute.StringSlice("celguard.modified_by", rec.Modified))
	}
	if rec.Rewrite != nil {
		if b, err := json.Marshal(rec.Rewrite); err == nil {
			str("celguard.rewrite", string(b))
		}
	}
	// The counters the rules read: celguard.counters.POLICY/NAME is the
	// value, .key the key when the counter has one (masked as the
	// decision log masks it); at most eval.MaxCountersRead of them.
	for _, c := range rec.Counters {
		a = append(a, attribute.Int64(CountersPrefix+c.ID, c.Value))
		str(CountersPrefix+c.ID+".key", c.Key)
	}
	if rec.CountersOmitted > 0 {
		a = append(a, attribute.Int(CountersPrefix+"omitted", rec.CountersOmitted))
	}
	if len(rec.Masked) > 0 {
		paths := make([]string, len(rec.Masked))
		for i, p := range rec.Masked {
			b, _ := json.Marshal(p)
			paths[i] = string(b)
		}
		a = append(a, attribute.StringSlice("celguard.masked", paths))
	}
	return a
}
