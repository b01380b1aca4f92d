package output

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/celguard/celguard/policy"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden-* from the printers' output")

// goldenDiagnostics exercise every printer: each severity, related
// positions, an unknown column, a problem with no file, and text that needs
// escaping (%, newlines, commas and colons in a file name).
var goldenDiagnostics = policy.Diagnostics{
	{Code: policy.CodeNoPolicies, Severity: policy.SeverityError, Message: "no policy files were given"},
	{Code: policy.CodeDuplicateRuleID, Severity: policy.SeverityError, Pos: policy.Pos{File: "policies/a.yaml", Line: 5, Col: 9},
		Related: []policy.Pos{{File: "policies/b.yaml", Line: 7, Col: 9}}, Message: `rule id "x" is already defined at policies/b.yaml:7:9`},
	{Code: policy.CodeShadowedRule, Severity: policy.SeverityWarning, Pos: policy.Pos{File: "policies/b.yaml", Line: 12, Col: 9},
		Related: []policy.Pos{{File: "policies/a.yaml", Line: 5, Col: 9}, {File: "policies/b.yaml", Line: 9, Col: 9}},
		Message: `rule "y" can never fire: rules "x" and "z" come first`},
	{Code: policy.CodeCostOverBudget, Severity: policy.SeverityWarning, Pos: policy.Pos{File: "odd dir/a,b:c.yaml", Line: 3},
		Message: "100% over\nbudget\r"},
	{Code: policy.Code("future_code"), Severity: policy.SeverityInfo, Pos: policy.Pos{File: "policies/a.yaml", Line: 1, Col: 1},
		Message: "an info note"},
	// Suppressed by a # celguard:ignore comment: in JSON and SARIF only.
	{Code: policy.CodeMissingReason, Severity: policy.SeverityWarning, Pos: policy.Pos{File: "policies/b.yaml", Line: 13, Col: 5},
		Message:    `rule "y" decides block with neither reason nor message`,
		Suppressed: &policy.Suppression{Code: policy.CodeMissingReason, Reason: "the host explains", Pos: policy.Pos{File: "policies/b.yaml", Line: 11, Col: 3}}},
}

var goldenSources = []policy.Source{
	{Name: "policies/a.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: a\nrules:\n  - id: x\n")},
	{Name: "policies/b.yaml", Data: []byte("a\nb\nc\nd\ne\nf\n  - id: x\nh\n  - id: z\ni\nj\n  - id: y\n")},
	{Name: "odd dir/a,b:c.yaml", Data: []byte("a\nb\n\tcondition: x\n")},
}

func render(t *testing.T, format string, color bool) []byte {
	t.Helper()
	var b bytes.Buffer
	opts := DiagnosticOptions{Lines: policy.LinesOf(goldenSources), Color: color, Files: 3, ToolVersion: "v0.0.0-test"}
	if err := Diagnostics(&b, format, goldenDiagnostics, opts); err != nil {
		t.Fatalf("Diagnostics(%s) = %v", format, err)
	}
	return b.Bytes()
}

// TestDiagnosticsGolden compares every format with testdata/golden-*;
// go test -update rewrites them.
func TestDiagnosticsGolden(t *testing.T) {
	for _, tt := range []struct {
		format, file string
		color        bool
	}{
		{FormatText, "golden-text.txt", false},
		{FormatText, "golden-text-color.txt", true},
		{FormatJSON, "golden.json", false},
		{FormatSARIF, "golden.sarif", false},
		{FormatGitHub, "golden-github.txt", false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			got := render(t, tt.format, tt.color)
			path := filepath.Join("testdata", tt.file)
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Diagnostics(%s) wrote\n%s\nwant (%s)\n%s", tt.format, got, path, want)
			}
		})
	}
}

func TestTextWithoutColorIsWriteText(t *testing.T) {
	var want bytes.Buffer
	// The text format leaves suppressed diagnostics out.
	if err := policy.WriteText(&want, goldenDiagnostics.Unsuppressed(), policy.LinesOf(goldenSources)); err != nil {
		t.Fatal(err)
	}
	if got := render(t, FormatText, false); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("text format = %q, want policy.WriteText's %q", got, want.Bytes())
	}
	if got := render(t, FormatText, true); !bytes.Contains(got, []byte("\x1b[1;31merror")) {
		t.Errorf("coloured text has no red error: %q", got)
	}
}

func TestGitHubEscaping(t *testing.T) {
	got := string(render(t, FormatGitHub, false))
	for _, want := range []string{
		"::error title=no_policies::no policy files were given\n",
		"::warning file=odd dir/a%2Cb%3Ac.yaml,line=3,title=cost_over_budget::100%25 over%0Abudget%0D\n",
		"::notice file=policies/a.yaml,line=1,col=1,title=future_code::an info note\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("github output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "missing_reason") {
		t.Errorf("github output annotates a suppressed diagnostic:\n%s", got)
	}
	if n, want := strings.Count(got, "\n"), len(goldenDiagnostics.Unsuppressed()); n != want {
		t.Errorf("github output has %d lines for %d diagnostics: a message broke a line", n, want)
	}
}

func TestUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	if err := Diagnostics(&b, "xml", goldenDiagnostics, DiagnosticOptions{}); err == nil || b.Len() > 0 {
		t.Errorf("Diagnostics(xml) = %v, wrote %q; want an error and nothing written", err, b.String())
	}
	if ValidDiagnosticFormat("xml") || !ValidDiagnosticFormat(FormatSARIF) {
		t.Error("ValidDiagnosticFormat disagrees with DiagnosticFormats")
	}
}

func compileSchema(t *testing.T, path, url string, fix func(doc any)) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if fix != nil {
		fix(doc)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sch
}

func validateJSON(t *testing.T, sch *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return sch.Validate(inst)
}

// sarifGoldens are the SARIF documents the tests compare with: this
// package's golden file and the ones of the lint_formats CLI script.
func sarifGoldens(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join("testdata", "golden.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	out["testdata/golden.sarif"] = b
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", "script", "lint_formats.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range strings.Split(string(script), "\n-- ")[1:] {
		name, body, _ := strings.Cut(sec, " --\n")
		if strings.HasSuffix(name, ".sarif") {
			out["lint_formats.txtar:"+name] = []byte(body)
		}
	}
	if len(out) < 3 {
		t.Fatalf("found %d SARIF goldens, want the package's and the script's", len(out))
	}
	return out
}

// fixSARIFSchema corrects, in memory, the one defect of the official schema
// file that stops a draft 2020-12 validator from compiling it: in
// definitions.region, the "anyOf" that requires startLine, charOffset or
// byteOffset is written inside "properties" (as if it were a property named
// anyOf), where the metaschema wants a schema, not an array. Moving it up one
// level gives it the meaning the specification states (SARIF 2.1.0
// §3.30.2: a region has startLine, charOffset or byteOffset) and makes the
// validation stricter, not looser. The committed file stays byte-identical
// to its source.
func fixSARIFSchema(doc any) {
	defs, _ := doc.(map[string]any)["definitions"].(map[string]any)
	region, _ := defs["region"].(map[string]any)
	props, _ := region["properties"].(map[string]any)
	if anyOf, ok := props["anyOf"]; ok {
		delete(props, "anyOf")
		region["anyOf"] = anyOf
	}
}

// TestSARIFGoldenIsValid validates the SARIF goldens against the official
// SARIF 2.1.0 JSON Schema (testdata/sarif-schema-2.1.0.json; its source is
// in testdata/sarif-schema-2.1.0.SOURCE).
func TestSARIFGoldenIsValid(t *testing.T) {
	sch := compileSchema(t, filepath.Join("testdata", "sarif-schema-2.1.0.json"),
		"https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json", fixSARIFSchema)
	for name, doc := range sarifGoldens(t) {
		if err := validateJSON(t, sch, doc); err != nil {
			t.Errorf("%s is not valid SARIF 2.1.0: %v", name, err)
		}
	}
	// The schema is not vacuous: a result without a message, a level
	// outside SARIF's, and a region without a start are rejected.
	for _, bad := range []string{
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "a"}]}]}`,
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "level": "info"}]}]}`,
		`{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a"}, "region": {"startColumn": 2}}}]}]}]}`,
	} {
		if validateJSON(t, sch, []byte(bad)) == nil {
			t.Errorf("the SARIF schema accepts %s", bad)
		}
	}
}

// TestLintJSONMatchesItsSchema validates the json goldens against the
// documented schema, docs/lint-json.schema.json.
func TestLintJSONMatchesItsSchema(t *testing.T) {
	sch := compileSchema(t, filepath.Join("..", "..", "..", "..", "docs", "lint-json.schema.json"),
		"https://celguard.dev/schema/v1/lint.schema.json", nil)
	b, err := os.ReadFile(filepath.Join("testdata", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateJSON(t, sch, b); err != nil {
		t.Errorf("testdata/golden.json: %v", err)
	}
	if validateJSON(t, sch, []byte(`{"version": 1, "files": 0, "summary": {"errors": 0, "warnings": 0, "info": 0}, "diagnostics": [{"code": "x"}]}`)) == nil {
		t.Error("the lint JSON schema accepts a diagnostic without severity, pos and message")
	}
}

// TestCodeCatalogueIsComplete reads the Code constants of policy/diag.go:
// the SARIF rule catalogue lists each, once, in order.
func TestCodeCatalogueIsComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "..", "policy", "diag.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i := range vs.Names {
				v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				codes = append(codes, v)
			}
		}
	}
	if len(codes) < 30 {
		t.Fatalf("found only %d codes in policy/diag.go; the parser of this test is broken", len(codes))
	}
	var got []string
	for _, c := range codeCatalogue {
		got = append(got, string(c.code))
		if c.short == "" || !strings.HasSuffix(c.short, ".") {
			t.Errorf("%s: short description %q must be a sentence", c.code, c.short)
		}
		if c.level.Rank() == 0 {
			t.Errorf("%s: level %q is not a severity", c.code, c.level)
		}
	}
	if strings.Join(got, " ") != strings.Join(codes, " ") {
		t.Errorf("codeCatalogue lists\n%v\nwant policy/diag.go's\n%v", got, codes)
	}
}
