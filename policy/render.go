package policy

import (
	"fmt"
	"io"
	"strings"
)

// SourceLines looks up a line of a file by name for rendering; it returns
// false when the file or line is unknown.
type SourceLines func(file string, line int) (string, bool)

// LinesOf returns a SourceLines over in-memory sources.
func LinesOf(srcs []Source) SourceLines {
	byName := make(map[string][]string, len(srcs))
	for _, s := range srcs {
		byName[s.Name] = strings.Split(strings.ReplaceAll(string(s.Data), "\r\n", "\n"), "\n")
	}
	return func(file string, line int) (string, bool) {
		ls, ok := byName[file]
		if !ok || line < 1 || line > len(ls) {
			return "", false
		}
		return ls[line-1], true
	}
}

// WriteText writes diagnostics for people: file:line:col: severity: code:
// message, then the source line and a caret under the column.
//
//	rm.yaml:7:21: error: cel_type: rule no-rm condition: undeclared reference to 'comand'
//	    condition: 'args.comand == "rm"'
//	                    ^
func WriteText(w io.Writer, ds Diagnostics, lines SourceLines) error {
	for _, d := range ds {
		if _, err := fmt.Fprintf(w, "%s: %s: %s: %s\n", d.Pos, d.Severity, d.Code, d.Message); err != nil {
			return err
		}
		if lines == nil {
			continue
		}
		src, ok := lines(d.Pos.File, d.Pos.Line)
		if !ok {
			continue
		}
		src = strings.ReplaceAll(src, "\t", " ")
		if _, err := fmt.Fprintf(w, "    %s\n", src); err != nil {
			return err
		}
		if d.Pos.Col > 0 {
			if _, err := fmt.Fprintf(w, "    %s^\n", strings.Repeat(" ", d.Pos.Col-1)); err != nil {
				return err
			}
		}
	}
	return nil
}
