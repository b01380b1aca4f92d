package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/celguard/celguard/policy"
)

// DiagnosticsGitHub writes ds as GitHub Actions workflow commands, which
// annotate the lines of a pull request:
//
//	::error file=policies/a.yaml,line=7,col=14,title=verdict_phase::ask cannot be used ...
//
// Warnings become ::warning and info ::notice. File names use forward
// slashes; values are escaped as the runner expects.
func DiagnosticsGitHub(w io.Writer, ds policy.Diagnostics) error {
	for _, d := range ds {
		cmd := "notice"
		switch d.Severity {
		case policy.SeverityError:
			cmd = "error"
		case policy.SeverityWarning:
			cmd = "warning"
		}
		var props []string
		if d.Pos.File != "" {
			props = append(props, "file="+githubProperty(slashPath(d.Pos.File)))
		}
		if d.Pos.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", d.Pos.Line))
			if d.Pos.Col > 0 {
				props = append(props, fmt.Sprintf("col=%d", d.Pos.Col))
			}
		}
		props = append(props, "title="+githubProperty(string(d.Code)))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", cmd, strings.Join(props, ","), githubData(d.Message)); err != nil {
			return err
		}
	}
	return nil
}

// githubData escapes a workflow command's message: %, CR and LF.
func githubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// githubProperty escapes a workflow command's property value: as a message,
// and also : and , which separate properties.
func githubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
