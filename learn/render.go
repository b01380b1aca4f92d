package learn

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The files learn writes: the policy, its own test (the rules alone: each
// allows its approved calls and none of its near misses) and its test
// with the built-in bundle (the approved calls are allowed, and the near
// misses the bundle asks about or blocks are still asked or blocked).
const (
	PolicyFile      = "learned.yaml"
	SuiteFile       = "learned_test.yaml"
	BundleSuiteFile = "learned_bundle_test.yaml"
	// PolicyName is the name of the policy learn writes.
	PolicyName = "learned"
)

// expectation is a step's expected decision.
type expectation struct {
	verdict string
	rule    string // "none" for no rule
	code    string
}

// testStep is a before step and its expectation.
type testStep struct {
	call Call
	want expectation
}

// testCase is a named case of steps.
type testCase struct {
	name  string
	steps []testStep
}

// header is the comment that opens every file: what wrote it, from
// which sources, and what it was checked against.
func header(what string, r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, proposed by celguard learn from the approvals people gave: the\n", what)
	b.WriteString("# narrowest allow rules that would have avoided the asks they approved.\n")
	b.WriteString("# Review every rule before you keep it (docs/learn.md).\n")
	b.WriteString("# Sources:\n")
	for _, s := range r.Sources {
		fmt.Fprintf(&b, "#   %s %s %s (%d approvals)\n", s.Kind, oneLine(s.Path), s.Digest, s.Approvals)
	}
	fmt.Fprintf(&b, "# Checked against builtin:%s (its mandatory rules, the risks it asks about)\n#   %s\n", r.Bundle, r.BundleDigest)
	fmt.Fprintf(&b, "# and its hostile corpus (%d calls, in each rule's directory): no rule lets one through.\n", r.CorpusCalls)
	for _, d := range r.Dropped {
		fmt.Fprintf(&b, "# Dropped %s: %s\n", d.Proposal.ID, oneLine(d.Reason))
	}
	return b.String()
}

// oneLine keeps s on one comment line.
func oneLine(s string) string {
	return escapeNonPrintable(strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s))
}

// renderPolicy writes the policy of the proposals.
func renderPolicy(r *Result, props []*Proposal) []byte {
	var b strings.Builder
	if r != nil {
		b.WriteString(header("Allow rules", r))
	}
	fmt.Fprintf(&b, "apiVersion: celguard.dev/v1\nkind: Policy\nname: %s\n", PolicyName)
	b.WriteString("description: " + q("Allow rules learnt from approvals (celguard learn); each has its test in "+SuiteFile+".") + "\n")
	// An allow rule that fails at run time (a command past the cost
	// budget) does not match: the call is decided by the rest of the set.
	b.WriteString("defaults: {failure_policy: open}\n")
	b.WriteString("rules:\n")
	for _, p := range props {
		fmt.Fprintf(&b, "  - id: %s\n", p.ID)
		fmt.Fprintf(&b, "    match: {tools: [%s]}\n", q(p.Tool))
		if p.Condition != "" {
			fmt.Fprintf(&b, "    condition: %s\n", q(p.Condition))
		}
		b.WriteString("    verdict: allow\n")
		var from []string
		for _, f := range p.From {
			from = append(from, f.String())
		}
		fmt.Fprintf(&b, "    reason: %s\n", q(fmt.Sprintf("Learnt from %d approval(s) (%s): %s.", len(p.From), strings.Join(p.Sources, ", "), p.Summary)))
		fmt.Fprintf(&b, "    metadata: {learnt_from: %s}\n", q(strings.Join(from, " ")))
	}
	return []byte(b.String())
}

// jsonText is v as JSON without HTML escapes: YAML reads it as a flow
// mapping.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return escapeNonPrintable(strings.TrimSuffix(b.String(), "\n"))
}

// renderSuite writes a test suite.
func renderSuite(r *Result, name string, policies []string, cases []testCase) []byte {
	var b strings.Builder
	b.WriteString(header("Tests of the allow rules", r))
	fmt.Fprintf(&b, "name: %s\npolicies: [%s]\ncases:\n", name, strings.Join(policies, ", "))
	for _, c := range cases {
		fmt.Fprintf(&b, "  - name: %s\n    steps:\n", q(c.name))
		for _, st := range c.steps {
			args := st.call.Args
			if args == nil {
				args = map[string]any{}
			}
			a := jsonText(args)
			fmt.Fprintf(&b, "      - before: {tool: %s, args: %s", q(st.call.Tool), a)
			if st.call.Cwd != "" {
				fmt.Fprintf(&b, ", cwd: %s", q(st.call.Cwd))
			}
			b.WriteString("}\n        expect: {")
			var parts []string
			if st.want.verdict != "" {
				parts = append(parts, "verdict: "+st.want.verdict)
			}
			parts = append(parts, "rule: "+q(st.want.rule))
			if st.want.code != "" {
				parts = append(parts, "code: "+q(st.want.code))
			}
			b.WriteString(strings.Join(parts, ", ") + "}\n")
		}
	}
	return []byte(b.String())
}
