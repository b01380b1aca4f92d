package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/celguard/celguard/eval"
)

// ExplanationJSON writes x as one line of JSON, with eval.Explanation's
// field names.
func ExplanationJSON(w io.Writer, x eval.Explanation) error {
	return writeJSON(w, x, "")
}

// ExplanationText writes x for people: the decision, then every rule in the
// order it was considered with what came of it; under each condition that
// was tried, the sub-expressions that gave it its value and the values of
// their operands; then the modify rules applied and the counters.
func ExplanationText(w io.Writer, x eval.Explanation) error {
	ew := &errWriter{w: w}
	d := x.Decision
	ew.printf("%s (%s): %s\n", d.Tool, d.Phase, d.Verdict)
	if d.RuleID != "" {
		ew.printf("  decided by %s (%s:%d, policy %s)\n", d.RuleID, d.File, d.Line, d.Policy)
	} else if !x.Halted {
		ew.printf("  no rule decided: %s is the default\n", d.Verdict)
	}
	if d.Untrusted {
		ew.printf("  the untrusted project's decision: stricter than the trusted layers'\n")
	}
	if d.Reason != "" {
		ew.printf("  reason: %s\n", d.Reason)
	}
	if d.Code != "" {
		ew.printf("  code: %s\n", d.Code)
	}
	if d.Error != "" {
		ew.printf("  error: %s\n", d.Error)
	}
	if d.Approval != nil {
		ew.printf("  approval: %s\n", d.Approval.Outcome)
	}
	if m := d.Monitored; m != nil {
		ew.printf("  monitored: rule %s (policy %s) would have decided %s", m.RuleID, m.Policy, m.Verdict)
		if m.Reason != "" {
			ew.printf(": %s", m.Reason)
		}
		ew.printf("\n")
	}
	if x.Halted {
		ew.printf("  no rule was tried: an earlier call halted this turn\n")
		return ew.err
	}
	ew.printf("\nrules, in the order considered:\n")
	if len(x.Steps) == 0 {
		ew.printf("  (no rule of this phase)\n")
	}
	for _, st := range x.Steps {
		where := fmt.Sprintf("%s:%d", st.File, st.Line)
		pass := ""
		if st.Pass > 1 {
			pass = fmt.Sprintf(" [pass %d, after a rewrite]", st.Pass)
		}
		if st.Untrusted {
			pass += " [untrusted project]"
		}
		word, because := outcomeText(st.Outcome)
		ew.printf("  %-16s %s (%s, %s)%s\n", word, st.RuleID, st.Verdict, where, pass)
		switch st.Outcome {
		case eval.OutcomeToolNotMatched:
			ew.printf("      the rule's tool matcher does not admit %s\n", d.Tool)
			continue
		case eval.OutcomeAlreadyApplied:
			ew.printf("      a modify rule rewrites a call at most once\n")
			continue
		}
		if st.Condition == "" {
			ew.printf("      no condition: the rule always matches\n")
		} else {
			ew.printf("      condition: %s\n", oneLine(st.Condition))
		}
		if st.Error != "" {
			ew.printf("      error: %s\n", st.Error)
		}
		if len(st.Because) > 0 {
			ew.printf("      %s\n", because)
			writeBecause(ew, st.Because)
		}
	}
	if len(d.Modified) > 0 {
		ew.printf("\nmodify rules applied: %s\n", strings.Join(d.Modified, ", "))
		if d.Args != nil {
			ew.printf("  rewritten args: %s\n", valueText(d.Args))
		}
		if d.Content != nil {
			ew.printf("  rewritten content: %s\n", valueText(*d.Content))
		}
	}
	if len(x.Counters) > 0 {
		ew.printf("\ncounters:\n")
		ew.table(func(tw io.Writer) {
			for _, c := range x.Counters {
				if c.Error != "" {
					fmt.Fprintf(tw, "  %s\t(key failed: %s)\n", c.Counter, c.Error)
					continue
				}
				key := "[" + valueText(c.Key) + "]"
				if c.Key == eval.AllCallsKey {
					key = "(every call)" // a counter without a key
				}
				fmt.Fprintf(tw, "  %s\t%s\t= %d\n", c.Counter, key, c.Value)
			}
		})
	}
	return ew.err
}

func writeBecause(ew *errWriter, vs []eval.ExprValue) {
	for _, v := range vs {
		ew.printf("        %s  %s   (%s)\n", oneLine(v.Expr), exprValueText(v), v.Pos)
		for _, op := range v.Operands {
			ew.printf("            %s %s\n", oneLine(op.Expr), exprValueText(op))
		}
	}
}

func exprValueText(v eval.ExprValue) string {
	if v.Error != "" {
		return "error: " + v.Error
	}
	return "= " + valueText(v.Value)
}
