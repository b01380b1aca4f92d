package celguard_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEmbeddingDocMatchesExample keeps docs/embedding.md's agent loop and
// Example_agentLoop the same code, and the loop under 40 lines.
func TestEmbeddingDocMatchesExample(t *testing.T) {
	doc, err := os.ReadFile("docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- embedding-loop -->\n```go\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/embedding.md has no ```go block after <!-- embedding-loop -->")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	e := regexp.MustCompile(`(?s)// embedding.md begin\n(.*?)\t// embedding.md end`).FindSubmatch(src)
	if e == nil {
		t.Fatal("example_test.go has no // embedding.md begin ... end region")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(string(e[1]), "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if got := string(m[1]); got != want.String() {
		t.Errorf("docs/embedding.md's loop differs from Example_agentLoop's:\n--- doc\n%s--- example\n%s", got, want.String())
	}
	if n := strings.Count(want.String(), "\n"); n >= 40 {
		t.Errorf("the agent loop has %d lines; docs/embedding.md promises under 40", n)
	}
}

// TestReadmeSnippetUsesLoad keeps README.md's Go snippet on the path that
// decides as the command line does (cmd/celguard's TestGoAPIDecidesAsTheCLI).
func TestReadmeSnippetUsesLoad(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Embedding in a Go agent.*?```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go snippet under \"Embedding in a Go agent\"")
	}
	if !strings.Contains(string(m[1]), "celguard.Load(") || strings.Contains(string(m[1]), "compile.Compile") {
		t.Errorf("README.md's Go snippet must build its engine with celguard.Load, not compile.Compile*:\n%s", m[1])
	}
}
