package stdlib

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCanonicalMatchesSortedKeyJSON pins canonical() against the sorted-key
// JSON other systems produce. The want strings were produced by Python 3 with
//
//	json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
//
// on the same values and pasted here as literals (Python is not needed to run
// the test). A digest of canonical() is therefore a digest another system can
// compute.
func TestCanonicalMatchesSortedKeyJSON(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": []any{true, nil}}, "{\"a\":[true,null],\"b\":1}"},
		{map[string]any{"cmd": "a && b > c < d"}, "{\"cmd\":\"a && b > c < d\"}"},
		{"<script>&amp;</script>", "\"<script>&amp;</script>\""},
		{map[string]any{"z": "é", "a": "日本語", "m": "😀"}, "{\"a\":\"日本語\",\"m\":\"😀\",\"z\":\"é\"}"},
		// Keys sort by code point (U+FFFF before U+1F600), not by UTF-16 unit.
		{map[string]any{"\uffff": 1, "😀": 2, "a": 3, "B": 4, "": 5}, "{\"\":5,\"B\":4,\"a\":3,\"\uffff\":1,\"😀\":2}"},
		{"quote\" backslash\\ slash/", "\"quote\\\" backslash\\\\ slash/\""},
		{"\n\r\t\b\f\x00\x1f\x7f", "\"\\n\\r\\t\\b\\f\\u0000\\u001f\u007f\""},
		{"\u2028\u2029", "\"\u2028\u2029\""},
		{[]any{0.5, -2, 1.5e-07, 1e21, 0, -0.25}, "[0.5,-2,1.5e-07,1e+21,0,-0.25]"},
		{map[string]any{"nested": map[string]any{"y": []any{1, map[string]any{"k": "v&w"}}, "x": false}}, "{\"nested\":{\"x\":false,\"y\":[1,{\"k\":\"v&w\"}]}}"},
	}
	for _, tc := range cases {
		got, err := CanonicalNative(tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

// TestCanonicalOwnSpellings pins where canonical() deliberately differs from
// Python's json.dumps (which writes 1.0 as "1.0" and 1234567.5 as
// "1234567.5"), as docs/stdlib.md says, and that invalid UTF-8 becomes U+FFFD.
func TestCanonicalOwnSpellings(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{1.0, "1"},
		{1234567.5, "1.2345675e+06"},
		{"a\xffb", "\"a\ufffdb\""},
	}
	for _, tc := range cases {
		got, err := CanonicalNative(tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}

// TestCanonicalRegex: a regex over canonical arguments that mentions &, < or >
// matches (they were \u0026, \u003c, \u003e before).
func TestCanonicalRegex(t *testing.T) {
	l := testLib(t)
	env := testEnv(t, l)
	s := l.NewCallScope()
	assert.True(t, evalBool(t, env, s, `canonical({"command": "make && rm x > /dev/null"}).matches("&& rm x > /dev/null")`, nil))
	assert.True(t, evalBool(t, env, s, `canonical("<a>").contains("<a>")`, nil))
}
