package policy_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/policy"
)

// ruleHeader is the policy around the condition of the expression tests: the
// condition key is on line 7, its value starts at column 16.
const ruleHeader = `apiVersion: celguard.dev/v1
kind: Policy
name: p
rules:
  - id: a
    verdict: block
    condition: `

// conditionOf parses a policy whose first rule's condition is cond (written
// after "condition: ") and returns the condition.
func conditionOf(t *testing.T, cond string) (policy.Expr, []byte) {
	t.Helper()
	src := []byte(ruleHeader + cond)
	p, ds := policy.Parse("p.yaml", src)
	require.Empty(t, ds, "Parse: got diagnostics %v, want none", ds)
	require.Len(t, p.Rules, 1)
	require.NotNil(t, p.Rules[0].Condition)
	return *p.Rules[0].Condition, src
}

// celLocation returns the cel-go location (1-based line, 0-based rune column)
// of the first occurrence of token in text.
func celLocation(t *testing.T, text, token string) (int, int) {
	t.Helper()
	i := strings.Index(text, token)
	require.GreaterOrEqual(t, i, 0, "token %q not in %q", token, text)
	line := 1 + strings.Count(text[:i], "\n")
	lineStart := strings.LastIndexByte(text[:i], '\n') + 1
	return line, utf8.RuneCountInString(text[lineStart:i])
}

// runeAt returns the rune of src at a 1-based line and column.
func runeAt(src []byte, p policy.Pos) (rune, bool) {
	lines := strings.Split(string(src), "\n")
	if p.Line < 1 || p.Line > len(lines) {
		return 0, false
	}
	rs := []rune(lines[p.Line-1])
	if p.Col < 1 || p.Col > len(rs) {
		return 0, false
	}
	return rs[p.Col-1], true
}

func TestExprPosAt(t *testing.T) {
	tests := []struct {
		name     string
		cond     string
		wantText string
		token    string
		want     policy.Pos // of token
	}{
		{
			name:     "plain",
			cond:     "tool == TARGET\n",
			wantText: "tool == TARGET",
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 7, Col: 24},
		},
		{
			name:     "plain multi-line",
			cond:     "tool == \"x\" &&\n      TARGET\n",
			wantText: `tool == "x" && TARGET`,
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 8, Col: 7},
		},
		{
			name:     "plain multi-line with trailing spaces",
			cond:     "tool == \"x\" &&   \n      TARGET\n",
			wantText: `tool == "x" && TARGET`,
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 8, Col: 7},
		},
		{
			name:     "single-quoted",
			cond:     "'tool == \"x\" && TARGET'\n",
			wantText: `tool == "x" && TARGET`,
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 7, Col: 32},
		},
		{
			name:     "single-quoted with '' escapes",
			cond:     "'tool == ''x'' && ''it''''s'' == TARGET'\n",
			wantText: `tool == 'x' && 'it''s' == TARGET`,
			token:    "TARGET",
			// 17 + offset 26 + 6 extra quote characters.
			want: policy.Pos{File: "p.yaml", Line: 7, Col: 49},
		},
		{
			name:     "double-quoted with escapes",
			cond:     `"a == \"C:\\\\tmp\\\\caf\u00e9\" && TARGET"` + "\n",
			wantText: `a == "C:\\tmp\\café" && TARGET`,
			token:    "TARGET",
			// "a == " 17-21, \" 22-23, C: 24-25, \\ 26-27, \\ 28-29, tmp 30-32,
			// \\ 33-34, \\ 35-36, caf 37-39, \u00e9 40-45, \" 46-47, " && " 48-51.
			want: policy.Pos{File: "p.yaml", Line: 7, Col: 52},
		},
		{
			name:     "double-quoted with \\x, \\U and \\t escapes",
			cond:     `"'\x41\U0001F600'\t== TARGET"` + "\n",
			wantText: "'A😀'\t== TARGET",
			token:    "TARGET",
			// ' 17, \x41 18-21, \U0001F600 22-31, ' 32, \t 33-34, "== " 35-37.
			want: policy.Pos{File: "p.yaml", Line: 7, Col: 38},
		},
		{
			name:     "double-quoted multi-line",
			cond:     "\"tool == \\\"x\\\" &&\n      TARGET\"\n",
			wantText: `tool == "x" && TARGET`,
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 8, Col: 7},
		},
		{
			name:     "double-quoted with an escaped line break",
			cond:     "\"tool == \\\"x\\\" && \\\n      TARGET\"\n",
			wantText: `tool == "x" && TARGET`,
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 8, Col: 7},
		},
		{
			name:     "literal block",
			cond:     "|\n      tool == \"x\" &&\n        TARGET\n",
			wantText: "tool == \"x\" &&\n  TARGET\n",
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 9, Col: 9},
		},
		{
			name:     "literal block, strip, with a blank line",
			cond:     "|-\n      tool == \"x\" &&\n\n      TARGET\n",
			wantText: "tool == \"x\" &&\n\nTARGET",
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 10, Col: 7},
		},
		{
			name:     "folded block",
			cond:     ">\n      tool == \"x\" &&\n      has(args.a) &&\n      TARGET\n",
			wantText: "tool == \"x\" && has(args.a) && TARGET\n",
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 10, Col: 7},
		},
		{
			name:     "folded block with a more-indented line",
			cond:     ">\n      tool == \"x\" &&\n        has(args.a) &&\n      TARGET\n",
			wantText: "tool == \"x\" &&\n  has(args.a) &&\nTARGET\n",
			token:    "TARGET",
			want:     policy.Pos{File: "p.yaml", Line: 10, Col: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, src := conditionOf(t, tt.cond)
			require.Equal(t, tt.wantText, e.Text)
			line, col := celLocation(t, e.Text, tt.token)
			got := e.PosAt(line, col)
			assert.Equal(t, tt.want, got, "PosAt(%d, %d): got %s, want %s", line, col, got, tt.want)
			r, ok := runeAt(src, got)
			assert.True(t, ok && r == []rune(tt.token)[0], "the source at %s is %q, want %q", got, r, []rune(tt.token)[0])

			// Every rune of the text that is not produced by an escape or a
			// line fold maps to the same rune in the file.
			for i, tr := range []rune(e.Text) {
				if tr == '\n' || tr == ' ' || tr == '\t' || tr == '\\' || tr == '"' || tr == '\'' || tr > 127 {
					continue
				}
				p := e.PosOffset(i)
				sr, ok := runeAt(src, p)
				assert.True(t, ok && (sr == tr || sr == '\\'), "PosOffset(%d): got %s holding %q, want %q", i, p, sr, tr)
			}
			// Pos is the position of the first character.
			assert.Equal(t, e.PosOffset(0), e.Pos, "got Pos %s, want PosOffset(0) %s", e.Pos, e.PosOffset(0))
		})
	}
}

func TestExprColumnsCountRunes(t *testing.T) {
	// Non-ASCII text before the expression on its line: columns count
	// characters, not bytes.
	src := "apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n" +
		"  - {description: 'héllo ✓', id: a, verdict: block, condition: 'tool == TARGET'}\n"
	p, ds := policy.Parse("p.yaml", []byte(src))
	require.Empty(t, ds)
	e := *p.Rules[0].Condition
	got := e.PosAt(celLocation(t, e.Text, "TARGET"))
	want := policy.Pos{File: "p.yaml", Line: 5, Col: 73}
	assert.Equal(t, want, got, "got %s, want %s", got, want)
	r, _ := runeAt([]byte(src), got)
	assert.Equal(t, 'T', r)
}

func TestExprPosOffsetBounds(t *testing.T) {
	e, _ := conditionOf(t, "'tool == x'\n")
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 7, Col: 17}, e.PosOffset(-3), "a negative offset clamps to the start")
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 7, Col: 26}, e.PosOffset(9), "one past the end is after the last character")
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 7, Col: 26}, e.PosOffset(1000), "past the end clamps to one past the end")

	// A block scalar ends in a line break: one past the end stays on the
	// last line instead of moving to the next key.
	e, _ = conditionOf(t, "|\n      tool ==\n    description: x\n")
	require.Equal(t, "tool ==\n", e.Text)
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 8, Col: 14}, e.PosOffset(len(e.Text)))
	assert.Equal(t, policy.Pos{File: "p.yaml", Line: 8, Col: 14}, e.PosAt(2, 0), "the cel-go location of <EOF>")
}

func TestNewExpr(t *testing.T) {
	e := policy.NewExpr("a && b", policy.Pos{File: "f", Line: 3, Col: 10})
	assert.Equal(t, "a && b", e.Text)
	assert.Equal(t, policy.Pos{File: "f", Line: 3, Col: 15}, e.PosAt(1, 5))
	assert.Equal(t, policy.Pos{File: "f", Line: 3, Col: 15}, e.PosOffset(5))
	assert.Equal(t, policy.Pos{File: "f", Line: 3, Col: 10}, e.PosOffset(-1))
}

// An expression rebuilt from its Layout maps every rune to the same place
// in the file; a layout that cannot be the expression's is refused.
func TestExprLayout(t *testing.T) {
	for name, cond := range map[string]string{
		"plain":          "tool == 'a'\n",
		"literal block":  "|\n      tool == 'a' &&\n        args.x == 'é'\n",
		"folded block":   ">-\n      tool == 'a'\n      && args.x == 'b'\n",
		"double-quoted":  "\"tool == \\\"a\\\" &&\n      args.x == 'b'\"\n",
		"plain two-line": "tool == 'a' &&\n      args.x == 'b'\n",
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := conditionOf(t, cond)
			runs, ok := e.Layout()
			require.True(t, ok)
			back, ok := policy.Expr{Text: e.Text, Pos: e.Pos}.WithLayout(runs)
			require.True(t, ok)
			assert.Equal(t, e, back)
			for off := 0; off <= utf8.RuneCountInString(e.Text)+1; off++ {
				assert.Equal(t, e.PosOffset(off), back.PosOffset(off))
			}
			if runs == nil {
				return
			}
			bare := policy.Expr{Text: e.Text, Pos: e.Pos}
			for what, bad := range map[string][]policy.PosRun{
				"no runes":       {{N: 0, Line: e.Pos.Line, Col: e.Pos.Col}},
				"past the text":  {{N: len(e.Text) + 2, Line: e.Pos.Line, Col: e.Pos.Col}},
				"another start":  {{N: 1, Line: e.Pos.Line + 1, Col: e.Pos.Col}},
				"a negative run": append([]policy.PosRun{{N: 1, Line: e.Pos.Line, Col: e.Pos.Col}}, policy.PosRun{N: -1}),
			} {
				_, ok := bare.WithLayout(bad)
				assert.False(t, ok, what)
			}
		})
	}
	_, ok := policy.NewExpr("x", policy.Pos{File: "p.yaml", Line: 1, Col: 1}).Layout()
	assert.True(t, ok)
}
