package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/celguard/celguard/compile"
)

// verdictOrder is the order counts are shown in: from the most permissive.
var verdictOrder = []string{"allow", "warn", "modify", "ask", "block", "halt"}

// countsText renders verdict counts in verdictOrder: "allow 3, block 1".
func countsText(m map[string]int) string {
	var parts []string
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(verdictOrder, a), slices.Index(verdictOrder, b)
		if ia < 0 {
			ia = len(verdictOrder)
		}
		if ib < 0 {
			ib = len(verdictOrder)
		}
		return ia - ib
	})
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// compactJSON is v as one line of JSON, without HTML escaping.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ruleName is how a rule is named in text: policy/rule (file:line).
func ruleName(r compile.RuleRef) string {
	if r.RuleID == "" {
		return "the default verdict"
	}
	s := r.Policy + "/" + r.RuleID
	if r.File != "" {
		s += fmt.Sprintf(" (%s:%d)", r.File, r.Line)
	}
	return s
}

// WriteJSON writes a Report (docs/schema/replay.schema.json) or a
// DiffReport (docs/schema/diff.schema.json) as indented JSON.
func WriteJSON(w io.Writer, r any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person at a terminal.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	what := "replayed"
	if r.Monitor {
		what = "monitor report of"
	}
	fmt.Fprintf(&b, "%s %d files: %d sessions, %d events, %d calls", what, r.Files, r.Sessions, r.Events, r.Calls)
	if r.PolicyDigest != "" {
		fmt.Fprintf(&b, " (policies %s)", r.PolicyDigest)
	}
	fmt.Fprintf(&b, "\ncalls: %s\n", countsText(r.Verdicts))
	for _, phase := range slices.Sorted(maps.Keys(r.Phases)) {
		fmt.Fprintf(&b, "  %-9s %s\n", phase+":", countsText(r.Phases[phase]))
	}
	if len(r.Hosts) > 0 {
		b.WriteString("by host:\n")
		for _, h := range slices.Sorted(maps.Keys(r.Hosts)) {
			fmt.Fprintf(&b, "  %-12s %s\n", h, countsText(r.Hosts[h]))
		}
	}
	if len(r.Rules) > 0 {
		b.WriteString("by rule:\n")
		for _, rc := range r.Rules {
			fmt.Fprintf(&b, "  %s: %s\n", ruleName(rc.RuleRef), countsText(rc.Verdicts))
		}
	}
	findings := func(title string, fs []Finding) {
		fmt.Fprintf(&b, "%s: %d\n", title, len(fs))
		for _, f := range fs {
			fmt.Fprintf(&b, "  %s: %s %s %s %s by %s", f.Record, f.Verdict, f.Phase, f.Tool, compactJSON(f.Args), ruleName(f.RuleRef))
			if f.Reason != "" {
				fmt.Fprintf(&b, ": %s", f.Reason)
			}
			if f.Live != "" {
				fmt.Fprintf(&b, " [live: %s]", f.Live)
			}
			b.WriteString("\n")
		}
	}
	findings("refused", r.Refused)
	findings("ran but refused now", r.RanRefused)
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "records not read: %d\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "  %v\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "`", "'")
	return s
}

// WriteMarkdown writes the report as a Markdown summary for a pull
// request: the counts, then the refused calls in a table.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	title := "celguard replay"
	if r.Monitor {
		title = "celguard monitor report"
	}
	fmt.Fprintf(&b, "### %s\n\n", title)
	fmt.Fprintf(&b, "%d files, %d sessions, %d calls: %s.\n\n", r.Files, r.Sessions, r.Calls, countsText(r.Verdicts))
	if len(r.Hosts) > 0 {
		b.WriteString("| host | decisions |\n|---|---|\n")
		for _, h := range slices.Sorted(maps.Keys(r.Hosts)) {
			fmt.Fprintf(&b, "| %s | %s |\n", mdCell(h), countsText(r.Hosts[h]))
		}
		b.WriteString("\n")
	}
	if len(r.Rules) > 0 {
		b.WriteString("| rule | decisions |\n|---|---|\n")
		for _, rc := range r.Rules {
			fmt.Fprintf(&b, "| `%s` | %s |\n", mdCell(ruleName(rc.RuleRef)), countsText(rc.Verdicts))
		}
		b.WriteString("\n")
	}
	table := func(title string, fs []Finding) {
		if len(fs) == 0 {
			fmt.Fprintf(&b, "**%s:** none.\n\n", title)
			return
		}
		fmt.Fprintf(&b, "**%s:** %d\n\n| record | verdict | call | rule | reason |\n|---|---|---|---|---|\n", title, len(fs))
		for _, f := range fs {
			fmt.Fprintf(&b, "| `%s` | %s | `%s %s` | `%s` | %s |\n", mdCell(f.Record.String()), f.Verdict, mdCell(f.Tool), mdCell(compactJSON(f.Args)), mdCell(ruleName(f.RuleRef)), mdCell(f.Reason))
		}
		b.WriteString("\n")
	}
	table("Calls the policies refuse", r.Refused)
	table("Calls the host ran that the policies refuse", r.RanRefused)
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "**Records not read:** %d\n\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- `%s`\n", mdCell(e.Error()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
