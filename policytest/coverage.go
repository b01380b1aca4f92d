package policytest

import (
	"cmp"
	"slices"
)

// Coverage says which rules the cases of a run made fire, per policy. A rule
// fires when it decides a step or, for a modify rule, rewrites a call or
// result on the way to the decision. Its JSON field names are stable.
type Coverage struct {
	// Policies are the policies tested, ordered by file and name.
	Policies []PolicyCoverage `json:"policies"`
	// Rules and Fired count over every policy.
	Rules int `json:"rules"`
	Fired int `json:"fired"`
	// Percent is 100 * Fired / Rules, or 100 when there are no rules.
	Percent float64 `json:"percent"`
}

// PolicyCoverage is one policy's coverage.
type PolicyCoverage struct {
	Policy  string  `json:"policy"`
	File    string  `json:"file"`
	Rules   int     `json:"rules"`
	Fired   int     `json:"fired"`
	Percent float64 `json:"percent"`
	// NeverFired lists the ids of the rules no case made fire, in
	// evaluation order.
	NeverFired []string `json:"never_fired,omitempty"`
}

// Coverage computes the coverage of a run. A policy tested by several
// suites counts a rule as fired when any of them made it fire. Suites that
// could not run contribute nothing.
func (r *Report) Coverage() Coverage {
	type key struct{ file, policy string }
	type ruleKey struct {
		key
		id string
	}
	var order []key
	rules := map[key][]string{}
	fired := map[ruleKey]bool{}
	for _, s := range r.Suites {
		for _, ref := range s.Rules {
			k := key{ref.File, ref.Policy}
			rk := ruleKey{k, ref.RuleID}
			if _, seen := rules[k]; !seen {
				order = append(order, k)
			}
			if _, seen := fired[rk]; !seen {
				rules[k] = append(rules[k], ref.RuleID)
				fired[rk] = false
			}
			if s.Fired[ref.RuleID] > 0 {
				fired[rk] = true
			}
		}
	}
	slices.SortFunc(order, func(a, b key) int { return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.policy, b.policy)) })
	cov := Coverage{Policies: []PolicyCoverage{}}
	for _, k := range order {
		pc := PolicyCoverage{Policy: k.policy, File: k.file, Rules: len(rules[k])}
		for _, id := range rules[k] {
			if fired[ruleKey{k, id}] {
				pc.Fired++
			} else {
				pc.NeverFired = append(pc.NeverFired, id)
			}
		}
		pc.Percent = percent(pc.Fired, pc.Rules)
		cov.Policies = append(cov.Policies, pc)
		cov.Rules += pc.Rules
		cov.Fired += pc.Fired
	}
	cov.Percent = percent(cov.Fired, cov.Rules)
	return cov
}

// Below returns the policies whose coverage is under min percent.
func (c Coverage) Below(min float64) []PolicyCoverage {
	var out []PolicyCoverage
	for _, p := range c.Policies {
		if p.Percent < min {
			out = append(out, p)
		}
	}
	return out
}

func percent(n, of int) float64 {
	if of == 0 {
		return 100
	}
	return 100 * float64(n) / float64(of)
}
