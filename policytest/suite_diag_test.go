package policytest_test

import (
	"errors"
	"testing"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/policytest"
)

// TestParseSuiteDiagnostics: a malformed suite's problems are
// policy.Diagnostics at their line and column, with the codes a policy
// file's problems get.
func TestParseSuiteDiagnostics(t *testing.T) {
	for _, tt := range []struct {
		name, suite string
		code        policy.Code
		line, col   int
	}{
		{"misspelt expect key", "cases:\n  - name: x\n    steps:\n      - before: {tool: Bash}\n        expect: {verdit: block}\n",
			policy.CodeUnknownField, 5, 18},
		{"misspelt top-level key", "name: s\ncasess: []\n", policy.CodeUnknownField, 2, 1},
		{"wrong type", "cases:\n  - name: x\n    steps:\n      - advance: 30s\n        repeat: many\n", policy.CodeWrongType, 5, 17},
		{"bad verdict", "cases:\n  - name: x\n    steps:\n      - before: {tool: Bash}\n        expect: {verdict: blok}\n",
			policy.CodeInvalidVerdict, 5, 27},
		{"yaml syntax", "cases: [\n", policy.CodeYAMLSyntax, 2, 1},
		{"case without a name", "cases:\n  - steps: [turn: true]\n", policy.CodeMissingField, 2, 5},
		{"after without result", "cases:\n  - name: x\n    steps:\n      - turn: true\n      - after: {tool: Bash}\n",
			policy.CodeMissingField, 5, 9},
		{"bad advance", "cases:\n  - name: x\n    steps:\n      - advance: soon\n", policy.CodeInvalidValue, 4, 18},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policytest.ParseSuite("s_test.yaml", []byte(tt.suite))
			var ds policy.Diagnostics
			if !errors.As(err, &ds) || len(ds) == 0 {
				t.Fatalf("ParseSuite() error = %v, want policy.Diagnostics", err)
			}
			want := policy.Pos{File: "s_test.yaml", Line: tt.line, Col: tt.col}
			if ds[0].Code != tt.code || ds[0].Pos != want {
				t.Errorf("ParseSuite() = %v, want %s at %s", ds, tt.code, want)
			}
		})
	}
}
