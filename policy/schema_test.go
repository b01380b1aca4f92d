package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"
)

func TestSchemaCompiles(t *testing.T) {
	require.True(t, json.Valid(SchemaJSON), "the embedded schema is not valid JSON")
	require.True(t, json.Valid(ToolClassesSchemaJSON), "the embedded tool-class schema is not valid JSON")
	schemas, err := compiledSchemas()
	require.NoError(t, err)
	require.NotNil(t, schemas[KindPolicy])
	require.NotNil(t, schemas[KindToolClasses])
}

// rootOf decodes a policy file into its root node.
func rootOf(t *testing.T, src []byte) (*yaml.Node, bool) {
	t.Helper()
	var doc yaml.Node
	if err := decodeYAML(src, &doc); err != nil || doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, false
	}
	return doc.Content[0], true
}

// schemaErrors validates a document against the JSON Schema alone.
func schemaErrors(t *testing.T, file string, root *yaml.Node) Diagnostics {
	t.Helper()
	schemas, err := compiledSchemas()
	require.NoError(t, err)
	sch := schemas[KindPolicy]
	budget := MaxFileSize
	inst, err := toJSONValue(root, 0, &budget)
	require.NoError(t, err)
	if sch.Validate(inst) == nil {
		return nil
	}
	ds := validateSchema(file, KindPolicy, root, nil)
	require.NotEmpty(t, ds, "the schema rejects the document, but no diagnostic is mapped")
	return ds
}

// decoderErrors runs the decoder alone, without the schema.
func decoderErrors(file string, src []byte, root *yaml.Node) Diagnostics {
	d := &decoder{file: file, lines: splitLines(src)}
	d.policy(root)
	return d.ds
}

func TestSchemaAcceptsTheExample(t *testing.T) {
	src, err := os.ReadFile("testdata/example.yaml")
	require.NoError(t, err)
	root, ok := rootOf(t, src)
	require.True(t, ok)
	assert.Empty(t, schemaErrors(t, "example.yaml", root), "the schema rejects the example policy of the specification")
	assert.Empty(t, decoderErrors("example.yaml", src, root))
}

// structural are the codes of the problems the JSON Schema can express.
var structural = []Code{CodeUnknownField, CodeWrongType, CodeMissingField, CodeInvalidValue, CodeInvalidVerdict,
	CodeInvalidPhase, CodeInvalidID, CodeInvalidDuration}

// hasStructural reports whether the decoder found a problem the schema can
// express. An empty CEL expression is a string to the schema.
func hasStructural(ds Diagnostics) bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool {
		return slices.Contains(structural, d.Code) && !strings.HasSuffix(d.Message, "is an empty CEL expression")
	})
}

// TestSchemaAgreesWithTheDecoder checks, on every golden diagnostics fixture,
// that the schema and the decoder agree on whether the file has a structural
// problem, and that every problem the schema finds is also reported by the
// decoder at the same place (so the merge in Parse adds nothing).
func TestSchemaAgreesWithTheDecoder(t *testing.T) {
	paths, err := filepath.Glob("../compile/testdata/diagnostics/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	n := 0
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		require.NoError(t, err)
		for _, f := range ar.Files {
			if f.Name == "want.diag" {
				continue
			}
			root, ok := rootOf(t, f.Data)
			if !ok {
				continue // not YAML: neither validator runs
			}
			n++
			name := strings.TrimSuffix(filepath.Base(p), ".txtar") + "/" + f.Name
			t.Run(name, func(t *testing.T) {
				dec := decoderErrors(f.Name, f.Data, root)
				sch := schemaErrors(t, f.Name, root)
				assert.Equal(t, hasStructural(dec), len(sch) > 0,
					"decoder: %v\nschema: %v\ngot decoder structural=%v, schema=%v, want them equal", dec, sch, hasStructural(dec), len(sch) > 0)
				assert.Empty(t, validateSchema(f.Name, KindPolicy, root, dec), "schema problems the decoder missed")
			})
		}
	}
	assert.Greater(t, n, 30)
}

// TestSchemaAndDecoderOnSnippets pins the two validators on small documents,
// including the places where they differ by design.
func TestSchemaAndDecoderOnSnippets(t *testing.T) {
	const head = "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\n"
	tests := []struct {
		name            string
		src             string
		decoder, schema bool
	}{
		{"valid", head + "rules: [{id: a, verdict: allow}]\n", false, false},
		{"integer id", head + "rules: [{id: 42, verdict: allow}]\n", false, false},
		{"unknown key", head + "rules: [{id: a, verdict: allow, x: 1}]\n", true, true},
		{"null rules", head + "rules:\n", true, true},
		{"priority out of range", head + "rules: [{id: a, verdict: allow, priority: 2147483648}]\n", true, true},
		{"bad window", head + "counters: [{name: c, increment_when: 'true', window: 5x}]\nrules: []\n", true, true},
		{"default verdict ask", head + "defaults: {verdict: ask}\nrules: []\n", true, true},
		{"keyword variable", head + "variables: [{name: in, expression: '1'}]\nrules: []\n", false, false},
		// Differences by design: the decoder reads scalars as their
		// spelling, the schema checks JSON types; a zero window matches the
		// schema's pattern. Parse reports the union.
		{"boolean id", head + "rules: [{id: true, verdict: allow}]\n", false, true},
		{"integer in unset", head + "rules: [{id: a, verdict: modify, modify: {unset: [1]}}]\n", false, true},
		{"zero window", head + "counters: [{name: c, increment_when: 'true', window: 0s}]\nrules: []\n", true, false},
		{"float priority", head + "rules: [{id: a, verdict: allow, priority: 1.0}]\n", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, ok := rootOf(t, []byte(tt.src))
			require.True(t, ok)
			dec := decoderErrors("p.yaml", []byte(tt.src), root)
			sch := schemaErrors(t, "p.yaml", root)
			assert.Equal(t, tt.decoder, hasStructural(dec), "decoder: got %v", dec)
			assert.Equal(t, tt.schema, len(sch) > 0, "schema: got %v", sch)
			_, all := Parse("p.yaml", []byte(tt.src))
			assert.Equal(t, tt.decoder || tt.schema, hasStructural(all), "Parse reports the union: got %v", all)
		})
	}
}
