package output

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/celguard/celguard/policy"
)

// Diagnostic output formats, as named by `celguard lint --format`.
const (
	FormatText   = "text"   // file:line:col: severity: code: message, the source line and a caret
	FormatJSON   = "json"   // one JSON document, docs/lint-json.md
	FormatSARIF  = "sarif"  // SARIF 2.1.0, for code scanning
	FormatGitHub = "github" // GitHub Actions workflow commands that annotate a pull request
)

// DiagnosticFormats lists the formats Diagnostics accepts.
var DiagnosticFormats = []string{FormatText, FormatJSON, FormatSARIF, FormatGitHub}

// DocsURL is where the diagnostics catalogue is published; a code's
// section is DocsURL + "#" + code.
const DocsURL = "https://github.com/celguard/celguard/blob/main/docs/diagnostics.md"

// DiagnosticOptions configure the diagnostic printers. The zero value is
// valid: no source lines, no colour.
type DiagnosticOptions struct {
	// Lines gives the text format its source lines; nil prints none.
	Lines policy.SourceLines
	// Color makes the text format use ANSI colours.
	Color bool
	// Files is the number of policy files checked (json summary).
	Files int
	// ToolVersion is celguard's version (json celguard_version, sarif
	// tool.driver.version).
	ToolVersion string
}

// Diagnostics writes ds in the named format. The diagnostics a
// `# celguard:ignore` comment suppresses (policy.Suppression) are listed as
// suppressed in JSON and SARIF and left out of the text and GitHub formats
// (Summary counts them).
func Diagnostics(w io.Writer, format string, ds policy.Diagnostics, opts DiagnosticOptions) error {
	switch format {
	case FormatText:
		return diagnosticsText(w, ds.Unsuppressed(), opts)
	case FormatJSON:
		return DiagnosticsJSON(w, ds, opts.Files, opts.ToolVersion)
	case FormatSARIF:
		return DiagnosticsSARIF(w, ds, opts.ToolVersion)
	case FormatGitHub:
		return DiagnosticsGitHub(w, ds.Unsuppressed())
	}
	return fmt.Errorf("unknown format %q: use one of %s", format, strings.Join(DiagnosticFormats, ", "))
}

// ValidDiagnosticFormat reports whether Diagnostics knows the format.
func ValidDiagnosticFormat(format string) bool { return slices.Contains(DiagnosticFormats, format) }

// helpURI is the catalogue section of a code.
func helpURI(c policy.Code) string { return DocsURL + "#" + string(c) }

// slashPath is a diagnostic's file name with forward slashes, as SARIF and
// GitHub expect on every platform.
func slashPath(file string) string { return filepath.ToSlash(file) }
