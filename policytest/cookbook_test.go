package policytest_test

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// TestCookbook runs the suites of docs/cookbook: every case passes, every
// rule fires in some case, every policy compiles without warnings, and
// docs/cookbook.md shows each file exactly as it is.
func TestCookbook(t *testing.T) {
	const dir = "../docs/cookbook"
	fsys := os.DirFS(dir)
	rep, err := policytest.RunFS(t.Context(), fsys, ".", policytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Suites) != 12 {
		t.Errorf("the cookbook has %d suites, want 12", len(rep.Suites))
	}
	for _, s := range rep.Suites {
		if s.Error != "" {
			t.Errorf("%s: %s", s.File, s.Error)
		}
		for _, c := range s.Cases {
			for _, f := range c.Failures {
				t.Errorf("%s:%d: %s: %s", s.File, c.Line, c.Name, f)
			}
		}
	}
	cov := rep.Coverage()
	for _, p := range cov.Below(100) {
		t.Errorf("%s: rules no case makes fire: %v", p.File, p.NeverFired)
	}

	srcs, err := policy.LoadFS(fsys, ".", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 12 {
		t.Errorf("the cookbook has %d policies, want 12", len(srcs))
	}
	doc, err := os.ReadFile("../docs/cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		_, ds, err := compile.Check([]policy.Source{src})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Severity == policy.SeverityError || d.Severity == policy.SeverityWarning {
				t.Errorf("%s", d)
			}
		}
		suite := strings.TrimSuffix(src.Name, ".yaml") + "_test.yaml"
		for _, name := range []string{src.Name, suite} {
			data, err := os.ReadFile(path.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(doc), "```yaml\n"+strings.TrimRight(string(data), "\n")+"\n```") {
				t.Errorf("docs/cookbook.md does not show %s as it is; regenerate its block", name)
			}
		}
	}
}

// TestPoliciesShowsSessionFacts: docs/policies.md's session facts example
// is cookbook recipe 12 exactly as it is, so TestCookbook runs it as
// written.
func TestPoliciesShowsSessionFacts(t *testing.T) {
	doc, err := os.ReadFile("../docs/policies.md")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../docs/cookbook/12-session-taint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+strings.TrimRight(string(data), "\n")+"\n```") {
		t.Error("docs/policies.md does not show docs/cookbook/12-session-taint.yaml as it is; copy it into its Session facts section")
	}
}

// TestCookbookUntrusted copies each recipe into an untrusted project over the
// recommended bundle (docs/layers.md): every call is decided as the suite
// says, or stricter where a built-in rule is stricter, and a recipe's
// rewrite is asked (rule 12 of eval/decide.go) rather than applied.
func TestCookbookUntrusted(t *testing.T) {
	bundle, err := policies.Discover(policies.Options{UserDir: "-", ProjectDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := policytest.RunFS(t.Context(), os.DirFS("../docs/cookbook"), ".",
		policytest.Options{Layer: policy.LayerProject, Untrusted: true, Extra: bundle})
	if err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{"allow": 0, "warn": 1, "modify": 1, "ask": 2, "block": 3, "halt": 4}
	if len(rep.Suites) != 12 || rep.Passed == 0 {
		t.Fatalf("ran %d suites, %d cases passed", len(rep.Suites), rep.Passed)
	}
	stricter, asked := 0, 0
	for _, s := range rep.Suites {
		if s.Error != "" {
			t.Errorf("%s: %s", s.File, s.Error)
		}
		for _, c := range s.Cases {
			for _, m := range c.Mismatches {
				got, want := m.Actual.Verdict.String(), m.Expected.Verdict
				if rank[got] > rank[want] && !m.Actual.Untrusted {
					stricter++
					continue // a built-in rule is stricter
				}
				if rank[got] > rank[want] && slices.Contains(m.Actual.Modified, m.Actual.RuleID) {
					asked++
					continue // the project's rewrite is asked (rule 12), refused without an approver
				}
				ok := got == want
				for _, f := range m.Fields() {
					switch f.Field {
					case "rule", "code", "reason", "reason_contains", "approval":
						// On a tie the trusted (built-in) rule decides.
					default:
						ok = ok && !f.Differs
					}
				}
				if !ok {
					t.Errorf("%s:%d: %s: step %d: %v\nexpected %+v\ngot %s by %s/%s (untrusted %v), trace %+v", s.File, c.Line, c.Name, m.Step,
						c.Failures, m.Expected, got, m.Actual.Policy, m.Actual.RuleID, m.Actual.Untrusted, m.Actual.Trace)
				}
			}
		}
	}
	t.Logf("%d cases passed as written, %d failed; %d steps decided stricter by a built-in rule, %d rewrites asked", rep.Passed, rep.Failed, stricter, asked)
	if asked == 0 {
		t.Error("no recipe's rewrite was asked: the clamp-timeouts recipe rewrites calls")
	}
}
