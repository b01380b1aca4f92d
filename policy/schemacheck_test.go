package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
)

// The schema checks replace the JSON Schema library in the binary (its
// package init compiles five drafts' metaschemas); the library stays their
// oracle here: both must report the same leaves, kind, place and message,
// for every schema the binary checks documents against.

var checkedSchemas = map[string][]byte{
	"policy":      SchemaJSON,
	"toolclasses": ToolClassesSchemaJSON,
	"overrides":   OverridesSchemaJSON,
}

// suiteSchema is policytest's schema (a package that imports this one), read
// from its file.
func suiteSchema(t testing.TB) []byte {
	src, err := os.ReadFile("../policytest/schema/suite.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func libraryLeaves(t testing.TB, src []byte, inst any) []string {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(src)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://celguard.dev/schema/v1/oracle.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	var verr *jsonschema.ValidationError
	if !errors.As(sch.Validate(inst), &verr) {
		return nil
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		if len(causes) == 0 {
			frag := e.SchemaURL[strings.Index(e.SchemaURL, "#"):]
			out = append(out, fmt.Sprintf("%s %s %s", jsonPtr(e.InstanceLocation), frag, e.Error()))
			return
		}
		switch e.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			var fit []*jsonschema.ValidationError
			for _, c := range causes {
				if _, wrongType := c.ErrorKind.(*kind.Type); !wrongType || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
					fit = append(fit, c)
				}
			}
			if len(fit) > 0 {
				causes = fit
			}
		}
		for _, c := range causes {
			walk(c)
		}
	}
	walk(verr)
	slices.Sort(out)
	return out
}

func checkLeaves(t testing.TB, src []byte, inst any) []string {
	t.Helper()
	sch, err := compileCheckSchema(src)
	if err != nil {
		t.Fatal(err)
	}
	e := sch.Validate(inst)
	if e == nil {
		return nil
	}
	var out []string
	for _, l := range leaves(e) {
		out = append(out, fmt.Sprintf("%s %s %s", jsonPtr(l.InstanceLocation), l.SchemaURL, l.Error()))
	}
	slices.Sort(out)
	return out
}

// sameAsLibrary compares one document's leaves. Unknown-property leaves
// list their properties in the library's map order, so those compare by
// set.
func sameAsLibrary(t testing.TB, name string, src []byte, data []byte) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return
	}
	budget := 1 << 16
	inst, err := toJSONValue(doc.Content[0], 0, &budget)
	if err != nil {
		return
	}
	got, want := normalise(checkLeaves(t, src, inst)), normalise(libraryLeaves(t, src, inst))
	if !slices.Equal(got, want) {
		t.Errorf("%s: schema checks and the library differ\nchecks:  %q\nlibrary: %q", name, got, want)
	}
}

func normalise(l []string) []string {
	out := make([]string, 0, len(l))
	for _, s := range l {
		if i := strings.Index(s, "additional properties "); i >= 0 {
			props := strings.Split(strings.TrimSuffix(s[i+len("additional properties "):], " not allowed"), ", ")
			slices.Sort(props)
			s = s[:i] + "additional properties " + strings.Join(props, ", ") + " not allowed"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestSchemaChecksAgreeWithLibrary(t *testing.T) {
	var files []string
	schemas := map[string][]byte{"suite": suiteSchema(t)}
	for k, v := range checkedSchemas {
		schemas[k] = v
	}
	for _, glob := range []string{"testdata/*.yaml", "testdata/*/*.yaml", "../policies/*.yaml", "../policies/testdata/corpus/*.yaml", "../policies/testdata/*/*.yaml", "../bundle/testdata/*/*.yaml"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d files to compare on", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, src := range schemas {
			sameAsLibrary(t, f+" as "+name, src, data)
		}
	}
	// Hand-made documents reaching every keyword's failure.
	for i, doc := range []string{
		`{apiVersion: 1, kind: Policy}`,
		`{apiVersion: celguard.dev/v1, kind: Nope, metadata: {name: ""}, spec: {rules: []}}`,
		`{apiVersion: celguard.dev/v1, kind: Policy, metadata: {name: x, extra: 1, other: 2}, spec: {rules: [{id: r, verdict: nope, when: 3, priority: -5}]}}`,
		`{apiVersion: celguard.dev/v1, kind: Policy, metadata: {name: "bad name!"}, spec: {rules: [{id: r, tools: [1, true], verdict: block, condition: ""}]}}`,
		`[1, 2]`,
		`{apiVersion: celguard.dev/v1, kind: ToolClasses, metadata: {name: x}, spec: {classes: {a: [1]}}}`,
		`{apiVersion: celguard.dev/v1, kind: Overrides, metadata: {name: x}, spec: {exclude: {rules: [{}]}}}`,
		`{cases: [{name: x, steps: [{tool: Bash, expect: {verdict: nope}}, {}]}], extra: 1}`,
		`{cases: [{name: 1, steps: {}}]}`,
		"{apiVersion: celguard.dev/v1, kind: Policy, metadata: {name: x}, spec: {rules: [{id: r, verdict: block, labels: {add: [" + strings.Repeat("l", 300) + "]}}]}}",
	} {
		for name, src := range schemas {
			sameAsLibrary(t, fmt.Sprintf("doc %d as %s", i, name), src, []byte(doc))
		}
	}
}

func FuzzSchemaChecksAgreeWithLibrary(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../policies/*.yaml", "../bundle/testdata/*/*.yaml"} {
		m, _ := filepath.Glob(glob)
		for _, p := range m {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	suite := suiteSchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		sameAsLibrary(t, "suite", suite, data)
		for name, src := range checkedSchemas {
			sameAsLibrary(t, name, src, data)
		}
	})
}

func TestSchemaChecksRejectUnknownKeywords(t *testing.T) {
	for _, src := range []string{
		`{"type": "object", "patternProperties": {"^x": {"type": "string"}}}`,
		`{"$ref": "https://example.com/other.json"}`,
		`{"$ref": "#/$defs/missing"}`,
		`{"minimum": "one"}`,
		`{"pattern": "("}`,
		`[]`,
	} {
		if _, err := compileCheckSchema([]byte(src)); err == nil {
			t.Errorf("%s compiled; want an error (a keyword the checks do not implement must not be ignored)", src)
		}
	}
}
