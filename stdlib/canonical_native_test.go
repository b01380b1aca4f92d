package stdlib

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// canonicalBoth returns CanonicalNative's answer and the answer through
// cel-go's type adapter (the reference) for v.
func canonicalBoth(v any) (got, want string, gotErr, wantErr error) {
	got, gotErr = CanonicalNative(v)
	want, wantErr = canonicalAdapted(v)
	return
}

func agree(t *testing.T, v any) {
	t.Helper()
	got, want, gotErr, wantErr := canonicalBoth(v)
	if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("CanonicalNative(%#v) = %q, %v; through the type adapter %q, %v", v, got, gotErr, want, wantErr)
	}
	// AppendCanonicalNative appends the same bytes, and nothing on an error.
	b, err := AppendCanonicalNative([]byte("pre"), v)
	if (err == nil) != (gotErr == nil) || string(b) != "pre"+got {
		t.Fatalf("AppendCanonicalNative(pre, %#v) = %q, %v; want %q, %v", v, b, err, "pre"+got, gotErr)
	}
}

// nested returns a value n levels of lists and maps deep.
func nested(n int) any {
	var v any = "leaf"
	for i := range n {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// TestCanonicalNativeDifferential holds CanonicalNative's direct writing of
// JSON-decoded values to the conversion through CEL values, byte for byte
// and error for error: the edge cases, values that fall back (types the
// direct path does not write, anywhere inside), and random values.
func TestCanonicalNativeDifferential(t *testing.T) {
	cases := []any{
		nil, true, false, 0.0, math.Copysign(0, -1), 1.0, -1.5, 1e21, 1 << 53, 1<<53 + 2, 1e300, 5e-324,
		math.NaN(), math.Inf(1), math.Inf(-1), 0.1, 1e6 + 0.5,
		"", "plain", "a\"b\\c\n\t\x00\x1f", "\xff\xfe", "日本語 & <tag> \u2028",
		[]any{}, map[string]any{}, []any{nil, 1.0, "x", []any{}, map[string]any{}},
		map[string]any{"b": 1.0, "a": "x", "": nil, "é": true, "A": []any{2.0}, "\x00": "z", "\xff": 1.0},
		map[string]any{"command": strings.Repeat("lorem ipsum \"q\" ", 200)},
		// Types the direct path leaves to the type adapter, at the top and inside.
		1, int64(-3), uint(7), float32(1.5), []byte("bytes"), time.Unix(1e9, 0), 2 * time.Second,
		[]string{"a", "b"}, map[string]string{"k": "v"}, map[string]any{"n": 3, "s": "x"},
		[]any{"x", int64(4)}, map[string]any{"in": map[string]any{"deep": []any{uint64(1)}}},
		map[int]any{1: "x"}, map[string]any{"ch": make(chan int)}, struct{}{},
		nested(maxCanonicalDepth - 1), nested(maxCanonicalDepth), nested(maxCanonicalDepth + 1), nested(maxCanonicalDepth + 2),
	}
	for _, v := range cases {
		agree(t, v)
	}
	r := rand.New(rand.NewPCG(26, 4))
	for range 3000 {
		agree(t, randomJSON(r, 0))
	}
}

// randomJSON is a random value of the kinds a JSON decoder makes, now and
// then with a value of another Go type inside.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 4 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []float64{0, 1, -1, 0.5, 1e15, 1e16 + 1, math.MaxFloat64, -math.SmallestNonzeroFloat64, 123456789.125}[r.IntN(9)] * float64(r.IntN(3)-1)
	case 3, 4:
		return randomString(r)
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(12) {
			m[randomString(r)] = randomJSON(r, depth+1)
		}
		return m
	case 7:
		l := make([]any, r.IntN(5))
		for i := range l {
			l[i] = randomJSON(r, depth+1)
		}
		return l
	}
	return []any{int64(r.IntN(100)), uint32(1), []byte{1, 2}}[r.IntN(3)]
}

func randomString(r *rand.Rand) string {
	const alphabet = "ab\"\\\n\x01é日\xff \u2028"
	var b strings.Builder
	for range r.IntN(10) {
		i := r.IntN(len(alphabet))
		b.WriteByte(alphabet[i])
	}
	return b.String()
}

// FuzzCanonicalNative holds CanonicalNative to the conversion through CEL
// values on whatever JSON decodes to.
func FuzzCanonicalNative(f *testing.F) {
	for _, s := range []string{`null`, `{"b":1,"a":[true,null,"x\n"]}`, `[1.5,1e300,-0,"\u00ff"]`, `{"":{"":{"":[]}}}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		agree(t, v)
	})
}
