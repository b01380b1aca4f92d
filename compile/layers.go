package compile

import (
	"fmt"
	"slices"

	"github.com/celguard/celguard/policy"
)

// Exclusion records a policy or rule left out of the set by layering (a
// policy of the same name in a higher layer, a rule id redefined in a higher
// layer, an Overrides file), or something the layering rules refused to let
// happen: a would-be replacement of a mandatory policy or rule
// (mandatory_kept), a replacement or an Overrides file of an untrusted
// project (untrusted_ignored).
type Exclusion struct {
	// Kind is "policy", "rule", "overrides" (an ignored Overrides file) or
	// "class" (an ignored tool class of an untrusted project).
	Kind  string       `json:"kind"`
	Name  string       `json:"name"`
	Layer policy.Layer `json:"layer"`
	Pos   policy.Pos   `json:"pos"`
	// By is what excluded it: the winning definition or the Overrides file.
	By     policy.Pos `json:"by"`
	Reason string     `json:"reason"`
	// Code is the diagnostic reported with it: overridden, mandatory_kept
	// or untrusted_ignored.
	Code policy.Code `json:"code"`
}

// Exclusions lists what layering left out, in file order.
func (s *PolicySet) Exclusions() []Exclusion { return s.exclusions }

// layered is a parsed policy with the layer of its file.
type layered struct {
	p         *policy.Policy
	ds        policy.Diagnostics
	layer     policy.Layer
	untrusted bool
}

type layeredOverrides struct {
	o         *policy.Overrides
	layer     policy.Layer
	untrusted bool
}

// trustHint ends every untrusted_ignored message.
const trustHint = "run `celguard trust` in the project to let it "

// mandatoryRule reports whether rule r of policy p, from a file of the
// given layer, is mandatory: the rule's enforcement if it gives one, else
// its policy's, else mandatory in the admin layer only.
func mandatoryRule(p *policy.Policy, r *policy.Rule, layer policy.Layer) bool {
	if r.Enforcement != policy.EnforcementDefault || !r.EnforcementPos.IsZero() {
		return r.Enforcement == policy.EnforcementMandatory
	}
	return mandatoryPolicy(p, layer)
}

// mandatoryPolicy reports whether p's own enforcement is mandatory.
func mandatoryPolicy(p *policy.Policy, layer policy.Layer) bool {
	if p.Enforcement != policy.EnforcementDefault || !p.EnforcementPos.IsZero() {
		return p.Enforcement == policy.EnforcementMandatory
	}
	return layer == policy.LayerAdmin
}

// protected reports whether lp holds a mandatory rule that layering must
// keep: only trusted files can protect a rule.
func (lp layered) protected() bool {
	return !lp.untrusted && slices.ContainsFunc(lp.p.Rules, func(r policy.Rule) bool { return mandatoryRule(lp.p, &r, lp.layer) })
}

// definition is one of several policies of a name, or rules of an id, in
// different layers.
type definition struct {
	layer     policy.Layer
	pos       policy.Pos
	untrusted bool
	mandatory bool // a trusted definition layering must keep
}

// winner returns the definition that stays, of several of one name: the
// lowest-layer mandatory one if there is one (nothing replaces it), else the
// highest-layer trusted one, else (all untrusted) the highest. Definitions of
// the winner's layer and trust all stay (same-layer duplicates are reported
// as such later).
func winner(defs []definition) definition {
	var w definition
	found := false
	better := func(d definition) bool {
		switch {
		case !found:
			return true
		case d.mandatory != w.mandatory:
			return d.mandatory
		case d.untrusted != w.untrusted:
			return !d.untrusted
		case d.mandatory:
			return d.layer < w.layer
		}
		return d.layer > w.layer
	}
	for _, d := range defs {
		if better(d) {
			w, found = d, true
		}
	}
	return w
}

// lost says why definition d of a name is left out for w, the winner, with
// the code to report; ok is false when d stays.
func lost(kind, name string, d, w definition) (code policy.Code, reason string, ok bool) {
	if d.layer == w.layer && d.untrusted == w.untrusted {
		return "", "", false
	}
	switch {
	case d.untrusted && !w.untrusted && w.layer <= d.layer:
		return policy.CodeUntrustedIgnored, fmt.Sprintf("the untrusted project may not replace the %s layer's %s %q at %s; %sreplace it",
			w.layer, kind, name, w.pos, trustHint), true
	case w.mandatory && d.layer > w.layer:
		return policy.CodeMandatoryKept, fmt.Sprintf("the mandatory %s %q at %s (%s layer) cannot be replaced", kind, name, w.pos, w.layer), true
	case kind == "policy":
		return policy.CodeOverridden, fmt.Sprintf("replaced by the %s layer's policy of the same name at %s", w.layer, w.pos), true
	}
	return policy.CodeOverridden, fmt.Sprintf("redefined by the %s layer at %s", w.layer, w.pos), true
}

// disable is one name an Overrides file disables.
type disable struct {
	layer policy.Layer
	pos   policy.Pos
	used  *bool
}

// resolveLayers applies the layering rules (docs/layers.md) and returns the
// policies to compile, with rules left out where layering says so:
//   - of policies sharing a name, only those of the winning layer are kept
//     (winner; two in the same layer are reported as duplicate_policy later);
//   - a rule id defined in several layers is kept from the winning one;
//   - an Overrides file disables policies and rules of lower layers, except
//     mandatory rules (mandatory_kept);
//   - an untrusted project replaces nothing and its Overrides files are
//     ignored (untrusted_ignored).
//
// Each exclusion is reported as a diagnostic and kept for
// PolicySet.Exclusions.
func (c *compiler) resolveLayers(pols []layered, ovs []layeredOverrides) []layered {
	offPolicy, offRule := map[string][]disable{}, map[string][]disable{}
	for _, lo := range ovs {
		if lo.untrusted {
			c.exclude(Exclusion{Kind: "overrides", Name: lo.o.Name.Value, Layer: lo.layer, Pos: lo.o.Pos, By: lo.o.Pos,
				Code:   policy.CodeUntrustedIgnored,
				Reason: fmt.Sprintf("the Overrides file %s of the untrusted project is ignored; %sdisable policies and rules", lo.o.File, trustHint)})
			continue
		}
		for _, n := range lo.o.DisablePolicies {
			offPolicy[n.Value] = append(offPolicy[n.Value], disable{lo.layer, n.Pos, new(bool)})
		}
		for _, n := range lo.o.DisableRules {
			offRule[n.Value] = append(offRule[n.Value], disable{lo.layer, n.Pos, new(bool)})
		}
	}
	kept := c.resolvePolicies(pols)
	// disabledPolicy holds, per kept policy with a mandatory rule that an
	// Overrides file disables, the Overrides position: its other rules go.
	disabledPolicy := map[*policy.Policy]policy.Pos{}
	pols, kept = kept, nil
	for _, lp := range pols {
		by, off := disabledBy(offPolicy, lp.p.Name.Value, lp.layer)
		switch {
		case !off:
		case lp.protected():
			disabledPolicy[lp.p] = by
			c.keepMandatory(by, "policy", lp.p.Name.Value, lp.p.Name.Pos, "its mandatory rules stay, its other rules are disabled")
		default:
			c.exclude(Exclusion{Kind: "policy", Name: lp.p.Name.Value, Layer: lp.layer, Pos: lp.p.Name.Pos, By: by,
				Code: policy.CodeOverridden, Reason: fmt.Sprintf("disabled at %s", by)})
			continue
		}
		kept = append(kept, lp)
	}
	kept = c.resolveRules(kept, offRule, disabledPolicy)
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

// disabledBy returns the first Overrides entry of a layer above layer that
// disables name, and marks it used.
func disabledBy(m map[string][]disable, name string, layer policy.Layer) (policy.Pos, bool) {
	for _, d := range m[name] {
		if d.layer > layer {
			*d.used = true
			return d.pos, true
		}
	}
	return policy.Pos{}, false
}

// exclude records an exclusion and reports it: overridden as info, the
// others as warnings.
func (c *compiler) exclude(e Exclusion) {
	c.set.exclusions = append(c.set.exclusions, e)
	sev := policy.SeverityWarning
	if e.Code == policy.CodeOverridden {
		sev = policy.SeverityInfo
	}
	msg := fmt.Sprintf("%s %q (%s layer) is left out: %s", e.Kind, e.Name, e.Layer, e.Reason)
	if e.Kind == "overrides" {
		msg = e.Reason
	}
	c.ds = append(c.ds, policy.Diagnostic{Code: e.Code, Severity: sev, Pos: e.Pos, Related: []policy.Pos{e.By}, Message: msg})
}

// keepMandatory reports an Overrides entry at by that would disable a
// mandatory policy or rule defined at pos.
func (c *compiler) keepMandatory(by policy.Pos, kind, name string, pos policy.Pos, what string) {
	c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeMandatoryKept, Severity: policy.SeverityWarning, Pos: by, Related: []policy.Pos{pos},
		Message: fmt.Sprintf("this override of the mandatory %s %q (at %s) is ignored: %s", kind, name, pos, what)})
}

// resolvePolicies keeps, of the policies of each name, the winner's.
func (c *compiler) resolvePolicies(pols []layered) []layered {
	defs := map[string][]definition{}
	for _, lp := range pols {
		n := lp.p.Name.Value
		defs[n] = append(defs[n], definition{layer: lp.layer, pos: lp.p.Name.Pos, untrusted: lp.untrusted, mandatory: lp.protected()})
	}
	var kept []layered
	for _, lp := range pols {
		n := lp.p.Name.Value
		w := winner(defs[n])
		d := definition{layer: lp.layer, untrusted: lp.untrusted}
		if code, reason, out := lost("policy", n, d, w); out {
			c.exclude(Exclusion{Kind: "policy", Name: n, Layer: lp.layer, Pos: lp.p.Name.Pos, By: w.pos, Code: code, Reason: reason})
			continue
		}
		kept = append(kept, lp)
	}
	return kept
}

// resolveRules keeps, of the rules of each id, the winner's, and leaves out
// the rules Overrides files disable (offRule, or their whole policy:
// disabledPolicy), except mandatory ones.
func (c *compiler) resolveRules(kept []layered, offRule map[string][]disable, disabledPolicy map[*policy.Policy]policy.Pos) []layered {
	defs := map[string][]definition{}
	for _, lp := range kept {
		for _, r := range lp.p.Rules {
			m := !lp.untrusted && mandatoryRule(lp.p, &r, lp.layer)
			defs[r.ID.Value] = append(defs[r.ID.Value], definition{layer: lp.layer, pos: r.ID.Pos, untrusted: lp.untrusted, mandatory: m})
		}
	}
	for i, lp := range kept {
		var rules []policy.Rule
		changed := false
		for _, r := range lp.p.Rules {
			id := r.ID.Value
			w := winner(defs[id])
			if code, reason, out := lost("rule", id, definition{layer: lp.layer, untrusted: lp.untrusted}, w); out {
				c.exclude(Exclusion{Kind: "rule", Name: id, Layer: lp.layer, Pos: r.ID.Pos, By: w.pos, Code: code, Reason: reason})
				changed = true
				continue
			}
			mandatory := !lp.untrusted && mandatoryRule(lp.p, &r, lp.layer)
			byRule, ruleOff := disabledBy(offRule, id, lp.layer)
			byPolicy, policyOff := disabledPolicy[lp.p]
			switch {
			case ruleOff && mandatory:
				c.keepMandatory(byRule, "rule", id, r.ID.Pos, "the rule stays")
			case ruleOff || policyOff && !mandatory:
				by := byRule
				if !ruleOff {
					by = byPolicy
				}
				c.exclude(Exclusion{Kind: "rule", Name: id, Layer: lp.layer, Pos: r.ID.Pos, By: by, Code: policy.CodeOverridden,
					Reason: fmt.Sprintf("disabled at %s", by)})
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
	return kept
}

// checkMandatory reports a mandatory rule whose verdict lets a call through
// or rewrites it: nothing could pre-empt it, so it would switch off every
// rule after it (invalid_mandatory).
func (c *compiler) checkMandatory(cp *Policy, r *policy.Rule, mandatory bool) {
	if !mandatory || (r.Verdict != policy.Allow && r.Verdict != policy.Modify) {
		return
	}
	why, fix := "it says enforcement: mandatory", "remove enforcement: mandatory"
	switch {
	case !r.EnforcementPos.IsZero():
	case !cp.Source.EnforcementPos.IsZero():
		why = fmt.Sprintf("its policy %s says enforcement: mandatory at %s", cp.Name, cp.Source.EnforcementPos)
		fix = "give the rule enforcement: default"
	default:
		why = "every rule of an admin-layer policy is mandatory unless it says enforcement: default"
		fix = "give the rule (or policy " + cp.Name + ") enforcement: default"
	}
	d := policy.Diagnostic{Code: policy.CodeInvalidMandatory, Severity: policy.SeverityError, Pos: r.VerdictPos,
		Message: fmt.Sprintf("rule %s is mandatory (%s), so it cannot %s: a mandatory rule is tried before every other rule and cannot be lifted; make it block, halt, ask or warn, or %s",
			r.ID.Value, why, map[policy.Verdict]string{policy.Allow: "allow", policy.Modify: "modify"}[r.Verdict], fix)}
	if !cp.Source.EnforcementPos.IsZero() && r.EnforcementPos.IsZero() {
		d.Related = []policy.Pos{cp.Source.EnforcementPos}
	}
	c.ds = append(c.ds, d)
}

// untrustedClasses adds the classes of an untrusted project's ToolClasses
// file that can change no trusted decision: a class no trusted file
// declares, naming tools only. Extending a trusted class would change what
// trusted rules match, and command_args or path_args would change the
// command and paths trusted rules read, so such a class is ignored
// (untrusted_ignored).
func (c *compiler) untrustedClasses(tc *policy.ToolClasses) {
	own := *tc
	own.Classes = nil
	for _, cl := range tc.Classes {
		var why string
		switch {
		case cl.Name.Value == "":
			continue
		case c.classes.byName[cl.Name.Value] != nil && !slices.Contains(c.untrustedClassNames, cl.Name.Value):
			why = fmt.Sprintf("the untrusted project may not extend the tool class %q of another layer", cl.Name.Value)
		case len(cl.CommandArgs) > 0 || len(cl.PathArgs) > 0:
			why = fmt.Sprintf("the untrusted project's tool class %q may not say which arguments hold a command or paths", cl.Name.Value)
		}
		if why != "" {
			c.exclude(Exclusion{Kind: "class", Name: cl.Name.Value, Layer: policy.LayerProject, Pos: cl.Name.Pos, By: cl.Name.Pos,
				Code: policy.CodeUntrustedIgnored, Reason: why + "; " + trustHint + "do so"})
			continue
		}
		own.Classes = append(own.Classes, cl)
		c.untrustedClassNames = append(c.untrustedClassNames, cl.Name.Value)
	}
	c.classes.add(&own)
}

// checkMonitored reports a policy in monitor mode with a mandatory rule
// (monitor_mandatory): mandatory rules cannot be monitored away.
func (c *compiler) checkMonitored(cp *Policy) {
	p := cp.Source
	if p.Mode != policy.ModeMonitor {
		return
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if !mandatoryRule(p, r, cp.Layer) {
			continue
		}
		why, fix := "rule "+r.ID.Value+" is mandatory", "drop the rule's enforcement: mandatory"
		var related []policy.Pos
		switch {
		case !r.EnforcementPos.IsZero():
			related = []policy.Pos{r.EnforcementPos}
		case !p.EnforcementPos.IsZero():
			why, fix = "the policy is mandatory", "make the policy enforcement: default"
			related = []policy.Pos{p.EnforcementPos}
		default:
			why, fix = "the policy is in the admin layer, where a policy is mandatory unless it says enforcement: default", "say enforcement: default"
		}
		c.ds = append(c.ds, policy.Diagnostic{Code: policy.CodeMonitorMandatory, Severity: policy.SeverityError, Pos: p.ModePos, Related: related,
			Message: fmt.Sprintf("policy %s cannot be monitored: %s, and mandatory rules cannot be monitored away; drop mode: monitor, or %s", p.Name.Value, why, fix)})
		return
	}
}

// logMasks records a trusted policy's decision_log masks.
func (c *compiler) logMasks(p *policy.Policy, untrusted bool) {
	if untrusted {
		return
	}
	for _, m := range p.DecisionLog.Mask {
		lm := LogMask{Policy: p.Name.Value}
		for _, t := range m.Tools {
			lm.Tools = append(lm.Tools, t.Value)
		}
		for _, path := range m.Paths {
			lm.Paths = append(lm.Paths, path.Segments)
		}
		c.set.masks = append(c.set.masks, lm)
	}
}
