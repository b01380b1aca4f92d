package eval

import (
	"maps"

	"cel.dev/cel-go/common/types"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policy"
)

// This file keeps a session's facts: what earlier calls did that later
// rules read (docs/policies.md, "Session facts"). A fact is a label a rule
// added (labels: {add: [...]}), with the call that added it first. Rules read
// them in the session variable, beside the host's metadata:
//
//   - session.labels, the labels, sorted (a list of strings);
//   - session.label_calls, for each label the call that added it first:
//     a map with call (the host's call id, "" if it sent none), tool, rule
//     (the id of the rule that added it) and turn;
//   - session.recent, the last MaxRecent calls, oldest first (recent.go);
//   - session.writes, per file written, how and whether its content was
//     proven safe, session.unproven_writes (those not proven) and
//     session.unproven_writes_evicted (writes.go).
//
// Facts are part of SessionState, so they are committed with the decision
// that adds them, through every store, and read back identically by every
// host. A host's metadata cannot set them: the names are the engine's.

// MaxLabels bounds the distinct labels a session keeps. A label added past
// it is not kept, and the session's labels are then lost for good: from
// then on, reading session.labels or session.label_calls is an error, so
// every rule that reads them fails by its failure policy (closed: the call
// is blocked with policy_error). A session that needs more labels is using
// them as data; counters are the place for that.
const MaxLabels = 64

// Names of the facts in the session variable.
const (
	factLabels     = "labels"
	factLabelCalls = "label_calls"
	factRecent     = "recent"
)

// LabelFact is a label of a session in a SessionState: the label, and the
// call that added it first.
type LabelFact struct {
	Label  string `json:"label"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool"`
	Turn   uint64 `json:"turn"`
	compile.RuleRef
}

// sessionFacts are the facts of a session; the Session's mutex guards them.
type sessionFacts struct {
	labels []LabelFact // sorted by label
	// over says a label was refused past MaxLabels.
	over bool
	// recent are the last MaxRecent calls, oldest first; seq is the
	// number of the latest call (recent.go).
	recent []RecentCall
	seq    uint64
	// recentVals are the CEL values of recent, made once each when first
	// read (nil until then).
	recentVals []any
	// recentEnc are the JSON encodings of recent, made once each when
	// the state is first encoded after the call changed (stateenc.go);
	// meaningful only while it is as long as recent.
	recentEnc []recentEncoding
	// writes are the files written, least recently written first, and
	// writesEvicted says an unproven one left or was never kept (writes.go).
	writes        []WriteFact
	writesEvicted bool
	// writesVal is the CEL value of writes, and unprovenVal of its
	// unproven entries, made once per change.
	writesVal, unprovenVal []any
}

// addLabels records the labels rule r adds for call in turn; it reports
// whether the facts changed. The caller holds s.mu.
func (f *sessionFacts) addLabels(r *compile.Rule, call Call, turn uint64) bool {
	changed := false
	for _, l := range r.Labels {
		i, found := f.find(l)
		if found {
			continue
		}
		if len(f.labels) >= MaxLabels {
			if !f.over {
				f.over, changed = true, true
			}
			continue
		}
		fact := LabelFact{Label: l, CallID: call.ID, Tool: call.Tool, Turn: turn, RuleRef: r.Ref()}
		f.labels = append(f.labels, LabelFact{})
		copy(f.labels[i+1:], f.labels[i:])
		f.labels[i] = fact
		changed = true
	}
	return changed
}

// find is where label is or would be in the sorted labels.
func (f *sessionFacts) find(label string) (int, bool) {
	lo, hi := 0, len(f.labels)
	for lo < hi {
		m := (lo + hi) / 2
		if f.labels[m].Label < label {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(f.labels) && f.labels[lo].Label == label
}

// restore takes the facts of a state, within the bounds: a state with
// more labels than MaxLabels, or one that says labels were lost, is read as
// over the bound (fail closed).
func (f *sessionFacts) restore(labels []LabelFact, over bool) {
	f.labels, f.over = nil, over
	for _, l := range labels {
		if l.Label == "" || len(l.Label) > policy.MaxLabelLen {
			continue
		}
		i, found := f.find(l.Label)
		if found {
			continue
		}
		if len(f.labels) >= MaxLabels {
			f.over = true
			break
		}
		f.labels = append(f.labels, LabelFact{})
		copy(f.labels[i+1:], f.labels[i:])
		f.labels[i] = l
	}
}

// noteLabels records the labels of the rules that decided a track of d,
// a decision of phase on call (labelled: the trusted layers', and an
// untrusted project's). A rule adds its labels when it decides with allow,
// warn or ask, approved or not, and the call is not refused otherwise: d
// lets it run, asks, or is the block of an approval not given. A rule of
// another verdict adds none, nor does any rule when another refused the
// call (block, halt) or the engine did (policy_error and the like).
func (s *Session) noteLabels(labelled []*compile.Rule, phase policy.Phase, call Call, d Decision) {
	if len(labelled) == 0 || (phase != policy.PhaseBefore && phase != policy.PhaseAfter && phase != policy.PhaseResource) {
		return
	}
	switch {
	case d.Verdict == policy.Allow, d.Verdict == policy.Warn, d.Verdict == policy.Modify, d.Verdict == policy.Ask:
	case d.Verdict == policy.Block && (d.Code == CodeApprovalRequired || d.Code == CodeApprovalDenied || d.Code == CodeApprovalTimeout):
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range labelled {
		switch r.Verdict {
		case policy.Allow, policy.Warn, policy.Ask:
			if s.facts.addLabels(r, call, s.turn) {
				s.view = nil
			}
		}
	}
}

// sessionValue is the session variable: the host's metadata with the
// session's facts, made once per change of the facts.
func (s *Session) sessionValue() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.view != nil {
		return s.view
	}
	v := make(map[string]any, len(s.meta)+6)
	maps.Copy(v, s.meta)
	v[factRecent] = s.facts.recentValue()
	v[factWrites], v[factUnprovenWrites] = s.facts.writesValue()
	v[factWritesEvicted] = s.facts.writesEvicted
	if s.facts.over {
		err := types.NewErr("the session added more than %d distinct labels, and its labels were lost (eval.MaxLabels)", MaxLabels)
		v[factLabels], v[factLabelCalls] = err, err
	} else {
		labels := make([]string, len(s.facts.labels))
		calls := make(map[string]any, len(s.facts.labels))
		for i, l := range s.facts.labels {
			labels[i] = l.Label
			calls[l.Label] = map[string]any{"call": l.CallID, "tool": l.Tool, "rule": l.RuleID, "turn": int64(l.Turn)}
		}
		v[factLabels], v[factLabelCalls] = labels, calls
	}
	s.view = v
	return v
}
