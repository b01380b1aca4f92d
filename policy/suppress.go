package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// Suppression is a comment that says "I know" about a lint finding:
//
//	rules:
//	  # celguard:ignore cost_over_budget -- bounded by the 4 KiB command limit
//	  - id: scan-words
//
// written on a rule, a variable or a counter (above it, at the end of one
// of its lines, or between its lines). It suppresses the diagnostics of its
// code positioned in that entry. The reason after " -- " is required.
// Only warnings and notes can be suppressed (SuppressibleCodes); a
// suppression that names another code or gives no reason is itself a
// warning, invalid_suppression. A suppressed diagnostic is still reported,
// marked Suppressed: the text format leaves it out and counts it, JSON and
// SARIF list it as suppressed, and `celguard lint --fail-on` ignores it.
type Suppression struct {
	Code   Code   `json:"code"`
	Reason string `json:"reason"`
	// Pos is where the comment is.
	Pos Pos `json:"pos"`
	// From and To are the lines of the entry the comment is on.
	From int `json:"-"`
	To   int `json:"-"`
}

// suppressPrefix starts a suppression comment.
const suppressPrefix = "celguard:ignore"

// suppressRe finds a suppression comment on a source line.
var suppressRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#\s*` + suppressPrefix + `\b(.*)$`) })

// suppressibleCodes are the codes a Suppression may name: the warnings and
// notes about a set that compiles.
var suppressibleCodes = []Code{
	CodeShadowedRule, CodeFalseCondition, CodeUnusedVariable, CodeUnusedCounter,
	CodeCounterNeverIncremented, CodeMissingReason, CodeCostOverBudget, CodeDuplicateCondition,
	CodeCrossLayerShadowed, CodeUnguardedArgument, CodeHostDegrades, CodeToolsPhaseNotMCP,
}

// SuppressibleCodes returns the codes a `# celguard:ignore` comment may name.
func SuppressibleCodes() []Code { return slices.Clone(suppressibleCodes) }

// Covers reports whether s suppresses d: the same code, positioned in the
// entry s is on.
func (s Suppression) Covers(d Diagnostic) bool {
	return d.Code == s.Code && d.Severity != SeverityError && d.Pos.File == s.Pos.File &&
		d.Pos.Line >= s.From && d.Pos.Line <= s.To
}

// Suppress marks the diagnostics of ds that a suppression of sups covers
// (Diagnostic.Suppressed).
func (ds Diagnostics) Suppress(sups []Suppression) {
	for i := range ds {
		if ds[i].Suppressed != nil {
			continue
		}
		for _, s := range sups {
			if s.Covers(ds[i]) {
				s := s
				ds[i].Suppressed = &s
				break
			}
		}
	}
}

// Unsuppressed returns the diagnostics of ds no suppression covers.
func (ds Diagnostics) Unsuppressed() Diagnostics {
	return ds.filter(func(d Diagnostic) bool { return d.Suppressed == nil })
}

// suppressions reads the suppression comments of the entries of a list
// (rules, variables, counters): the comments yaml attached to an entry,
// found on the source lines from the comment lines above it to the line
// before the next entry.
func (d *decoder) suppressions(items []*yaml.Node) []Suppression {
	var out []Suppression
	for i, it := range items {
		comments := nodeComments(it)
		if !strings.Contains(comments, suppressPrefix) {
			continue
		}
		from := d.commentStart(it.Line)
		to := d.entryEnd(it)
		if i+1 < len(items) {
			to = d.commentStart(items[i+1].Line) - 1
		}
		for ln := from; ln <= to && ln <= len(d.lines); ln++ {
			line := string(d.lines[ln-1])
			m := suppressRe().FindStringSubmatchIndex(line)
			if m == nil || !strings.Contains(comments, strings.TrimSpace(line[m[0]:])) {
				continue // not a comment (a # inside a string)
			}
			pos := Pos{File: d.file, Line: ln, Col: len([]rune(line[:m[0]])) + 1}
			if s, ok := d.suppression(line[m[2]:m[3]], pos); ok {
				s.From, s.To = from, to
				out = append(out, s)
			}
		}
	}
	return out
}

// suppression parses what follows celguard:ignore: " CODE -- reason".
func (d *decoder) suppression(text string, pos Pos) (Suppression, bool) {
	spec, reason, hasReason := strings.Cut(text, "--")
	code := Code(strings.TrimSpace(spec))
	reason = strings.TrimSpace(reason)
	switch {
	case code == "":
		d.ds.warnf(CodeInvalidSuppression, pos, "%s names no code: write # %s CODE -- reason", suppressPrefix, suppressPrefix)
	case strings.ContainsAny(string(code), " \t,"):
		d.ds.warnf(CodeInvalidSuppression, pos, "%s takes one code, then \" -- \" and the reason, not %q", suppressPrefix, code)
	case !slices.Contains(suppressibleCodes, code):
		hint := ""
		if near, ok := nearestCode(code); ok {
			hint = fmt.Sprintf("did you mean %s? ", near)
		}
		d.ds.warnf(CodeInvalidSuppression, pos, "%s %s: %q is not a code that can be suppressed; %scodes that can: %s",
			suppressPrefix, code, code, hint, codeList(suppressibleCodes))
	case !hasReason || reason == "":
		d.ds.warnf(CodeInvalidSuppression, pos, "%s %s gives no reason: write # %s %s -- why this is fine",
			suppressPrefix, code, suppressPrefix, code)
	default:
		return Suppression{Code: code, Reason: reason, Pos: pos}, true
	}
	return Suppression{}, false
}

// nearestCode returns the suppressible code closest to a misspelt one,
// within two edits.
func nearestCode(c Code) (Code, bool) {
	best, bestD := Code(""), 3
	for _, k := range suppressibleCodes {
		if d := EditDistance(string(c), string(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best, best != ""
}

func codeList(codes []Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// commentStart returns the first line of the comment lines right above
// line (line itself when there are none).
func (d *decoder) commentStart(line int) int {
	for line > 1 && line-2 < len(d.lines) && strings.HasPrefix(strings.TrimSpace(string(d.lines[line-2])), "#") {
		line--
	}
	return line
}

// entryEnd is the last line of the last entry of a list: past its last
// node, the lines indented at least as deep as its keys (the rest of a
// folded or literal block).
func (d *decoder) entryEnd(it *yaml.Node) int {
	end := lastLine(it)
	for ln := end + 1; ln <= len(d.lines); ln++ {
		line := string(d.lines[ln-1])
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" {
			continue
		}
		if len(line)-len(trimmed) < it.Column-1 {
			break
		}
		end = ln
	}
	return end
}

// nodeComments joins every comment of a node and the nodes below it.
func nodeComments(n *yaml.Node) string {
	var b strings.Builder
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			if c != "" {
				b.WriteString(c)
				b.WriteByte('\n')
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// lastLine is the last source line of a node: its last descendant's line,
// plus the lines of a multi-line scalar.
func lastLine(n *yaml.Node) int {
	last := n.Line + strings.Count(strings.TrimRight(n.Value, "\n"), "\n")
	if n.Kind == yaml.ScalarNode && (n.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0 {
		last++ // the block's content starts on the line after the indicator
	}
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

// warnf appends a warning.
func (ds *Diagnostics) warnf(code Code, pos Pos, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Code: code, Severity: SeverityWarning, Pos: pos, Message: fmt.Sprintf(format, args...)})
}
