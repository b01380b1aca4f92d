package policytest

import (
	"encoding/json"
	"strconv"
	"strings"
)

// FieldDiff is one checked field of a step, expected against actual.
type FieldDiff struct {
	// Field is the expectation's key: verdict, rule, code, reason,
	// reason_contains, args, content, content_contains, modified_by,
	// approval or untrusted.
	Field    string `json:"field"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	// Differs says whether this field failed the check.
	Differs bool `json:"differs"`
}

// Fields lists the fields the step checked, in a fixed order, each with the
// expected and the actual value rendered for people (strings quoted, args
// as JSON) and whether it failed the check. Verdict and rule are always
// listed; expected is "(any)" when the step did not check them.
func (m Mismatch) Fields() []FieldDiff {
	e, d := m.Expected, m.Actual
	var out []FieldDiff
	add := func(field, want, got string, only Expect) {
		out = append(out, FieldDiff{Field: field, Expected: want, Actual: got, Differs: len(compare(only, d)) > 0})
	}
	want := e.Verdict
	if want == "" {
		want = "(any)"
	}
	add("verdict", want, d.Verdict.String(), Expect{Verdict: e.Verdict})
	got := d.RuleID
	if got == "" {
		got = "none"
	}
	want = "(any)"
	if e.Rule != nil {
		want = *e.Rule
		if want == "" {
			want = "none"
		}
	}
	add("rule", want, got, Expect{Rule: e.Rule})
	if e.Code != nil {
		add("code", quote(*e.Code), quote(d.Code), Expect{Code: e.Code})
	}
	if e.Reason != nil {
		add("reason", quote(*e.Reason), quote(d.Reason), Expect{Reason: e.Reason})
	}
	if e.ReasonContains != "" {
		add("reason_contains", quote(e.ReasonContains), quote(d.Reason), Expect{ReasonContains: e.ReasonContains})
	}
	if e.Args != nil {
		add("args", jsonText(e.Args), jsonText(d.Args), Expect{Args: e.Args})
	}
	if e.Content != nil {
		got := "none"
		if d.Content != nil {
			got = quote(*d.Content)
		}
		add("content", quote(*e.Content), got, Expect{Content: e.Content})
	}
	if e.ContentContains != "" {
		got := "none"
		if d.Content != nil {
			got = quote(*d.Content)
		}
		add("content_contains", quote(e.ContentContains), got, Expect{ContentContains: e.ContentContains})
	}
	if e.ModifiedBy != nil {
		add("modified_by", "["+strings.Join(e.ModifiedBy, ", ")+"]", "["+strings.Join(d.Modified, ", ")+"]", Expect{ModifiedBy: e.ModifiedBy})
	}
	if e.Approval != "" {
		got := "none"
		if d.Approval != nil {
			got = string(d.Approval.Outcome)
		}
		add("approval", e.Approval, got, Expect{Approval: e.Approval})
	}
	if e.Untrusted != nil {
		add("untrusted", strconv.FormatBool(*e.Untrusted), strconv.FormatBool(d.Untrusted), Expect{Untrusted: e.Untrusted})
	}
	if e.Metadata != nil {
		add("metadata", jsonText(e.Metadata), jsonText(d.Metadata), Expect{Metadata: e.Metadata})
	}
	return out
}

func quote(s string) string { return strconv.Quote(s) }

func jsonText(v any) string {
	b, err := json.Marshal(jsonValue(v))
	if err != nil {
		return "?"
	}
	return string(b)
}
