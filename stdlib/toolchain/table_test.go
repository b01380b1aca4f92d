package toolchain

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table in docs/policies.md")

// Markers around the generated table in docs/policies.md.
const (
	tableBegin = "<!-- toolchain table: generated from stdlib/toolchain.Table by go test ./stdlib/toolchain -update -->\n"
	tableEnd   = "<!-- end of toolchain table -->\n"
)

// RenderTable returns the documented table of the families.
func renderTable() string {
	var b strings.Builder
	b.WriteString("| ecosystem | family | files | read as | run by |\n|---|---|---|---|---|\n")
	for _, f := range Table {
		pats := make([]string, len(f.Patterns))
		for i, p := range f.Patterns {
			pats[i] = "`" + p + "`"
		}
		format := string(f.Format)
		if f.Lang != "" {
			format += " (" + f.Lang + ")"
		}
		b.WriteString("| " + f.Ecosystem + " | " + f.Name + " | " + strings.Join(pats, ", ") + " | " + format + " | " +
			strings.ReplaceAll(f.RunBy, "|", `\|`) + " |\n")
	}
	return b.String()
}

// TestTableDocumented: docs/policies.md holds the table as Table renders it.
func TestTableDocumented(t *testing.T) {
	name := filepath.Join("..", "..", "docs", "policies.md")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/policies.md has no generated toolchain table (markers %q)", tableBegin)
	}
	want := doc[:i+len(tableBegin)] + renderTable() + doc[j:]
	if *update {
		if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Error("docs/policies.md's toolchain table is not Table's; run go test ./stdlib/toolchain -update")
	}
}
