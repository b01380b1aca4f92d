package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policytest"
)

// TestText writes a test report for people: one line per passing suite;
// for a failing case, each failing step as a table of the checked fields
// (field, expected, actual, with an x on the ones that differ) and under it
// the rules the evaluator tried; then the count "N passed, M failed".
func TestText(w io.Writer, rep *policytest.Report) error {
	ew := &errWriter{w: w}
	for _, s := range rep.Suites {
		if len(s.Diagnostics) > 0 {
			ew.printf("FAIL %s: malformed suite\n", s.File)
			for _, d := range s.Diagnostics {
				ew.printf("  %s\n", d.Error())
			}
			continue
		}
		if s.Error != "" {
			ew.printf("FAIL %s: %s\n", s.File, s.Error)
			continue
		}
		failed := 0
		for _, c := range s.Cases {
			if !c.Pass {
				failed++
			}
		}
		if failed == 0 {
			ew.printf("ok   %s (%s)\n", s.File, plural(len(s.Cases), "case", "cases"))
			continue
		}
		ew.printf("FAIL %s (%d of %d cases failed)\n", s.File, failed, len(s.Cases))
		for _, c := range s.Cases {
			if !c.Pass {
				writeCaseText(ew, s, c)
			}
		}
	}
	ew.printf("%d passed, %d failed\n", rep.Passed, rep.Failed)
	return ew.err
}

func writeCaseText(ew *errWriter, s policytest.SuiteResult, c policytest.CaseResult) {
	ew.printf("  --- FAIL %s:%d: %s\n", s.File, c.Line, c.Name)
	mismatched := map[int]bool{}
	for _, m := range c.Mismatches {
		mismatched[m.Step] = true
	}
	// Failures other than mismatches (step errors, compile errors) as text.
	for _, f := range c.Failures {
		var step int
		if n, _ := fmt.Sscanf(f, "step %d:", &step); n == 1 && mismatched[step] && !strings.HasPrefix(f, fmt.Sprintf("step %d: error:", step)) {
			continue
		}
		ew.printf("      %s\n", strings.ReplaceAll(f, "\n", "\n      "))
	}
	for _, m := range c.Mismatches {
		ew.printf("      step %d:\n", m.Step)
		ew.table(func(tw io.Writer) {
			fmt.Fprintf(tw, "          \tfield\texpected\tactual\n")
			for _, f := range m.Fields() {
				mark := " "
				if f.Differs {
					mark = "x"
				}
				fmt.Fprintf(tw, "        %s \t%s\t%s\t%s\n", mark, f.Field, f.Expected, f.Actual)
			}
		})
		writeTrace(ew, m.Actual, "        ")
	}
}

// writeTrace writes the rules a decision tried, with what came of each.
func writeTrace(ew *errWriter, d eval.Decision, indent string) {
	skipped := 0
	var tried []eval.TraceStep
	for _, st := range d.Trace {
		if st.Outcome == eval.OutcomeToolNotMatched {
			skipped++
			continue
		}
		tried = append(tried, st)
	}
	switch {
	case len(tried) == 0 && skipped == 0 && d.RuleID == "":
		ew.printf("%swhy: no rule applies to this tool; %s is the default\n", indent, d.Verdict)
		return
	case len(tried) == 0:
		ew.printf("%swhy: no rule was tried\n", indent)
	default:
		ew.printf("%swhy: the rules tried, in order:\n", indent)
		ew.table(func(tw io.Writer) {
			for _, st := range tried {
				line := fmt.Sprintf("%s  %s\t%s\t(%s, %s)", indent, outcomeWord(st.Outcome), st.Rule, st.Policy, st.Verdict)
				if st.Untrusted {
					line = fmt.Sprintf("%s  %s\t%s\t(%s, %s, untrusted project)", indent, outcomeWord(st.Outcome), st.Rule, st.Policy, st.Verdict)
				}
				if st.Error != "" {
					line += ": " + st.Error
				}
				fmt.Fprintln(tw, line)
			}
		})
	}
	if skipped > 0 {
		ew.printf("%s  (%s skipped by the tool matcher)\n", indent, plural(skipped, "rule", "rules"))
	}
	if d.RuleID == "" {
		ew.printf("%s  no rule decided: %s is the default\n", indent, d.Verdict)
	}
}

// TestJSONReport is the JSON form of a test run: policytest.Report's fields
// (suites, passed, failed) and, with --coverage, a coverage object.
type TestJSONReport struct {
	// CelguardVersion is the version of the celguard that ran the tests;
	// "" leaves it out.
	CelguardVersion string `json:"celguard_version,omitempty"`
	*policytest.Report
	Coverage *policytest.Coverage `json:"coverage,omitempty"`
}

// TestJSON writes the report, and the coverage when cov is not nil, as one
// indented JSON document; tool is celguard's version.
func TestJSON(w io.Writer, rep *policytest.Report, cov *policytest.Coverage, tool string) error {
	return writeJSON(w, TestJSONReport{CelguardVersion: tool, Report: rep, Coverage: cov}, "  ")
}

// CoverageText writes coverage as a table: one row per policy with its
// rule count, the rules fired, the percentage and the rules never fired.
func CoverageText(w io.Writer, cov policytest.Coverage) error {
	ew := &errWriter{w: w}
	ew.printf("coverage: %d of %d rules fired (%.1f%%)\n", cov.Fired, cov.Rules, cov.Percent)
	ew.table(func(tw io.Writer) {
		fmt.Fprintln(tw, "  POLICY\tFILE\tRULES\tFIRED\tCOVERAGE\tNEVER FIRED")
		for _, p := range cov.Policies {
			never := strings.Join(p.NeverFired, ", ")
			if never == "" {
				never = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%.1f%%\t%s\n", p.Policy, p.File, p.Rules, p.Fired, p.Percent, never)
		}
	})
	return ew.err
}
