package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/celguard/celguard/policy"
)

// ToolListing is what one tools/list showed a session (Session.ToolList),
// recorded on the list's decision.
type ToolListing struct {
	// Shown and Hidden count the tools shown and hidden.
	Shown  int `json:"shown"`
	Hidden int `json:"hidden"`
	// HiddenTools are the hidden tools' names as the policy sees them
	// (ToolDefinition.Tool), in the list's order.
	HiddenTools []string `json:"hidden_tools,omitempty"`
}

// listingKey marks the context of a ToolList's decisions of its tools.
type listingKey struct{}

// quietInListing reports whether the decision d, made inside a ToolList,
// stays out of the decision log: a tool no rule decided anything about
// (the default verdict, no code, no error, nothing monitored) is counted
// in the list's decision instead.
func quietInListing(ctx context.Context, d Decision) bool {
	if ctx == nil || ctx.Value(listingKey{}) == nil || d.Phase != policy.PhaseTools {
		return false
	}
	return d.RuleID == "" && d.Code == "" && d.Error == "" && d.Monitored == nil && d.Description == nil && d.Verdict == policy.Allow
}

// ToolList decides, as Tools does, whether the session is shown each of
// defs (one tools/list answer), and returns their decisions in order. The
// decision log gets one record for the list (its decision, returned too:
// phase tools, verdict allow, no tool, with the Listing's counts and the
// hidden tools' names) and one for each tool a rule decided something
// about (hid, rewrote, warned, failed, or a monitored rule matched); a
// tool no rule decided is counted in the list's record alone. An error is
// the first tool's that failed (its decision refuses it) or the list
// record's.
func (s *Session) ToolList(ctx context.Context, defs []ToolDefinition, opts ...CallOption) ([]Decision, Decision, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	start := s.sinkStart()
	tctx := context.WithValue(ctx, listingKey{}, true)
	out := make([]Decision, len(defs))
	l := &ToolListing{}
	var first error
	var agent Agent
	for i, def := range defs {
		d, err := s.Tools(tctx, def, opts...)
		if err != nil && first == nil {
			first = err
		}
		out[i] = d
		if d.Allowed() {
			l.Shown++
		} else {
			l.Hidden++
			l.HiddenTools = append(l.HiddenTools, def.Tool)
		}
		if i == 0 {
			agent = def.Agent
		}
	}
	set := s.eng.set.Load()
	reason := fmt.Sprintf("tools/list: %d shown, %d hidden", l.Shown, l.Hidden)
	if l.Hidden > 0 {
		reason += " (" + strings.Join(l.HiddenTools, ", ") + ")"
	}
	ld := Decision{Verdict: policy.Allow, Phase: policy.PhaseTools, Reason: reason, Listing: l}
	ld, err := s.finish(ctx, set, ld, nil, Call{Agent: agent}, nil, start)
	if first == nil {
		first = err
	}
	return out, ld, first
}

// ToolVisible decides, as Tools does, whether the session is shown def,
// for a host that checks a call of the tool against what the session may
// be shown: the decision log records it only when a rule decided something
// about the tool (as ToolList's tools), since the call's own decisions
// follow it.
func (s *Session) ToolVisible(ctx context.Context, def ToolDefinition, opts ...CallOption) (Decision, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return s.Tools(context.WithValue(ctx, listingKey{}, true), def, opts...)
}
