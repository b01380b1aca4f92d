package output

import (
	"bytes"
	"testing"

	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

func TestSummary(t *testing.T) {
	d := func(sev policy.Severity, file string) policy.Diagnostic {
		return policy.Diagnostic{Severity: sev, Pos: policy.Pos{File: file, Line: 1, Col: 1}}
	}
	tests := []struct {
		ds    policy.Diagnostics
		files int
		want  string
	}{
		{nil, 1, "1 file, no problems"},
		{nil, 3, "3 files, no problems"},
		{policy.Diagnostics{d(policy.SeverityError, "a.yaml")}, 3, "1 error in 1 file"},
		{policy.Diagnostics{d(policy.SeverityError, "a.yaml"), d(policy.SeverityWarning, "b.yaml"), d(policy.SeverityError, "a.yaml")}, 3, "2 errors, 1 warning in 2 files"},
		{policy.Diagnostics{d(policy.SeverityInfo, "a.yaml"), d(policy.SeverityInfo, "a.yaml")}, 1, "2 info in 1 file"},
	}
	for _, tt := range tests {
		if got := Summary(tt.ds, tt.files); got != tt.want {
			t.Errorf("Summary(%v, %d) = %q, want %q", tt.ds, tt.files, got, tt.want)
		}
	}
}

func TestDecisionIsOneLine(t *testing.T) {
	var b bytes.Buffer
	if err := Decision(&b, eval.Decision{Verdict: policy.Block, Tool: "Bash", Reason: "<no> & \"never\""}); err != nil {
		t.Fatal(err)
	}
	want := `{"verdict":"block","phase":"before","tool":"Bash","reason":"<no> & \"never\""}` + "\n"
	if got := b.String(); got != want {
		t.Errorf("Decision() wrote %q, want %q", got, want)
	}
}

// The untrusted project's steps and decisions are marked in the text forms.
func TestUntrustedMarked(t *testing.T) {
	d := eval.Decision{Tool: "Bash", Verdict: policy.Block, RuleRef: compile.RuleRef{RuleID: "no-make", Policy: "repo"}, Untrusted: true,
		Trace: []eval.TraceStep{{Rule: "ok", Policy: "team", Verdict: "allow", Outcome: eval.OutcomeMatched},
			{Rule: "no-make", Policy: "repo", Verdict: "block", Outcome: eval.OutcomeMatched, Untrusted: true}}}
	var b bytes.Buffer
	if err := ExplanationText(&b, eval.Explanation{Decision: d, Steps: []eval.ExplainStep{
		{RuleRef: compile.RuleRef{RuleID: "ok"}, Verdict: "allow", Outcome: eval.OutcomeMatched},
		{RuleRef: compile.RuleRef{RuleID: "no-make"}, Verdict: "block", Outcome: eval.OutcomeMatched, Untrusted: true}}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !bytes.Contains(b.Bytes(), []byte("no-make (block, :0) [untrusted project]")) || bytes.Contains(b.Bytes(), []byte("ok (allow, :0) [untrusted")) {
		t.Errorf("explain does not mark the project's step alone:\n%s", out)
	}
	if !bytes.Contains(b.Bytes(), []byte("the untrusted project's decision")) {
		t.Errorf("explain does not say the decision is the project's:\n%s", out)
	}
	b.Reset()
	ew := &errWriter{w: &b}
	writeTrace(ew, d, "")
	if !bytes.Contains(b.Bytes(), []byte("(repo, block, untrusted project)")) || bytes.Contains(b.Bytes(), []byte("(team, allow, untrusted")) {
		t.Errorf("the trace does not mark the project's step alone:\n%s", b.String())
	}
}
