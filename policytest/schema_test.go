package policytest_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/celguard/celguard/policytest"
)

func suiteSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policytest.SuiteSchemaJSON))
	if err != nil {
		t.Fatalf("SuiteSchemaJSON is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://celguard.dev/schema/v1/suite.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("SuiteSchemaJSON does not compile: %v", err)
	}
	return sch
}

// validateYAML validates a YAML document against the schema, through JSON
// as an editor's YAML language server sees it.
func validateYAML(sch *jsonschema.Schema, data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// TestSuiteSchemaAcceptsEverySuite validates every *_test.yaml of the
// repository (conformance cases, built-in policies, the cookbook, the init
// scaffold) against SuiteSchemaJSON, and checks that ParseSuite accepts each
// too.
func TestSuiteSchemaAcceptsEverySuite(t *testing.T) {
	sch := suiteSchema(t)
	var files []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), "_test.yaml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var conformance, builtin int
	for _, f := range files {
		switch {
		case strings.HasPrefix(filepath.ToSlash(f), "../conformance/cases/"):
			conformance++
		case strings.HasPrefix(filepath.ToSlash(f), "../policies/"):
			builtin++
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateYAML(sch, data); err != nil {
			t.Errorf("%s: the schema rejects it: %v", f, err)
		}
		if _, err := policytest.ParseSuite(f, data); err != nil {
			t.Errorf("%s: ParseSuite rejects it: %v", f, err)
		}
	}
	if conformance < 20 || builtin < 1 {
		t.Fatalf("found %d conformance and %d built-in suites; the walk is broken", conformance, builtin)
	}
}

// TestSuiteSchemaAgreesWithParseSuite pins both sides of the contract on
// suites that differ from a valid one in one way: the schema and ParseSuite
// accept the same ones and reject the same ones. (The schema is stricter
// than ParseSuite only on values ParseSuite accepts but that can never
// match, such as an unknown approval outcome, and on scalars of the wrong
// YAML type that yaml.v3 would turn into strings; neither is listed here.)
func TestSuiteSchemaAgreesWithParseSuite(t *testing.T) {
	sch := suiteSchema(t)
	const before = "    steps:\n      - before: {tool: Bash, args: {command: ls}}\n        expect: {verdict: allow}\n"
	tests := []struct {
		name, suite string
		valid       bool
	}{
		{"minimal", "cases:\n  - name: a\n" + before, true},
		{"inline policies", "policies:\n  p.yaml: |\n    kind: Policy\ncases:\n  - name: a\n" + before, true},
		{"policy paths", "policies: [a.yaml, ../b.yaml]\ncases:\n  - name: a\n" + before, true},
		{"compile test", "cases:\n  - name: a\n    want_errors: [cel_type]\n", true},
		{"every step kind", "cases:\n  - name: a\n    approver: [approve, deny]\n    steps:\n      - turn: true\n      - advance: 1m30s\n" +
			"      - after: {tool: Bash}\n        result: {is_error: true, content: boom, exit_code: 1}\n        repeat: 3\n        expect: {verdict: block, rule: none}\n", true},
		{"inline policies with layers", "policies:\n  p.yaml: {layer: user, text: 'kind: Policy'}\n  q.yaml: {layer: project, untrusted: true, text: x}\n" +
			"cases:\n  - name: a\n    want_warnings: [untrusted_ignored]\n" + before, true},
		{"untrusted expectation", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash}\n        expect: {verdict: block, untrusted: true}\n", true},
		{"warnings only", "cases:\n  - name: a\n    want_warnings: [mandatory_kept]\n", true},
		{"inline policy with an unknown layer", "policies:\n  p.yaml: {layer: team, text: x}\ncases:\n  - name: a\n" + before, false},
		{"inline policy with an unknown key", "policies:\n  p.yaml: {layer: user, txt: x}\ncases:\n  - name: a\n" + before, false},
		{"unknown top-level key", "colour: red\ncases:\n  - name: a\n" + before, false},
		{"unknown case key", "cases:\n  - name: a\n    skip: true\n" + before, false},
		{"unknown expect key", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash}\n        expect: {verdcit: allow}\n", false},
		{"unknown call key", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash, argz: {}}\n", false},
		{"case without a name", "cases:\n  - steps:\n      - turn: true\n", false},
		{"case without steps", "cases:\n  - name: a\n", false},
		{"step with two events", "cases:\n  - name: a\n    steps:\n      - turn: true\n        before: {tool: Bash}\n", false},
		{"step with no event", "cases:\n  - name: a\n    steps:\n      - repeat: 2\n", false},
		{"turn false is no event", "cases:\n  - name: a\n    steps:\n      - turn: false\n", false},
		{"after without result", "cases:\n  - name: a\n    steps:\n      - after: {tool: Bash}\n", false},
		{"result without after", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash}\n        result: {is_error: false}\n", false},
		{"expect on a turn", "cases:\n  - name: a\n    steps:\n      - turn: true\n        expect: {verdict: allow}\n", false},
		{"bad advance", "cases:\n  - name: a\n    steps:\n      - advance: soon\n", false},
		{"negative repeat", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash}\n        repeat: -1\n", false},
		{"bad verdict", "cases:\n  - name: a\n    steps:\n      - before: {tool: Bash}\n        expect: {verdict: deny}\n", false},
		{"bad approver answer", "cases:\n  - name: a\n    approver: [maybe]\n" + before, false},
		{"policies neither list nor map", "policies: p.yaml\ncases:\n  - name: a\n" + before, false},
		{"result is_error not a bool", "cases:\n  - name: a\n    steps:\n      - after: {tool: Bash}\n        result: {is_error: sometimes}\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serr := validateYAML(sch, []byte(tt.suite))
			_, perr := policytest.ParseSuite("s_test.yaml", []byte(tt.suite))
			if (serr == nil) != tt.valid {
				t.Errorf("schema: got error %v, want valid=%v", serr, tt.valid)
			}
			if (perr == nil) != tt.valid {
				t.Errorf("ParseSuite: got error %v, want valid=%v", perr, tt.valid)
			}
		})
	}
}
