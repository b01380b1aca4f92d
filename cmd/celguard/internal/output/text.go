package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/celguard/celguard/eval"
)

// What the text renderers (ExplanationText, TestText, CoverageText) share:
// the words for a rule's outcome, aligned tables, values cut to a line.

// outcomeText names a rule's outcome for people: word in a list of the
// rules considered, because over the sub-expressions that gave its
// condition its value.
func outcomeText(o eval.Outcome) (word, because string) {
	switch o {
	case eval.OutcomeToolNotMatched:
		return "skipped (tool)", ""
	case eval.OutcomeNoMatch:
		return "condition false", "false because:"
	case eval.OutcomeMatched:
		return "FIRED", "true because:"
	case eval.OutcomeApplied:
		return "applied (modify)", "true because:"
	case eval.OutcomeAlreadyApplied:
		return "already applied", "true because:"
	case eval.OutcomeError:
		return "ERROR", "failed at:"
	case eval.OutcomeMonitored:
		return "monitored (would fire)", "true because:"
	}
	return string(o), "true because:"
}

// outcomeWord is outcomeText's word.
func outcomeWord(o eval.Outcome) string {
	word, _ := outcomeText(o)
	return word
}

// maxValueText bounds how much of a value the text renderers show.
const maxValueText = 120

// valueText renders a value as JSON, cut at maxValueText characters.
func valueText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	s := fmt.Sprint(v)
	if err := enc.Encode(v); err == nil {
		s = strings.TrimSuffix(b.String(), "\n")
	}
	if r := []rune(s); len(r) > maxValueText {
		s = string(r[:maxValueText]) + "…"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// table writes the tab-separated rows that rows writes to tw as aligned
// columns, two spaces apart.
func (e *errWriter) table(rows func(tw io.Writer)) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	rows(tw)
	_ = tw.Flush()
	e.printf("%s", b.String())
}
