package policy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type yamlMessageCase struct {
	adapter string // what in yamlmessages.go the case depends on
	src     string
	line    int // the line of the problem
	msg     string
}

// TestYAMLMessages pins the adapters of yamlmessages.go to the errors the
// yaml.v3 in go.mod really returns. A failure after an upgrade names the
// adapter to update.
func TestYAMLMessages(t *testing.T) {
	tests := []yamlMessageCase{
		// Parser problems: yaml.v3 says the line before.
		{"yamlParserProblems", "# c\n%YAML 1.1\n[a]\n", 3, "did not find expected <document start>"},
		{"yamlParserProblems", "a: 1\nb:\n  c: [,]\n", 3, "did not find expected node content"},
		{"yamlParserProblems", "a:\n  b: 1\n c: 2\n", 3, "did not find expected key"},
		{"yamlParserProblems", "- a\n- b\nc: d\n", 3, "did not find expected '-' indicator"},
		{"yamlParserProblems", "a: 1\nb: [1, 2\nc: 3\n", 2, "did not find expected ',' or ']'"},
		{"yamlParserProblems", "a: 1\nb: {a: b\nc: 3\n", 2, "did not find expected ',' or '}'"},
		{"yamlParserProblems", "a: 1\nb: !x!y c\n", 2, "found undefined tag handle"},
		{"yamlParserProblems", "# c\n%YAML 1.1\n%YAML 1.1\n---\na: 1\n", 3, "found duplicate %YAML directive"},
		{"yamlParserProblems", "# c\n%YAML 2.0\n---\na: 1\n", 2, "found incompatible YAML document"},
		{"yamlParserProblems", "# c\n%TAG ! a\n%TAG ! b\n---\na: 1\n", 3, "found duplicate %TAG directive"},
		// Scanner problems: yaml.v3 says the line itself.
		{"yamlLineRe", "a:\n\tb: 1\n", 2, "found character that cannot start any token"},
		{"yamlLineRe", "a: 1\nb: 2\n  c: 3\n", 3, "mapping values are not allowed in this context"},
		// No line: the first.
		{"yamlLineRe", "a: 1\nb: *x\n", 1, "unknown anchor 'x' referenced"},
		// Past the end of a file without a final line break.
		{"yamlError's last line", "{", 1, "did not find expected node content"},
		{"yamlError's last line", "a: [", 1, "did not find expected node content"},
		{"yamlError's last line", "a: [\n", 2, "did not find expected node content"},
	}
	for _, tc := range tests {
		var doc yaml.Node
		err := decodeYAML([]byte(tc.src), &doc)
		require.Error(t, err, "%q: yaml.v3 accepts it; the case needs a malformed file", tc.src)
		d := yamlError("p.yaml", err, len(splitLines([]byte(tc.src))))
		if d.Pos.Line != tc.line || d.Message != tc.msg {
			t.Errorf("%s (policy/yamlmessages.go) no longer fits the yaml.v3 in go.mod: for %q it returns %q, which yamlError makes line %d %q, want line %d %q; update the adapter",
				tc.adapter, tc.src, err, d.Pos.Line, d.Message, tc.line, tc.msg)
		}
		assert.Equal(t, CodeYAMLSyntax, d.Code)
		assert.Equal(t, Pos{File: "p.yaml", Line: d.Pos.Line, Col: 1}, d.Pos)
	}
	// Every parser problem listed is one yaml.v3 still reports.
	for _, p := range yamlParserProblems {
		produced := slices.ContainsFunc(tests, func(tc yamlMessageCase) bool { return tc.adapter == "yamlParserProblems" && tc.msg == p })
		assert.True(t, produced, "yamlParserProblems lists %q, which no case here produces", p)
	}
}

// TestDecodeYAMLNoDocument: a file without a document decodes to an empty
// node, not an error (yaml.v3 says io.EOF).
func TestDecodeYAMLNoDocument(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "\n\n"} {
		var doc yaml.Node
		require.NoError(t, decodeYAML([]byte(src), &doc), "%q", src)
		assert.Empty(t, doc.Content, "%q", src)
	}
}
