package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/celguard/celguard/policy"
)

// DiagnosticsText writes diagnostics for people: file:line:col: severity:
// code: message, then the source line and a caret under the column.
func DiagnosticsText(w io.Writer, ds policy.Diagnostics, lines policy.SourceLines) error {
	return policy.WriteText(w, ds, lines)
}

// ANSI escapes of the coloured text format.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[1;33m"
	ansiCyan   = "\x1b[1;36m"
	ansiDim    = "\x1b[2m"
	ansiGreen  = "\x1b[1;32m"
)

// diagnosticsText is the text format: policy.WriteText's output, with the
// position, severity, code and caret coloured when opts.Color is set.
func diagnosticsText(w io.Writer, ds policy.Diagnostics, opts DiagnosticOptions) error {
	if !opts.Color {
		return policy.WriteText(w, ds, opts.Lines)
	}
	for _, d := range ds {
		sev := ansiCyan
		switch d.Severity {
		case policy.SeverityError:
			sev = ansiRed
		case policy.SeverityWarning:
			sev = ansiYellow
		}
		if _, err := fmt.Fprintf(w, "%s%s%s: %s%s%s: %s%s%s: %s\n", ansiBold, d.Pos, ansiReset, sev, d.Severity, ansiReset,
			ansiDim, d.Code, ansiReset, d.Message); err != nil {
			return err
		}
		if opts.Lines == nil {
			continue
		}
		src, ok := opts.Lines(d.Pos.File, d.Pos.Line)
		if !ok {
			continue
		}
		if _, err := fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(src, "\t", " ")); err != nil {
			return err
		}
		if d.Pos.Col > 0 {
			if _, err := fmt.Fprintf(w, "    %s%s^%s\n", strings.Repeat(" ", d.Pos.Col-1), ansiGreen, ansiReset); err != nil {
				return err
			}
		}
	}
	return nil
}
