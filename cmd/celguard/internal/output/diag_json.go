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

// LintJSONSummary counts the diagnostics by severity.
type LintJSONSummary struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Info     int `json:"info"`
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
}

// DiagnosticsJSON writes ds as one LintJSON document (indented, with a
// final newline). files is the number of policy files checked, tool the
// version of celguard.
func DiagnosticsJSON(w io.Writer, ds policy.Diagnostics, files int, tool string) error {
	doc := LintJSON{Version: LintJSONVersion, CelguardVersion: tool, Files: files, Diagnostics: make([]LintDiagnostic, 0, len(ds))}
	for _, d := range ds {
		switch d.Severity {
		case policy.SeverityError:
			doc.Summary.Errors++
		case policy.SeverityWarning:
			doc.Summary.Warnings++
		default:
			doc.Summary.Info++
		}
		rel := d.Related
		if rel == nil {
			rel = []policy.Pos{}
		}
		doc.Diagnostics = append(doc.Diagnostics, LintDiagnostic{Code: d.Code, Severity: d.Severity, File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Pos: d.Pos,
			Message: d.Message, Related: rel, Help: helpURI(d.Code)})
	}
	return writeJSON(w, doc, "  ")
}
