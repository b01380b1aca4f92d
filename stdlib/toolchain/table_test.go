package toolchain

import (
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
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
	b.WriteString("\nThe commands that run or load each ecosystem's files (`toolchain.runners`; after an unproven\n" +
		"write of a file, these are asked), and, for every ecosystem, the task and hook runners: " + code(AnyRunners) + ".\n\n")
	b.WriteString("| ecosystem | runners |\n|---|---|\n")
	var ecos []string
	for _, f := range Table {
		if !slices.Contains(ecos, f.Ecosystem) {
			ecos = append(ecos, f.Ecosystem)
		}
	}
	for _, e := range ecos {
		b.WriteString("| " + e + " | " + code(Runners[e]) + " |\n")
	}
	return b.String()
}

func code(ws []string) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "`" + w + "`"
	}
	return strings.Join(out, ", ")
}

// TestRunners: every ecosystem of the table has runners, and a file's
// runners are its ecosystem's and the task and hook runners.
func TestRunners(t *testing.T) {
	for _, f := range Table {
		if len(Runners[f.Ecosystem]) == 0 {
			t.Errorf("ecosystem %s (family %s) has no runners", f.Ecosystem, f.Name)
		}
	}
	for e := range Runners {
		if !slices.ContainsFunc(Table, func(f Family) bool { return f.Ecosystem == e }) {
			t.Errorf("runners of %s, an ecosystem no family has", e)
		}
	}
	for _, tc := range []struct {
		path      string
		runs, not []string
	}{
		{"tests/conftest.py", []string{"pytest", "python -m pytest", "make", "git commit", "tox"}, []string{"cargo", "npm", "go generate"}},
		{"Makefile", []string{"make", "just", "pre-commit"}, []string{"cargo", "npm", "pytest"}},
		{"build.rs", []string{"cargo", "make"}, []string{"npm", "pytest"}},
		{"package.json", []string{"npm", "yarn", "pnpm", "make"}, []string{"cargo", "pytest"}},
		{".git/hooks/pre-commit", []string{"git", "git commit"}, []string{"npm"}},
		{".github/workflows/ci.yml", []string{"git push", "act"}, []string{"npm", "cargo"}},
		{"src/main.rs", nil, []string{"cargo", "make"}},
	} {
		got := RunnersOf(tc.path)
		for _, r := range tc.runs {
			if !slices.Contains(got, r) {
				t.Errorf("RunnersOf(%q) lacks %q: %v", tc.path, r, got)
			}
		}
		for _, r := range tc.not {
			if slices.Contains(got, r) {
				t.Errorf("RunnersOf(%q) has %q: %v", tc.path, r, got)
			}
		}
	}
}

// TestRunnerWords: every runner is either one word, compared with a
// command's program, or words separated by single spaces; one with a "/"
// (./gradlew) has its program name in the same list. workspace-executables
// passes a file's runners whole to shell.hasSubcommand and shell.hasPrefix,
// which compare a one-word runner with the program, or with the path when
// it has a "/": the program name in the list makes that the same decision.
func TestRunnerWords(t *testing.T) {
	lists := map[string][]string{"any": AnyRunners}
	for e, l := range Runners {
		lists[e] = append(slices.Clone(l), AnyRunners...)
	}
	for e, l := range lists {
		for _, r := range l {
			if r == "" || strings.Join(strings.Fields(r), " ") != r {
				t.Errorf("runner %q of %s: not words separated by single spaces", r, e)
			}
			if !strings.Contains(r, " ") && strings.Contains(r, "/") && !slices.Contains(l, path.Base(r)) {
				t.Errorf("runner %q of %s: %q is not in the same list", r, e, path.Base(r))
			}
		}
	}
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
