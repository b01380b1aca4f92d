package compile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/celguard/celguard/policy"
)

// The analyses of the set in force, across layers (docs/layers.md): which
// rule of one layer a rule of another always pre-empts, and what an
// untrusted project would relax once trusted. Both follow the order the set
// evaluates its rules in (Rule.Order, the order of Candidates), whatever it
// is: they never restate the layering rules.

// untrustedFiles returns the names of the untrusted sources.
func untrustedFiles(srcs []policy.Source) map[string]bool {
	out := map[string]bool{}
	for _, s := range srcs {
		if s.Untrusted {
			out[s.Name] = true
		}
	}
	return out
}

// sequences splits the set's rules, in evaluation order, into the
// sequences that each decide a call on their own: per phase, the rules of
// trusted sources, then the rules of untrusted ones (an untrusted project
// decides alone, and the stricter decision stands: docs/layers.md rule 3).
// A rule pre-empts only the rules of its own sequence.
func (l *linter) sequences() [][]*Rule {
	var seq [policy.NumPhases][2][]*Rule // phase, untrusted
	for _, r := range l.c.set.rules {
		u := 0
		if r.Policy.Untrusted {
			u = 1
		}
		seq[r.Phase][u] = append(seq[r.Phase][u], r)
	}
	out := make([][]*Rule, 0, 2*len(seq))
	for _, ph := range seq {
		out = append(out, ph[0], ph[1])
	}
	return out
}

// crossLayer reports whether a rule pre-empted by the rules by is pre-empted
// by some rule of another layer: reportShadowed then reports it as
// cross_layer_shadowed, with each rule's layer.
func crossLayer(r *Rule, by []*Rule) bool {
	return slices.ContainsFunc(by, func(b *Rule) bool { return b.Policy.Layer != r.Policy.Layer })
}

// maxNamed is how many pre-empted rules an untrusted_would_relax message
// names; the others are counted (and all are in Related).
const maxNamed = 3

// Relaxations tells what trusting the untrusted sources among srcs
// (policy.Source.Untrusted: a project the user has not trusted) would
// relax. Untrusted, a project only restricts: it decides on its own and the
// stricter decision stands. Trusted, its rules join the order of the
// trusted layers, and a rule of it that decides less strictly than a later
// rule (allow before a block, say) decides in that rule's place whenever
// its condition holds. Relaxations compiles srcs as if every source were
// trusted and reports each such untrusted rule as an info diagnostic
// (untrusted_would_relax) at the rule, with the rules of trusted sources it
// would pre-empt for some tool in the set's order (Candidates), conditions
// aside: a rule that "could" relax, for the user to read before trusting.
// Replacements and Overrides files the untrusted sources hold are reported
// by compiling them as they are (untrusted_ignored), not here.
//
// Without untrusted sources it returns nil. Its error is Compile's, for
// sources that do not compile once trusted.
func Relaxations(srcs []policy.Source, opts ...Option) (policy.Diagnostics, error) {
	untrusted := untrustedFiles(srcs)
	if len(untrusted) == 0 {
		return nil, nil
	}
	trusted := slices.Clone(srcs)
	for i := range trusted {
		trusted[i].Untrusted = false
	}
	set, err := Compile(trusted, opts...)
	if err != nil {
		return nil, err
	}
	tools := toolUniverse(set)
	var ds policy.Diagnostics
	for _, u := range set.rules {
		if !untrusted[u.Policy.File] || u.Verdict == policy.Modify {
			continue // a modify rule rewrites and evaluation goes on
		}
		var pre []*Rule
		for _, tool := range tools {
			if !u.MatchesTool(tool) {
				continue
			}
			cands := set.Candidates(u.Phase, tool)
			i := slices.Index(cands, u)
			if i < 0 {
				continue
			}
			for _, t := range cands[i+1:] {
				if !untrusted[t.Policy.File] && t.Verdict != policy.Modify && t.Verdict.Strictness() > u.Verdict.Strictness() && !slices.Contains(pre, t) {
					pre = append(pre, t)
				}
			}
		}
		if len(pre) == 0 {
			continue
		}
		slices.SortFunc(pre, func(a, b *Rule) int { return a.Order - b.Order })
		ds = append(ds, relaxation(u, pre))
	}
	ds.Sort()
	return ds, nil
}

// toolUniverse lists the tool names worth asking Candidates about: every
// name a rule or a tool class names exactly, every glob of a rule (as a
// name, it reaches the rules whose globs admit it), and a name nothing
// names, which only the match-all rules and globs admit.
func toolUniverse(set *PolicySet) []string {
	seen := map[string]bool{probeTool: true}
	out := []string{probeTool}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, r := range set.rules {
		for _, t := range r.Tools {
			add(t)
		}
	}
	for _, c := range set.Classes() {
		for _, t := range c.Tools {
			add(t)
		}
	}
	return out
}

// relaxation is the untrusted_would_relax diagnostic of untrusted rule u,
// which would pre-empt the rules pre once trusted.
func relaxation(u *Rule, pre []*Rule) policy.Diagnostic {
	related := make([]policy.Pos, 0, len(pre))
	names := make([]string, 0, maxNamed)
	for i, t := range pre {
		related = append(related, t.Source.ID.Pos)
		if i < maxNamed {
			names = append(names, fmt.Sprintf("%q (%s layer, %s, verdict %s)", t.ID, t.Policy.Layer, t.Source.ID.Pos, t.Verdict))
		}
	}
	what := strings.Join(names, ", ")
	if n := len(pre) - len(names); n > 0 {
		what += fmt.Sprintf(" and %d more", n)
	}
	return policy.Diagnostic{Code: policy.CodeUntrustedWouldRelax, Severity: policy.SeverityInfo, Pos: u.Source.ID.Pos, Related: related,
		Message: fmt.Sprintf("untrusted rule %q (%s) only restricts today; once its project is trusted (celguard trust), it is tried before %s and decides in their place whenever its condition holds",
			u.ID, u.Verdict, what)}
}
