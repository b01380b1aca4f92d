package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
)

func diag(code policy.Code, sev policy.Severity, file string, line, col int, msg string) policy.Diagnostic {
	return policy.Diagnostic{Code: code, Severity: sev, Pos: policy.Pos{File: file, Line: line, Col: col}, Message: msg}
}

func TestDiagnosticsSort(t *testing.T) {
	ds := policy.Diagnostics{
		diag(policy.CodeCELType, policy.SeverityError, "b.yaml", 1, 1, "b"),
		diag(policy.CodeUnknownField, policy.SeverityError, "a.yaml", 10, 2, "x"),
		diag(policy.CodeUnknownField, policy.SeverityError, "a.yaml", 2, 30, "x"),
		diag(policy.CodeCELType, policy.SeverityError, "a.yaml", 2, 5, "z"),
		diag(policy.CodeCELType, policy.SeverityError, "a.yaml", 2, 5, "a"),
		diag(policy.CodeCELSyntax, policy.SeverityError, "a.yaml", 2, 5, "m"),
	}
	ds.Sort()
	var got []string
	for _, d := range ds {
		got = append(got, d.Error())
	}
	want := []string{
		"a.yaml:2:5: cel_syntax: m",
		"a.yaml:2:5: cel_type: a",
		"a.yaml:2:5: cel_type: z",
		"a.yaml:2:30: unknown_field: x",
		"a.yaml:10:2: unknown_field: x",
		"b.yaml:1:1: cel_type: b",
	}
	assert.Equal(t, want, got, "by file, line (numerically), column, code, message")
}

func TestDiagnosticsErr(t *testing.T) {
	var none policy.Diagnostics
	assert.NoError(t, none.Err(), "an empty list is a nil error, not a typed nil")
	assert.False(t, none.HasErrors())
	assert.Empty(t, none.Errors())

	warnings := policy.Diagnostics{diag("w", policy.SeverityWarning, "a.yaml", 1, 1, "careful"), diag("i", policy.SeverityInfo, "a.yaml", 1, 1, "fyi")}
	assert.NoError(t, warnings.Err(), "warnings alone are not an error")
	assert.False(t, warnings.HasErrors())
	assert.Empty(t, warnings.Errors())

	ds := policy.Diagnostics{
		diag(policy.CodeCELType, policy.SeverityError, "b.yaml", 3, 4, "bad"),
		diag("w", policy.SeverityWarning, "a.yaml", 1, 1, "careful"),
		diag(policy.CodeUnknownField, policy.SeverityError, "a.yaml", 2, 1, "unknown"),
	}
	assert.True(t, ds.HasErrors())
	assert.Len(t, ds.Errors(), 2)
	err := ds.Err()
	require.Error(t, err)
	var got policy.Diagnostics
	require.True(t, errors.As(err, &got), "errors.As: got %T, want policy.Diagnostics", err)
	assert.Equal(t, policy.Pos{File: "a.yaml", Line: 1, Col: 1}, got[0].Pos, "Err sorts")
	assert.Equal(t, "3 problems:\na.yaml:1:1: w: careful\na.yaml:2:1: unknown_field: unknown\nb.yaml:3:4: cel_type: bad", err.Error())
	assert.Equal(t, "b.yaml:3:4: cel_type: bad", ds[2].Error())
	assert.Equal(t, "a.yaml:2:1: unknown_field: unknown", ds[1:2].Error(), "one problem has no count line")
}

func TestSeverityRankAndPos(t *testing.T) {
	assert.Equal(t, 3, policy.SeverityError.Rank())
	assert.Equal(t, 2, policy.SeverityWarning.Rank())
	assert.Equal(t, 1, policy.SeverityInfo.Rank())
	assert.Equal(t, 0, policy.Severity("fatal").Rank())

	assert.True(t, policy.Pos{}.IsZero())
	assert.False(t, policy.Pos{File: "a", Line: 1}.IsZero())
	assert.Equal(t, "a.yaml:3:0", policy.Pos{File: "a.yaml", Line: 3}.String())
	assert.Equal(t, "a.yaml", policy.Pos{File: "a.yaml"}.String(), "a file without a line")
	assert.Equal(t, "celguard", policy.Pos{}.String(), "no position at all")
	assert.Negative(t, policy.Pos{File: "a", Line: 9, Col: 9}.Compare(policy.Pos{File: "b", Line: 1, Col: 1}))
	assert.Negative(t, policy.Pos{File: "a", Line: 2, Col: 9}.Compare(policy.Pos{File: "a", Line: 10, Col: 1}))
	assert.Zero(t, policy.Pos{File: "a", Line: 2, Col: 9}.Compare(policy.Pos{File: "a", Line: 2, Col: 9}))
}

func TestWriteText(t *testing.T) {
	srcs := []policy.Source{{Name: "p.yaml", Data: []byte("rules:\r\n\t- id: é x\r\n")}}
	ds := policy.Diagnostics{
		diag(policy.CodeInvalidID, policy.SeverityError, "p.yaml", 2, 10, "bad id"),
		diag(policy.CodeNoPolicies, policy.SeverityError, "", 0, 0, "no policy files were given"),
		diag(policy.CodeYAMLSyntax, policy.SeverityError, "p.yaml", 1, 0, "no column"),
		diag(policy.Code("x"), policy.SeverityWarning, "other.yaml", 1, 1, "unknown file"),
	}
	var b strings.Builder
	require.NoError(t, policy.WriteText(&b, ds, policy.LinesOf(srcs)))
	want := "p.yaml:2:10: error: invalid_id: bad id\n" +
		"     - id: é x\n" + // tab shown as a space, CRLF stripped
		"             ^\n" +
		"celguard: error: no_policies: no policy files were given\n" +
		"p.yaml:1:0: error: yaml_syntax: no column\n" +
		"    rules:\n" +
		"other.yaml:1:1: warning: x: unknown file\n"
	assert.Equal(t, want, b.String())

	b.Reset()
	require.NoError(t, policy.WriteText(&b, ds[:1], nil))
	assert.Equal(t, "p.yaml:2:10: error: invalid_id: bad id\n", b.String(), "no source lines: headers only")

	_, ok := policy.LinesOf(srcs)("p.yaml", 3)
	assert.True(t, ok, "the empty line after the last newline")
	_, ok = policy.LinesOf(srcs)("p.yaml", 4)
	assert.False(t, ok)
	_, ok = policy.LinesOf(srcs)("p.yaml", 0)
	assert.False(t, ok)
}
