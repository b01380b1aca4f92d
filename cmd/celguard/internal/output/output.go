// Package output renders what the celguard commands report: decisions as
// JSON lines, diagnostics for people, and one-line summaries. Each format is
// a function of its own, so commands pick one by name.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/policy"
)

// Decision writes d as one line of JSON, with the field names of
// eval.Decision (verdict first).
func Decision(w io.Writer, d eval.Decision) error {
	return writeJSON(w, d, "")
}

// InputError is the line `celguard eval` writes on stdout, in place of a
// decision, for a value of a stream that is not a valid event:
// {"error": {"code": "invalid_input", "line": 3, "col": 37, "message": "..."}}.
type InputError struct {
	Error InputErrorBody `json:"error"`
}

// InputErrorBody is what is wrong with the input, and where.
type InputErrorBody struct {
	// Code is stable: invalid_input.
	Code string `json:"code"`
	// Line is the 1-based line of the input the value starts on (or, for
	// invalid JSON, where the syntax error is).
	Line int `json:"line"`
	// Col is the 1-based column of a JSON syntax error; 0 (left out) when
	// unknown.
	Col int `json:"col,omitempty"`
	// Message is for people; it may be reworded in any release.
	Message string `json:"message"`
}

// WriteInputError writes e as one line of JSON.
func WriteInputError(w io.Writer, e InputErrorBody) error {
	return writeJSON(w, InputError{Error: e}, "")
}

// Summary says in one line what a lint of files policy files found:
// "2 errors, 1 warning in 1 file" or "3 files, no problems", with
// " (2 suppressed)" when # celguard:ignore comments suppressed some.
func Summary(ds policy.Diagnostics, files int) string {
	suppressed := len(ds)
	ds = ds.Unsuppressed()
	suppressed -= len(ds)
	if len(ds) == 0 {
		if suppressed > 0 {
			return fmt.Sprintf("%s, no problems (%d suppressed)", plural(files, "file", "files"), suppressed)
		}
		return fmt.Sprintf("%s, no problems", plural(files, "file", "files"))
	}
	var counts []string
	for _, sev := range []policy.Severity{policy.SeverityError, policy.SeverityWarning, policy.SeverityInfo} {
		n := 0
		for _, d := range ds {
			if d.Severity == sev {
				n++
			}
		}
		if n > 0 {
			many := string(sev) + "s"
			if sev == policy.SeverityInfo {
				many = string(sev)
			}
			counts = append(counts, plural(n, string(sev), many))
		}
	}
	var inFiles []string
	for _, d := range ds {
		if d.Pos.File != "" && !slices.Contains(inFiles, d.Pos.File) {
			inFiles = append(inFiles, d.Pos.File)
		}
	}
	s := strings.Join(counts, ", ")
	if len(inFiles) > 0 {
		s += " in " + plural(len(inFiles), "file", "files")
	}
	if suppressed > 0 {
		s += fmt.Sprintf(" (%d suppressed)", suppressed)
	}
	return s
}

// writeJSON writes v as JSON, "<" and ">" as they are: on one line, or with
// indent, indented by it.
func writeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	return enc.Encode(v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
