package daemonwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
