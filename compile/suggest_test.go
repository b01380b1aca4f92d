package compile

import (
	"errors"
	"testing"

	"github.com/celguard/celguard/policy"
)

// TestMessagesSayWhy: a bad regex literal keeps regexp's reason, and a
// misspelt function gets the closest declared one, each reported once at
// its position.
func TestMessagesSayWhy(t *testing.T) {
	tests := []struct {
		expr string
		code policy.Code
		col  int // in the file: the expression starts at column 17
		msg  string
	}{
		{`tool.matches("a(")`, policy.CodeInvalidLiteral, 30, "rule r condition: invalid matches argument: error parsing regexp: missing closing ): `a(`"},
		{`shell.comands(tool).size() > 0`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'shell.comands'; did you mean 'shell.commands'?"},
		{`glob.mtch(tool, "a")`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'glob.mtch'; did you mean 'glob.match'?"},
		{`shell.nope(tool)`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'shell.nope'"},
		{`sizee(tool) > 1`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'sizee'; did you mean 'size'?"},
		{`tool.startsWit("a")`, policy.CodeCELType, 22, "rule r condition: undeclared reference to 'startsWit'; did you mean 'startsWith'?"},
		{`frobnicate(tool)`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'frobnicate'"},
		{`tol == "x"`, policy.CodeCELType, 17, "rule r condition: undeclared reference to 'tol'"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			src := policy.Source{Name: "p.yaml", Data: []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: r\n    condition: '" +
				tt.expr + "'\n    verdict: block\n    reason: x\n")}
			_, err := Compile([]policy.Source{src})
			var ds policy.Diagnostics
			if !errors.As(err, &ds) || len(ds) != 1 {
				t.Fatalf("Compile() = %v, want one diagnostic", err)
			}
			want := policy.Diagnostic{Code: tt.code, Severity: policy.SeverityError, Pos: policy.Pos{File: "p.yaml", Line: 6, Col: tt.col}, Message: tt.msg}
			if got := ds[0]; got.Code != want.Code || got.Pos != want.Pos || got.Message != want.Message {
				t.Errorf("Compile() = %v\nwant             %v", got, want)
			}
		})
	}
}
