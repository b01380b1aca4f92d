package compile

import (
	"fmt"
	"slices"

	"github.com/celguard/celguard/policy"
)

// Exclusion records a policy or rule left out of the set by layering: a
// policy of the same name in a higher layer, a rule id redefined in a higher
// layer, or an Overrides file.
type Exclusion struct {
	// Kind is "policy" or "rule".
	Kind  string       `json:"kind"`
	Name  string       `json:"name"`
	Layer policy.Layer `json:"layer"`
	Pos   policy.Pos   `json:"pos"`
	// By is what excluded it: the winning definition or the Overrides file.
	By     policy.Pos `json:"by"`
	Reason string     `json:"reason"`
}

// Exclusions lists what layering left out, in file order.
func (s *PolicySet) Exclusions() []Exclusion { return s.exclusions }

// layered is a parsed policy with the layer of its file.
type layered struct {
	p     *policy.Policy
	ds    policy.Diagnostics
	layer policy.Layer
}

type layeredOverrides struct {
	o     *policy.Overrides
	layer policy.Layer
}

// resolveLayers applies the layering rules and returns the policies to
// compile, with rules left out where a higher layer says so:
//   - of policies sharing a name, only those of the highest layer are kept
//     (two in the same layer are reported as duplicate_policy later);
//   - a rule id defined in several layers is kept from the highest;
//   - an Overrides file disables policies and rules of lower layers.
//
// Each exclusion is reported as an info diagnostic and kept for
// PolicySet.Exclusions.
func (c *compiler) resolveLayers(pols []layered, ovs []layeredOverrides) []layered {
	exclude := func(kind, name string, layer policy.Layer, pos, by policy.Pos, reason string) {
		c.set.exclusions = append(c.set.exclusions, Exclusion{Kind: kind, Name: name, Layer: layer, Pos: pos, By: by, Reason: reason})
		c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeOverridden, Severity: policy.SeverityInfo, Pos: pos,
			Related: []policy.Pos{by}, Message: fmt.Sprintf("%s %q (%s layer) is left out: %s", kind, name, layer, reason)})
	}
	// Policies: the highest layer of each name wins.
	top := map[string]policy.Layer{}
	winner := map[string]policy.Pos{}
	for _, lp := range pols {
		n := lp.p.Name.Value
		if l, ok := top[n]; !ok || lp.layer > l {
			top[n], winner[n] = lp.layer, lp.p.Name.Pos
		}
	}
	var kept []layered
	for _, lp := range pols {
		n := lp.p.Name.Value
		if lp.layer < top[n] {
			exclude("policy", n, lp.layer, lp.p.Name.Pos, winner[n], fmt.Sprintf("replaced by the %s layer's policy of the same name at %s", top[n], winner[n]))
			continue
		}
		kept = append(kept, lp)
	}
	// Overrides: disable lower layers' policies and rules.
	type disable struct {
		layer policy.Layer
		pos   policy.Pos
		used  *bool
	}
	offPolicy, offRule := map[string][]disable{}, map[string][]disable{}
	for _, lo := range ovs {
		for _, n := range lo.o.DisablePolicies {
			offPolicy[n.Value] = append(offPolicy[n.Value], disable{lo.layer, n.Pos, new(bool)})
		}
		for _, n := range lo.o.DisableRules {
			offRule[n.Value] = append(offRule[n.Value], disable{lo.layer, n.Pos, new(bool)})
		}
	}
	disabledBy := func(m map[string][]disable, name string, layer policy.Layer) (policy.Pos, bool) {
		for _, d := range m[name] {
			if d.layer > layer {
				*d.used = true
				return d.pos, true
			}
		}
		return policy.Pos{}, false
	}
	pols, kept = kept, nil
	for _, lp := range pols {
		if by, off := disabledBy(offPolicy, lp.p.Name.Value, lp.layer); off {
			exclude("policy", lp.p.Name.Value, lp.layer, lp.p.Name.Pos, by, fmt.Sprintf("disabled at %s", by))
			continue
		}
		kept = append(kept, lp)
	}
	// Rules: the highest layer of each id wins; overrides disable.
	topRule := map[string]policy.Layer{}
	ruleWinner := map[string]policy.Pos{}
	for _, lp := range kept {
		for _, r := range lp.p.Rules {
			if l, ok := topRule[r.ID.Value]; !ok || lp.layer > l {
				topRule[r.ID.Value], ruleWinner[r.ID.Value] = lp.layer, r.ID.Pos
			}
		}
	}
	for i, lp := range kept {
		var rules []policy.Rule
		changed := false
		for _, r := range lp.p.Rules {
			id := r.ID.Value
			if lp.layer < topRule[id] {
				exclude("rule", id, lp.layer, r.ID.Pos, ruleWinner[id], fmt.Sprintf("redefined by the %s layer at %s", topRule[id], ruleWinner[id]))
				changed = true
				continue
			}
			if by, off := disabledBy(offRule, id, lp.layer); off {
				exclude("rule", id, lp.layer, r.ID.Pos, by, fmt.Sprintf("disabled at %s", by))
				changed = true
				continue
			}
			rules = append(rules, r)
		}
		if changed {
			p := *lp.p // the parsed policy is shared; change a copy
			p.Rules = rules
			kept[i].p = &p
		}
	}
	// An override that disables nothing is most likely a typo.
	report := func(m map[string][]disable, kind string) {
		for name, ds := range m {
			for _, d := range ds {
				if !*d.used {
					c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeUnknownOverride, Severity: policy.SeverityWarning, Pos: d.pos,
						Message: fmt.Sprintf("disables %s %q, but no lower layer defines it", kind, name)})
				}
			}
		}
	}
	report(offPolicy, "policy")
	report(offRule, "rule")
	slices.SortStableFunc(c.set.exclusions, func(a, b Exclusion) int { return a.Pos.Compare(b.Pos) })
	return kept
}
