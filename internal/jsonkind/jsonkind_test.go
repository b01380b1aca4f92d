package jsonkind

import (
	"encoding/json"
	"math/rand/v2"
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

// TestPlain holds Plain to json.Marshal: a string Plain accepts is written
// as itself between quotes, for every byte alone and for random strings;
// and every printable ASCII byte json.Marshal writes as itself is
// accepted, so that the hot paths' encoders rarely fall back.
func TestPlain(t *testing.T) {
	check := func(s string) {
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		asIs := string(js) == `"`+s+`"`
		if Plain(s) && !asIs {
			t.Errorf("Plain(%q), but json.Marshal writes %s", s, js)
		}
		if len(s) == 1 && s[0] >= 0x20 && s[0] < 0x7f && asIs && !Plain(s) {
			t.Errorf("Plain(%q) is false, but json.Marshal writes it as it is", s)
		}
	}
	for c := 0; c < 256; c++ {
		check(string([]byte{byte(c)}))
	}
	check("")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		check(string(b))
	}
}
