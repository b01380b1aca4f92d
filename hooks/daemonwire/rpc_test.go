package daemonwire

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/internal/jsonkind"
)

// TestRPCRoundTrip: what one end encodes the other decodes to the same
// values, the bytes the MAC covers exactly: an event that is not compact
// JSON, not JSON at all, or not UTF-8 arrives as it was sent.
func TestRPCRoundTrip(t *testing.T) {
	nonce, err := NewNonce()
	require.NoError(t, err)
	for _, event := range [][]byte{
		[]byte(`{"hook_event_name": "PreToolUse",  "tool_input": {"command": "a < b && c > d"}}`),
		[]byte("{\"x\":\"\xff\xfe\u2028\"}\n"),
		[]byte("not json at all \x00"),
		{},
	} {
		p := HookParams{Nonce: nonce, Host: "claude-code", WorkDir: "/w", Digest: "sha256:d", Event: event,
			AgentVersion: "2.1.0", TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		line, err := EncodeRequest(p)
		require.NoError(t, err)
		require.Equal(t, byte('{'), line[0], "the daemon tells the wire by its first byte")
		require.Equal(t, 1, bytes.Count(line, []byte("\n")), "one line")
		got, err := ReadLine(bytes.NewReader(line), len(line))
		require.NoError(t, err)
		id, back, err := DecodeRequest(got)
		require.NoError(t, err)
		assert.Equal(t, nonce, id.Raw())
		if len(event) == 0 {
			back.Event = []byte{} // nil and empty are the same bytes
		}
		assert.Equal(t, p, back)

		res := HookResult{Digest: "sha256:d", Version: "v1", Manifest: NoManifest, MAC: "00ff",
			Body: []byte(`{"stdout":"{\"a\": \"<b>\"}\n","stderr":"x\u00e9","exit":2}`)}
		out, err := EncodeResult(id, res)
		require.NoError(t, err)
		got, err = ReadLine(bytes.NewReader(out), MaxAnswerLine)
		require.NoError(t, err)
		r, err := DecodeResponse(got, nonce)
		require.NoError(t, err)
		assert.Equal(t, res, r)
	}
}

// TestDecodeResponseRefuses: anything but the response to this request
// with a hook result is an error.
func TestDecodeResponseRefuses(t *testing.T) {
	nonce, _ := NewNonce()
	other, _ := NewNonce()
	id, _ := jsonrpc.MakeID(nonce)
	good, err := EncodeResult(id, HookResult{Body: []byte(`{}`)})
	require.NoError(t, err)
	_, err = DecodeResponse(bytes.TrimSuffix(good, []byte("\n")), nonce)
	require.NoError(t, err)
	big := HookResult{Body: bytes.Repeat([]byte("a"), MaxAnswer+1)}
	bigLine, err := EncodeResult(id, big)
	require.NoError(t, err)
	for name, line := range map[string]string{
		"another request's":        strings.Replace(string(good), nonce, other, 1),
		"a number id":              `{"jsonrpc":"2.0","id":1,"result":{"digest":"","version":"","manifest":"","mac":"","body":"e30="}}`,
		"no id":                    `{"jsonrpc":"2.0","result":{}}`,
		"an error":                 string(EncodeError(id, -32000, "stale")),
		"a request":                `{"jsonrpc":"2.0","id":"` + nonce + `","method":"celguard/hook","params":{}}`,
		"another version":          strings.Replace(string(good), `"2.0"`, `"1.0"`, 1),
		"an unknown result field":  `{"jsonrpc":"2.0","id":"` + nonce + `","result":{"body":"e30=","allow":true}}`,
		"a result that is no body": `{"jsonrpc":"2.0","id":"` + nonce + `","result":{"body":"not base64!"}}`,
		"a result array":           `{"jsonrpc":"2.0","id":"` + nonce + `","result":[1]}`,
		"garbage":                  "HTTP/1.1 200 OK",
		"empty":                    "",
		"too large a body":         string(bigLine),
	} {
		if _, err := DecodeResponse(bytes.TrimSuffix([]byte(line), []byte("\n")), nonce); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestDecodeRequestRefuses: the daemon takes only a call of the hook
// method whose id is its nonce.
func TestDecodeRequestRefuses(t *testing.T) {
	nonce, _ := NewNonce()
	good, err := EncodeRequest(HookParams{Nonce: nonce, Host: "codex", Event: []byte(`{}`)})
	require.NoError(t, err)
	_, _, err = DecodeRequest(good[:len(good)-1])
	require.NoError(t, err)
	for name, line := range map[string]string{
		"another method":              strings.Replace(string(good), MethodHook, "tools/call", 1),
		"a notification":              `{"jsonrpc":"2.0","method":"celguard/hook","params":{"nonce":"` + nonce + `"}}`,
		"an id that is not its nonce": strings.Replace(string(good), `"id":"`+nonce, `"id":"x`, 1),
		"a short nonce":               `{"jsonrpc":"2.0","id":"ab","method":"celguard/hook","params":{"nonce":"ab"}}`,
		"an unknown param":            strings.Replace(string(good), `"host":`, `"allow":true,"host":`, 1),
		"a response":                  `{"jsonrpc":"2.0","id":"` + nonce + `","result":{}}`,
		"garbage":                     "{{{",
	} {
		if _, _, err := DecodeRequest(bytes.TrimSuffix([]byte(line), []byte("\n"))); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestReadLine: one line within the bound, or an error; never more.
func TestReadLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
		err  error
	}{
		{"abc\nrest", 3, "abc", nil},
		{"abcd\n", 3, "", ErrLineTooLong},
		{strings.Repeat("a", 100<<10), 1 << 10, "", ErrLineTooLong},
		{"abc", 10, "", io.ErrUnexpectedEOF},
		{"", 10, "", io.ErrUnexpectedEOF},
		{"\n", 10, "", nil},
	} {
		got, err := ReadLine(strings.NewReader(c.in), c.max)
		if !errors.Is(err, c.err) || (err == nil && string(got) != c.want) {
			t.Errorf("%.20q (max %d): %q, %v; want %q, %v", c.in, c.max, got, err, c.want, c.err)
		}
	}
}

// FuzzClientAnswer: whatever line a process on the socket answers, the
// client's decoding (DecodeResponse, then Accept) never panics, keeps to
// its bounds, and accepts nothing but the answer the key signed.
func FuzzClientAnswer(f *testing.F) {
	key, p, res := answerFixture(f, "")
	id, _ := jsonrpc.MakeID(p.Nonce)
	good, err := EncodeResult(id, res)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:len(good)-1])
	f.Add(EncodeError(id, -32000, "x"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"` + p.Nonce + `","result":{"digest":"d","version":"v","manifest":"","mac":"` + res.MAC + `","body":""}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"` + p.Nonce + `","result":{"mac":"` + strings.Repeat("00", 32) + `","body":"e30="}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`))
	f.Add([]byte(strings.Repeat("[", 2000)))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeResponse(line, p.Nonce)
		if err != nil {
			return
		}
		if len(r.Body) > MaxAnswer {
			t.Fatalf("a body of %d bytes", len(r.Body))
		}
		a, err := Accept(key, p, r)
		if err != nil {
			return
		}
		if r.MAC != res.MAC || !bytes.Equal(r.Body, res.Body) || r.Digest != res.Digest || r.Version != res.Version || r.Manifest != res.Manifest {
			t.Fatalf("accepted an answer the key did not sign: %+v", r)
		}
		if a.Exit < 0 || a.Exit > 2 {
			t.Fatalf("exit %d", a.Exit)
		}
	})
}

// FuzzDaemonRequest: whatever a client sends, the daemon's decoding never
// panics, and what it takes carries a nonce that is its id.
func FuzzDaemonRequest(f *testing.F) {
	nonce, _ := NewNonce()
	good, _ := EncodeRequest(HookParams{Nonce: nonce, Host: "claude-code", Event: []byte(`{"a":1}`)})
	f.Add(good[:len(good)-1])
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"celguard/hook"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"celguard/hook","params":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, p, err := DecodeRequest(line)
		if err != nil {
			return
		}
		if s, _ := id.Raw().(string); s != p.Nonce || len(p.Nonce) != 2*NonceBytes {
			t.Fatalf("took id %v with nonce %q", id.Raw(), p.Nonce)
		}
	})
}

// randomParams are HookParams with strings drawn from plain characters,
// the ones encoding/json escapes, and UTF-8 (valid and not), some empty,
// and events of random bytes, empty or nil.
func randomParams(r *rand.Rand) HookParams {
	alphabet := []string{"a", "Z", "0", "/", " ", "-", ".", "~", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x7f", "é", "\u2028", "\xff", "日"}
	allPlain := r.IntN(2) == 0
	str := func() string {
		if r.IntN(4) == 0 {
			return ""
		}
		var b strings.Builder
		plain := allPlain || r.IntN(2) == 0
		for range r.IntN(40) {
			if plain {
				b.WriteString(alphabet[r.IntN(8)])
			} else {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
		}
		return b.String()
	}
	var ev []byte
	switch r.IntN(5) {
	case 0:
	case 1:
		ev = []byte{}
	default:
		ev = make([]byte, r.IntN(300))
		for i := range ev {
			ev[i] = byte(r.IntN(256))
		}
	}
	nonce := str()
	if r.IntN(2) == 0 {
		nonce = strings.Repeat("ab", NonceBytes)
	}
	return HookParams{Nonce: nonce, Host: str(), WorkDir: str(), Digest: str(), Event: ev,
		AgentVersion: str(), TraceParent: str(), TraceState: str()}
}

// TestEncodeRequestPlain: the request line written directly is
// encoding/json's and the SDK's byte for byte, over 20,000 random
// requests, and is written directly whenever every string is plain.
func TestEncodeRequestPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 3))
	direct := 0
	for i := 0; i < 20000; i++ {
		p := randomParams(r)
		want, err := encodeRequest(p)
		require.NoError(t, err)
		got, ok := encodeRequestPlain(p)
		allPlain := true
		for _, s := range []string{p.Nonce, p.Host, p.WorkDir, p.Digest, p.AgentVersion, p.TraceParent, p.TraceState} {
			allPlain = allPlain && jsonkind.Plain(s)
		}
		require.Equal(t, allPlain, ok, "%+v", p)
		if ok {
			direct++
			require.Equal(t, string(want), string(got), "%+v", p)
		}
		line, err := EncodeRequest(p)
		require.NoError(t, err)
		require.Equal(t, string(want), string(line))
	}
	assert.Greater(t, direct, 5000, "too few requests took the direct way to test it")
}

// FuzzEncodeRequestPlain: whatever the strings and the event, the
// request line is encoding/json's and the SDK's.
func FuzzEncodeRequestPlain(f *testing.F) {
	f.Add(strings.Repeat("ab", NonceBytes), "claude-code", "/w", "", []byte(`{"a":1}`), "", "00-abc-01", "")
	f.Add("n", "h<", "/ü", "d", []byte{}, "v&", "p", "s\"")
	f.Fuzz(func(t *testing.T, nonce, host, wd, digest string, event []byte, av, tp, ts string) {
		p := HookParams{Nonce: nonce, Host: host, WorkDir: wd, Digest: digest, Event: event, AgentVersion: av, TraceParent: tp, TraceState: ts}
		want, err := encodeRequest(p)
		if err != nil {
			t.Skip(err)
		}
		got, err := EncodeRequest(p)
		if err != nil || string(got) != string(want) {
			t.Fatalf("EncodeRequest %q, %v; want %q", got, err, want)
		}
	})
}

// TestDecodeResultPlain: an answer as a daemon writes it (EncodeResult)
// is decoded without the SDK, to what the SDK's way decodes, over 5,000
// random results; error responses, another id and broken lines are left
// to the SDK's way (decodeResultPlain declines them).
func TestDecodeResultPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 4))
	for i := 0; i < 5000; i++ {
		p := randomParams(r)
		nonce := strings.Repeat("0f", NonceBytes)
		res := HookResult{Digest: p.Digest, Version: p.Host, Manifest: p.WorkDir, MAC: p.TraceParent, Body: p.Event}
		id, err := jsonrpc.MakeID(nonce)
		require.NoError(t, err)
		line, err := EncodeResult(id, res)
		require.NoError(t, err)
		line = bytes.TrimSuffix(line, []byte("\n"))
		want, werr := decodeResponse(line, nonce)
		require.NoError(t, werr)
		got, ok := decodeResultPlain(line, nonce)
		require.True(t, ok, "%s", line)
		require.Equal(t, want, got)
		_, ok = decodeResultPlain(line, strings.Repeat("1f", NonceBytes))
		require.False(t, ok, "an answer to another request")
	}
	id, _ := jsonrpc.MakeID(strings.Repeat("0f", NonceBytes))
	_, ok := decodeResultPlain(bytes.TrimSuffix(EncodeError(id, jsonrpc.CodeInternalError, "no"), []byte("\n")), strings.Repeat("0f", NonceBytes))
	assert.False(t, ok, "an error response")
}

// FuzzDecodeResultPlain: whatever line decodeResultPlain takes, the SDK's
// way takes too, with the same result.
func FuzzDecodeResultPlain(f *testing.F) {
	nonce := strings.Repeat("0f", NonceBytes)
	id, _ := jsonrpc.MakeID(nonce)
	line, _ := EncodeResult(id, HookResult{Digest: "sha256:d", Version: "v", Manifest: "m", MAC: "ab", Body: []byte(`{"exit":0}`)})
	f.Add(bytes.TrimSuffix(line, []byte("\n")))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"` + nonce + `","result":{"digest":"d","DIGEST":"e","body":null},"result":{"mac":"x"}}`))
	f.Add([]byte(`{"JSONRPC":"2.0","Id":"` + nonce + `","Result":{"Body":"eyJ9"},"error":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := decodeResultPlain(line, nonce)
		if !ok {
			return
		}
		want, err := decodeResponse(line, nonce)
		if err != nil {
			t.Fatalf("decodeResultPlain took %q, which the SDK's way refuses: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %+v, the SDK's way %+v", line, got, want)
		}
	})
}
