package jsonkind

import (
	"encoding/json"
	"testing"
)

// TestOfAgreesWithOfRaw: a value and its JSON text are named alike.
func TestOfAgreesWithOfRaw(t *testing.T) {
	for raw, want := range map[string]string{
		`{"a": 1}`: "an object",
		` [1]`:     "an array",
		`"s"`:      "a string",
		`true`:     "a boolean",
		`false`:    "a boolean",
		`null`:     "null",
		`-1.5e3`:   "a number",
	} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		if got := Of(v); got != want {
			t.Errorf("Of(%s) = %q, want %q", raw, got, want)
		}
		if got := OfRaw(json.RawMessage(raw)); got != want {
			t.Errorf("OfRaw(%s) = %q, want %q", raw, got, want)
		}
	}
	if got := Of(json.Number("1")); got != "a number" {
		t.Errorf("Of(json.Number) = %q", got)
	}
	if got := Of(struct{}{}); got != "a JSON value" {
		t.Errorf("Of(struct{}{}) = %q", got)
	}
	if got := OfRaw(json.RawMessage("  ")); got != "nothing" {
		t.Errorf("OfRaw(space) = %q", got)
	}
}
