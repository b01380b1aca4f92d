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

// plainBytes is Plain one byte at a time, as it was before it read eight
// bytes at a time: the reference of TestPlainWords and FuzzPlain.
func plainBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// TestPlainWords holds Plain, which tests eight bytes at a time, to the
// byte test: every byte value at every position of strings of 0 to 25
// bytes, in a plain string and beside a second byte that fails (the
// borrows and carries between the bytes of a word), and all 65,536 pairs
// of bytes at each position of one word.
func TestPlainWords(t *testing.T) {
	base := "abcdefghijklmnopqrstuvwxy"
	for n := 0; n <= len(base); n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(base[:n])
				b[pos] = byte(c)
				if got, want := Plain(string(b)), plainBytes(string(b)); got != want {
					t.Fatalf("Plain(%q) = %v, want %v", b, got, want)
				}
				for _, other := range []byte{0x00, 0x1f, 0x7f, 0xff, '"', '&'} {
					for o := 0; o < n; o++ {
						if o == pos {
							continue
						}
						b2 := append([]byte(nil), b...)
						b2[o] = other
						if got, want := Plain(string(b2)), plainBytes(string(b2)); got != want {
							t.Fatalf("Plain(%q) = %v, want %v", b2, got, want)
						}
					}
				}
			}
		}
	}
	for i := 0; i < 8; i++ {
		for j := i + 1; j < 8; j++ {
			for x := 0; x < 256; x++ {
				for y := 0; y < 256; y++ {
					b := []byte("ABCDEFGH")
					b[i], b[j] = byte(x), byte(y)
					if got, want := Plain(string(b)), plainBytes(string(b)); got != want {
						t.Fatalf("Plain(%q) = %v, want %v", b, got, want)
					}
				}
			}
		}
	}
}

// FuzzPlain: Plain is the byte test on any string.
func FuzzPlain(f *testing.F) {
	f.Add("sha256:0123456789abcdef")
	f.Add("no match <b>")
	f.Add("\x7f\x80\xff\x00\x1f ~")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Plain(s), plainBytes(s); got != want {
			t.Fatalf("Plain(%q) = %v, want %v", s, got, want)
		}
	})
}

// BenchmarkPlain is Plain on a decision's reason.
func BenchmarkPlain(b *testing.B) {
	s := "the call matches rule no-force-push of policy git-safety: git push --force rewrites history on a shared branch"
	for b.Loop() {
		if !Plain(s) {
			b.Fatal("not plain")
		}
	}
}
