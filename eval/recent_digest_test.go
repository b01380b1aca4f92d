package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/stdlib"
)

// digestShapes are argument maps of every shape a digest is taken of:
// nil and empty, strings with escapes, control characters, HTML bytes,
// invalid UTF-8 and code points past the BMP, numbers of every spelling,
// nesting, keys that sort by code point, and Go values that are not what
// a JSON decoder makes (the type adapter's path).
var digestShapes = []map[string]any{
	nil,
	{},
	{"command": "go test ./..."},
	{"command": "git status", "description": "show the tree"},
	{"file_path": "/repo/main.go", "content": "package main\n\nfunc main() {}\n"},
	{"command": "echo \"q\" \\ back\tslash\n\r\b\f\x00\x1f\x7f"},
	{"html": "<script>&amp;</script> \u2028\u2029"},
	{"unicode": "日本語 é 😀 \uffff", "é": "accent key", "😀": 1.0, "\uffff": 2.0, "B": 3.0, "": nil},
	{"invalid": "a\xffb\xc3", "\xff": "bad key"},
	{"n": 0.0, "neg0": math.Copysign(0, -1), "one": 1.0, "half": -0.5, "big": 1e21, "p53": float64(1 << 53),
		"p53b": float64(1<<53 + 2), "p53i": 1 << 53, "tiny": 5e-324, "huge": 1e300, "frac": 1234567.5, "small": 1.5e-07},
	{"nan": math.NaN(), "inf": math.Inf(1), "ninf": math.Inf(-1)},
	{"t": true, "f": false, "z": nil},
	{"list": []any{}, "obj": map[string]any{}, "mixed": []any{nil, 1.0, "x", []any{"y"}, map[string]any{"k": "v"}}},
	{"nested": map[string]any{"y": []any{1.0, map[string]any{"k": "v&w", "a": []any{true}}}, "x": false}},
	{"edits": []any{map[string]any{"old_string": "a\nb", "new_string": "c\td"}, map[string]any{"old_string": "", "new_string": "\"\""}}},
	{"long": strings.Repeat("lorem ipsum \"q\" ", 200)},
	// Not a JSON decoder's types: through cel-go's type adapter.
	{"i": 3, "i64": int64(-3), "u": uint(7), "f32": float32(1.5), "b": []byte("bytes")},
	{"ts": time.Unix(1e9, 0).UTC(), "d": 2 * time.Second, "ss": []string{"a", "b"}, "ms": map[string]string{"k": "v"}},
	// Cannot be encoded: the digest is "".
	{"ch": make(chan int)},
}

// digestGolden are argsDigest of digestShapes, made by the implementation
// before the digest was written into a reused buffer (c2ddc86: a string
// from stdlib.CanonicalNative, crypto/sha256.Sum256, hex.EncodeToString).
// Digests are kept in session state and compared across processes and
// versions: they must never change.
var digestGolden = []string{
	"44136fa355b3678a",
	"44136fa355b3678a",
	"d7e5989af12b7e6b",
	"058ac85ffa5407fc",
	"1a022a04c66be578",
	"fb0700fcebe0f103",
	"2709f720354d1af8",
	"922c164c716e5642",
	"be43efe5df703f9a",
	"10f91aabbc248874",
	"03b1fe2381f48001",
	"60aa464a7b144f04",
	"ae417ce6b5f26af5",
	"73c1f6550ee8d829",
	"8daef9fbfbc8ab30",
	"05802fe433948b14",
	"8223842b93385730",
	"bd9a8fb3a4d52b8c",
	"",
}

// TestArgsDigestGolden pins the digest of every argument shape.
func TestArgsDigestGolden(t *testing.T) {
	if len(digestGolden) != len(digestShapes) {
		for _, a := range digestShapes {
			t.Logf("%q,", argsDigest(a))
		}
		t.Fatalf("%d golden digests for %d shapes", len(digestGolden), len(digestShapes))
	}
	for i, a := range digestShapes {
		if got := argsDigest(a); got != digestGolden[i] {
			t.Errorf("argsDigest(%#v) = %q, want %q", a, got, digestGolden[i])
		}
	}
}

// refArgsDigest is argsDigest as it was (c2ddc86).
func refArgsDigest(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	js, err := stdlib.CanonicalNative(args)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(js))
	return hex.EncodeToString(sum[:8])
}

// TestArgsDigestDifferential holds argsDigest to the digest of
// stdlib.CanonicalNative's string on random argument maps.
func TestArgsDigestDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 10))
	for range 5000 {
		args := map[string]any{}
		for n := r.IntN(6); n > 0; n-- {
			args[randomKey(r)] = randomArg(r, 0)
		}
		if got, want := argsDigest(args), refArgsDigest(args); got != want {
			t.Fatalf("argsDigest(%#v) = %q, want %q", args, got, want)
		}
	}
}

func randomKey(r *rand.Rand) string {
	keys := []string{"command", "file_path", "id", "a", "B", "é", "😀", "", "\xff", "k\"q", "x\ny"}
	return keys[r.IntN(len(keys))]
}

func randomArg(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 3 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []float64{0, 1, -1.5, 1e21, 1 << 53, math.NaN(), 1234567.5}[r.IntN(7)]
	case 3, 4:
		var b strings.Builder
		for n := r.IntN(40); n > 0; n-- {
			b.WriteString([]string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "é", "日", "😀", "\xff", "<&>", "/"}[r.IntN(13)])
		}
		return b.String()
	case 5:
		return int64(r.IntN(100))
	case 6, 7:
		m := map[string]any{}
		for n := r.IntN(4); n > 0; n-- {
			m[randomKey(r)] = randomArg(r, depth+1)
		}
		return m
	default:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomArg(r, depth+1)
		}
		return l
	}
}
