package replay

import (
	"fmt"
	"io"
	"strings"
)

// FailOn is which flips fail a diff (`--fail-on`): loosen, tighten or any;
// "" fails on none.
type FailOn string

// The FailOn values.
const (
	FailLoosen  FailOn = "loosen"
	FailTighten FailOn = "tighten"
	FailAny     FailOn = "any"
)

// ParseFailOn parses a --fail-on value.
func ParseFailOn(s string) (FailOn, error) {
	switch f := FailOn(s); f {
	case "", FailLoosen, FailTighten, FailAny:
		return f, nil
	}
	return "", fmt.Errorf("--fail-on must be loosen, tighten or any, not %q", s)
}

// fails reports whether a group's flips are of the kind f fails on.
func (f FailOn) fails(g FlipGroup) bool {
	switch f {
	case FailAny:
		return true
	case FailLoosen:
		return g.Direction == Loosen
	case FailTighten:
		return g.Direction == Tighten
	}
	return false
}

// Fails reports whether the report has a flip f fails on.
func (r *DiffReport) Fails(f FailOn) bool {
	for _, g := range r.Groups {
		if f.fails(g) {
			return true
		}
	}
	return false
}

// groupTitle is a group's one-line summary.
func groupTitle(g FlipGroup) string {
	return fmt.Sprintf("%d %s %s: %s → %s (%s), decided by %s, was %s", g.Count, g.Phase, plural(g.Count, "decision", "decisions"), g.From, g.To, g.Direction, ruleName(g.Rule), ruleName(g.WasRule))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// exampleText is a group's example call in one line.
func exampleText(f Finding) string {
	s := fmt.Sprintf("%s: %s %s", f.Record, f.Tool, compactJSON(f.Args))
	if f.Reason != "" {
		s += ": " + f.Reason
	}
	return s
}

// WriteDiffText writes the diff for a person: the flips grouped, each with
// an example call, then the static difference.
func WriteDiffText(w io.Writer, r *DiffReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "replayed %d files: %d events, %d calls, %d decisions under both sets\n", r.Files, r.Events, r.Calls, r.Decisions)
	fmt.Fprintf(&b, "base %s\nhead %s\n", r.Base, r.Head)
	fmt.Fprintf(&b, "flips: %d (%d loosened, %d tightened)\n", r.Flips, r.Loosened, r.Tightened)
	for _, g := range r.Groups {
		fmt.Fprintf(&b, "  %s\n    e.g. %s\n", groupTitle(g), exampleText(g.Example))
	}
	writeStatic(&b, r.Static, "  ")
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "records not read: %d\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "  %v\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeStatic(b *strings.Builder, s StaticDiff, indent string) {
	for _, part := range []struct {
		name  string
		rules []StaticRule
	}{{"added", s.Added}, {"removed", s.Removed}, {"changed", s.Changed}, {"reordered", s.Reordered}, {"shadowed", s.Shadowed}} {
		fmt.Fprintf(b, "rules %s: %d\n", part.name, len(part.rules))
		for _, r := range part.rules {
			fmt.Fprintf(b, "%s%s: %s %s", indent, ruleName(r.RuleRef), r.Phase, r.Verdict)
			if r.Detail != "" {
				fmt.Fprintf(b, " (%s)", r.Detail)
			}
			b.WriteString("\n")
		}
	}
}

// WriteDiffMarkdown writes the diff as a Markdown summary for a pull
// request.
func WriteDiffMarkdown(w io.Writer, r *DiffReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### celguard diff\n\n%d files, %d calls replayed under both policy sets: **%d flips** (%d loosened, %d tightened).\n\n", r.Files, r.Calls, r.Flips, r.Loosened, r.Tightened)
	if len(r.Groups) > 0 {
		b.WriteString("| flips | phase | from → to | decided by | was | example |\n|---|---|---|---|---|---|\n")
		for _, g := range r.Groups {
			fmt.Fprintf(&b, "| %d | %s | %s → %s (%s) | `%s` | `%s` | `%s` |\n", g.Count, g.Phase, g.From, g.To, g.Direction,
				mdCell(ruleName(g.Rule)), mdCell(ruleName(g.WasRule)), mdCell(exampleText(g.Example)))
		}
		b.WriteString("\n")
	}
	b.WriteString("<details><summary>Rules</summary>\n\n```\n")
	writeStatic(&b, r.Static, "  ")
	b.WriteString("```\n\n</details>\n")
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "\n**Records not read:** %d\n", len(r.Errors))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghEscape escapes a GitHub workflow command's message (% and line
// breaks) or property (also : and ,).
func ghEscape(s string, property bool) string {
	s = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	if property {
		s = strings.NewReplacer(":", "%3A", ",", "%2C").Replace(s)
	}
	return s
}

// WriteDiffGitHub writes the diff as GitHub Actions workflow commands: one
// annotation per flip group on the rule that decides now (an error when
// failOn fails on it, a warning otherwise), one per rule newly shadowed,
// and a notice with the totals.
func WriteDiffGitHub(w io.Writer, r *DiffReport, failOn FailOn) error {
	var b strings.Builder
	for _, g := range r.Groups {
		level := "warning"
		if failOn.fails(g) {
			level = "error"
		}
		ref := g.Rule
		if ref.File == "" {
			ref = g.WasRule
		}
		loc := ""
		if ref.File != "" {
			loc = fmt.Sprintf(" file=%s,line=%d,", ghEscape(ref.File, true), ref.Line)
		} else {
			loc = " "
		}
		fmt.Fprintf(&b, "::%s%stitle=%s::%s%s\n", level, loc, ghEscape("celguard diff: "+g.From.String()+" → "+g.To.String(), true),
			ghEscape(groupTitle(g), false), ghEscape("\ne.g. "+exampleText(g.Example), false))
	}
	for _, s := range r.Static.Shadowed {
		fmt.Fprintf(&b, "::warning file=%s,line=%d,title=%s::%s\n", ghEscape(s.File, true), s.Line, ghEscape("celguard diff: rule never decides", true), ghEscape(s.Detail, false))
	}
	fmt.Fprintf(&b, "::notice title=celguard diff::%s\n", ghEscape(fmt.Sprintf("%d flips (%d loosened, %d tightened) over %d calls; rules: %d added, %d removed, %d changed, %d reordered, %d newly shadowed",
		r.Flips, r.Loosened, r.Tightened, r.Calls, len(r.Static.Added), len(r.Static.Removed), len(r.Static.Changed), len(r.Static.Reordered), len(r.Static.Shadowed)), false))
	_, err := io.WriteString(w, b.String())
	return err
}
