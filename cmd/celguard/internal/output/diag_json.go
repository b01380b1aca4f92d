package output

import (
	"io"

	"github.com/celguard/celguard/policy"
)

// LintJSONVersion is the version of the `celguard lint --format json`
// document. It changes only when a field changes meaning or is removed;
// fields may be added without a change. docs/lint-json.md documents the
// format and docs/lint-json.schema.json is its JSON Schema.
const LintJSONVersion = 1

// LintJSON is the document `celguard lint --format json` writes.
type LintJSON struct {
	Version int `json:"version"`
	// CelguardVersion is the version of the celguard that wrote the
	// document (celguard version); "" leaves it out.
	CelguardVersion string           `json:"celguard_version,omitempty"`
	Files           int              `json:"files"`
	Summary         LintJSONSummary  `json:"summary"`
	Diagnostics     []LintDiagnostic `json:"diagnostics"`
}

// LintJSONSummary counts the diagnostics by severity, those suppressed
// apart.
type LintJSONSummary struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Info     int `json:"info"`
	// Suppressed counts the diagnostics a # celguard:ignore comment
	// suppresses; they are not counted by severity.
	Suppressed int `json:"suppressed"`
}

// LintDiagnostic is one diagnostic of a LintJSON document.
type LintDiagnostic struct {
	Code     policy.Code     `json:"code"`
	Severity policy.Severity `json:"severity"`
	// File, Line and Col are where the problem is; line and col are 0 when
	// unknown (a problem with the whole set, such as no_policies).
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	// Pos is File, Line and Col again, as format version 1 first gave them.
	Pos     policy.Pos `json:"pos"`
	Message string     `json:"message"`
	// Related are the other places involved (never null).
	Related []policy.Pos `json:"related"`
	// Help is the diagnostics catalogue's section on the code.
	Help string `json:"help"`
	// Suppressed is the # celguard:ignore comment that suppresses the
	// diagnostic, when one does: its reason and position.
	Suppressed *LintSuppression `json:"suppressed,omitempty"`
}

// LintSuppression is the comment that suppresses a LintDiagnostic.
type LintSuppression struct {
	Reason string     `json:"reason"`
	Pos    policy.Pos `json:"pos"`
}

// DiagnosticsJSON writes ds as one LintJSON document (indented, with a
// final newline). files is the number of policy files checked, tool the
// version of celguard.
func DiagnosticsJSON(w io.Writer, ds policy.Diagnostics, files int, tool string) error {
	doc := LintJSON{Version: LintJSONVersion, CelguardVersion: tool, Files: files, Diagnostics: make([]LintDiagnostic, 0, len(ds))}
	for _, d := range ds {
		switch {
		case d.Suppressed != nil:
			doc.Summary.Suppressed++
		case d.Severity == policy.SeverityError:
			doc.Summary.Errors++
		case d.Severity == policy.SeverityWarning:
			doc.Summary.Warnings++
		default:
			doc.Summary.Info++
		}
		rel := d.Related
		if rel == nil {
			rel = []policy.Pos{}
		}
		ld := LintDiagnostic{Code: d.Code, Severity: d.Severity, File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Pos: d.Pos,
			Message: d.Message, Related: rel, Help: helpURI(d.Code)}
		if s := d.Suppressed; s != nil {
			ld.Suppressed = &LintSuppression{Reason: s.Reason, Pos: s.Pos}
		}
		doc.Diagnostics = append(doc.Diagnostics, ld)
	}
	return writeJSON(w, doc, "  ")
}
