package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard/policy"
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

// callDigestGolden are CallDigest of digestShapes' arguments, each with a
// tool and a working directory (callDigestCall), made by the
// implementation before it hashed one buffer (c2ddc86: fmt.Fprintf of
// each part into a sha256 hash). Grants and approval requests name calls
// by these digests, in session state and across processes: they must
// never change.
var callDigestGolden = []string{
	"6a7f8f48485c5bd26295f5f59e848a0c841c1b0caa7fc23d4c0731a24ddd0452",
	"feeaed5d2e38b952e0beefc844dbc34419d5d18c3552d7aa48ac423fccc438c6",
	"5c69376315f5239c462d2de80ef328cd78b9c0885cfd195efdb7f1d29e368453",
	"16c2d8a8785abecbf245ea5f91598dd609efac7a71871d23fa0c618c83ae3359",
	"4324eb00eea8df47c14fce2435edbc3640a647a151bc08b1d678cedf73039f8e",
	"f5ffb81b7f28fc23f885df46b65572bf23ae168c25635497a6e51cf6c4d1b3f7",
	"738756dd98f2f6612e53546e56f3331763efad5799d91516da1b9815487cce54",
	"a2a3c1388867b113d03fa92ad704e522cf97d29d0105916379351125d3f2bdee",
	"d9789bf2c4f42442c708c1cfe8089fe7d1515ce24167c75e617a9e933c6897a8",
	"9a7b227a4595f62f25711a483e04d0ec8ace4959629bdd07f4e8e8671807a71a",
	"29e32930d52929484ce271642ec1dba1c234090cf0fad85c5908aa96b2730d94",
	"a98429f3d7cae1d97f35d3273ee368204405958f4c3ed3940c91121582c3f733",
	"b2cfe43b7d5611c33101a7f845d5173d1d518b48d55c36f9619ad9fae124e02d",
	"7b234a37922b5c8e15a2dd25ae05a91d3eb22b8eda04c4a3809419259695ff8a",
	"c4ebda91eb74912b12d86b198e362412f9b6e373b6533d79233ab4d09df248d6",
	"ac4634caa979eb1b21423b9ede9f6654b78efe2216b48e9483565dfc52daade0",
	"1fe56723481075472959789f8ad56589a4146c0d124d9c8ec77257b027cc6a3b",
	"5617b216cf017536e6d2a9dc5543fe061f34ffafeb9226715980f12986c3d41d",
	"",
}

// callDigestCall is the i-th call of TestCallDigestGolden.
func callDigestCall(i int) Call {
	tools := []string{"Bash", "", "mcp__github__create_issue", "日本", "Write"}
	cwds := []string{"/repo", "", "/srv/app with space", "C:\\work\\é", "/tmp/\n"}
	return Call{Tool: tools[i%len(tools)], Args: digestShapes[i], Cwd: cwds[(i/2)%len(cwds)]}
}

// TestCallDigestGolden pins the call digest of every argument shape.
func TestCallDigestGolden(t *testing.T) {
	if len(callDigestGolden) != len(digestShapes) {
		for i := range digestShapes {
			d, err := CallDigest(callDigestCall(i))
			t.Logf("%q, // %v", d, err)
		}
		t.Fatalf("%d golden digests for %d shapes", len(callDigestGolden), len(digestShapes))
	}
	for i := range digestShapes {
		c := callDigestCall(i)
		got, err := CallDigest(c)
		if want := callDigestGolden[i]; got != want || (err == nil) != (want != "") {
			t.Errorf("CallDigest(%#v) = %q, %v; want %q", c, got, err, want)
		}
	}
}

// refCallDigest is CallDigest as it was (c2ddc86).
func refCallDigest(c Call) (string, error) {
	args, err := stdlib.CanonicalNative(c.Args)
	if err != nil {
		return "", fmt.Errorf("call digest: %w", err)
	}
	h := sha256.New()
	for _, p := range []string{"celguard call v1", c.Tool, args, c.Cwd} {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestCallDigestDifferential holds CallDigest to its previous
// implementation on random calls.
func TestCallDigestDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 11))
	for range 5000 {
		args := map[string]any{}
		for n := r.IntN(6); n > 0; n-- {
			args[randomKey(r)] = randomArg(r, 0)
		}
		c := Call{Tool: randomKey(r), Args: args, Cwd: randomKey(r) + randomKey(r)}
		got, err := CallDigest(c)
		want, werr := refCallDigest(c)
		if got != want || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("CallDigest(%#v) = %q, %v; want %q, %v", c, got, err, want, werr)
		}
	}
}

// TestNoteRecentAfterDigests: a result finds its call's entry by the call
// id, or without one by tool and digest, and a result no entry waits for
// makes a new entry carrying its arguments' digest, however the digest
// was made (once per result).
func TestNoteRecentAfterDigests(t *testing.T) {
	allow := Decision{Verdict: policy.Allow}
	a := Call{ID: "1", Tool: "Bash", Args: map[string]any{"command": "ls"}}
	b := Call{ID: "2", Tool: "Bash", Args: map[string]any{"command": "pwd"}}
	c := Call{Tool: "Read", Args: map[string]any{"file_path": "/x"}}
	d := Call{Tool: "Read", Args: map[string]any{"file_path": "/y"}}
	f := &sessionFacts{}
	f.noteRecent(policy.PhaseBefore, a, nil, allow, 1)
	f.noteRecent(policy.PhaseBefore, c, nil, allow, 1)
	f.noteRecent(policy.PhaseAfter, a, &Result{}, allow, 1)              // a's entry, by id
	f.noteRecent(policy.PhaseAfter, b, &Result{IsError: true}, allow, 1) // none: a new entry
	f.noteRecent(policy.PhaseAfter, c, &Result{}, allow, 1)              // c's entry, by digest
	f.noteRecent(policy.PhaseAfter, d, &Result{}, allow, 1)              // none waits with d's digest
	type entry struct{ id, tool, verdict, digest, status string }
	var got []entry
	for _, r := range f.recent {
		got = append(got, entry{r.CallID, r.Tool, r.Verdict, r.Digest, r.Status})
	}
	want := []entry{
		{"1", "Bash", "allow", refArgsDigest(a.Args), RecentOK},
		{"", "Read", "allow", refArgsDigest(c.Args), RecentOK},
		{"2", "Bash", "", refArgsDigest(b.Args), RecentError},
		{"", "Read", "", refArgsDigest(d.Args), RecentOK},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recent calls\n got %+v\nwant %+v", got, want)
	}
}

// refIDLike is idLike as it was (c2ddc86), without its first test of the
// last byte.
func refIDLike(k string) bool {
	l := strings.ToLower(k)
	return l == "id" || l == "number" || strings.HasSuffix(l, "_id") || strings.HasSuffix(k, "Id") ||
		strings.HasSuffix(k, "ID") || strings.HasSuffix(l, "_number") || strings.HasSuffix(l, "_key")
}

// idLikeNames are names near the id-like ones: every case, runes whose
// lower case is ASCII (U+0130, the Kelvin sign), invalid UTF-8.
var idLikeNames = []string{"", "d", "id", "ID", "Id", "iD", "number", "NUMBER", "Number", "user_id", "USER_ID",
	"userId", "userID", "userid", "issue_number", "ISSUE_NUMBER", "api_key", "API_KEY", "api_Key", "apikey", "key",
	"command", "file_path", "x_İD", "İD", "x_\u212aEY", "_\u212aey", "x_id\xff", "\xffid", "x_nuMbeR", "grid", "player",
	"sky", "Id\u0307", "ıd", "x_ıd", "日本_id", "日本Id", "idé"}

// TestIDLikeDifferential holds idLike to its previous body on names near
// the id-like ones and on random names made of their pieces.
func TestIDLikeDifferential(t *testing.T) {
	for _, k := range idLikeNames {
		if got, want := idLike(k), refIDLike(k); got != want {
			t.Fatalf("idLike(%q) = %v, want %v", k, got, want)
		}
	}
	pieces := []string{"_", "i", "I", "d", "D", "id", "ID", "key", "KEY", "\u212a", "İ", "ı", "number", "r", "y", "\xff", "é", "x"}
	r := rand.New(rand.NewPCG(26, 12))
	for range 100_000 {
		var b strings.Builder
		for n := r.IntN(5); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		if k := b.String(); idLike(k) != refIDLike(k) {
			t.Fatalf("idLike(%q) = %v, want %v", k, idLike(k), refIDLike(k))
		}
	}
}

// FuzzIDLike: idLike answers as its previous body for any name.
func FuzzIDLike(f *testing.F) {
	for _, k := range idLikeNames {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := idLike(k), refIDLike(k); got != want {
			t.Fatalf("idLike(%q) = %v, want %v", k, got, want)
		}
	})
}
