package policy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestEveryCodeIsDocumented reads the Code constants from diag.go and checks
// that docs/diagnostics.md has a section for each, and that no two constants
// share a value.
func TestEveryCodeIsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "diag.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/diagnostics.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
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
			for i, n := range vs.Names {
				v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if other, dup := seen[v]; dup {
					t.Errorf("codes %s and %s share the value %q", other, n.Name, v)
				}
				seen[v] = n.Name
				if !strings.Contains(string(doc), "### "+v+"\n") {
					t.Errorf("code %q (%s) has no section in docs/diagnostics.md", v, n.Name)
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d codes in diag.go; the parser of this test is broken", len(seen))
	}
}
