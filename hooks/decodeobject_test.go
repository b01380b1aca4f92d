package hooks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/internal/jsonkind"
)

// refDecodeObject is decodeObject as it was: encoding/json alone.
func refDecodeObject(data []byte) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("the event is not valid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the event must be a JSON object, not %s", jsonkind.Of(v))
	}
	return m, nil
}

// objectCases are events that tell JSON decoders apart.
func objectCases() []string {
	cases := []string{
		``, ` `, `null`, `{}`, `[]`, `"x"`, `true`, `1`, `{`, `{"a":1`, "\ufeff{}", `{} `, "{}\r\n\t", `{} {}`, `{}x`, `{}]`, `{}null`,
		"{}\u00a0", "{}\v", "{}\x00", `{"a":1,}`, `{'a':1}`, `{a:1}`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":1/*c*/}`,
		// Duplicates: encoding/json keeps the last one, never merges in an any.
		`{"hook_event_name":"PreToolUse","hook_event_name":"Stop"}`, `{"tool_input":{"command":"ls"},"tool_input":{"file_path":"x"}}`,
		`{"tool_input":{"command":"ls","command":"rm -rf /"}}`, `{"a":{"b":1},"a":null}`, `{"a":[1],"a":[2,3]}`, `{"a":1,"A":2}`,
		// Escapes, surrogates, invalid UTF-8, control characters.
		`{"\u0074ool_name":"Bash"}`, `{"a":"\u0041\u00e9\u4e2d"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`,
		`{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\uDBFF\uDFFF"}`, `{"a":"\u00"}`, `{"a":"\x"}`, `{"a":"\/\b\f\n\r\t\"\\"}`,
		"{\"a\":\"x\xffy\"}", "{\"a\":\"x\xc3\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"k\xff\":1}", "{\"a\":\"x\ty\"}", "{\"a\":\"x\x00y\"}",
		`{"a":"x\u0000y"}`, `{"":1}`, `{"\ud800":1,"\udfff":2}`, "{\"\xff\":1,\"\xfe\":2}",
		// Numbers.
		`{"n":1e400}`, `{"n":-1e400}`, `{"n":1e-400}`, `{"n":123456789012345678901234567890}`, `{"n":-0}`, `{"n":-0.0}`, `{"n":01}`,
		`{"n":1.}`, `{"n":.5}`, `{"n":+1}`, `{"n":NaN}`, `{"n":0x10}`, `{"n":1E+2}`, `{"n":-}`, `{"n":1e}`, `{"n":9007199254740993}`,
		`{"t":true,"f":false,"z":null,"a":[],"o":{},"s":""}`, `{"x":tru}`, `{"x":nul}`,
	}
	for _, n := range []int{100, 9998, 9999, 10000, 10001, 12000} {
		cases = append(cases, `{"d":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}`)
		cases = append(cases, strings.Repeat(`{"d":`, n)+`1`+strings.Repeat("}", n))
		cases = append(cases, `{"d":`+strings.Repeat(`[{"e":`, n/2)+`1`+strings.Repeat("}]", n/2)+`}`)
	}
	for _, c := range benchdata.Stream(1000)[:100] {
		b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": c.Cwd, "tool_name": c.Tool, "tool_input": c.Args})
		cases = append(cases, string(b))
	}
	return cases
}

// checkObject holds decodeObject to refDecodeObject for data: the same
// error, or the same value (-0 told from 0).
func checkObject(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := decodeObject(data)
	want, werr := refDecodeObject(data)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("event %q: error %v, want %v", data, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Fatalf("event %q: decoded %#v, want %#v", data, got, want)
	}
}

// TestDecodeObjectDifferential: every event decodes to what encoding/json
// decodes it to, or fails with its error.
func TestDecodeObjectDifferential(t *testing.T) {
	for _, c := range objectCases() {
		checkObject(t, []byte(c))
	}
}

// TestDecodeObjectFirstPass: the first pass decides the stream's events
// itself, and refuses what it must leave to encoding/json.
func TestDecodeObjectFirstPass(t *testing.T) {
	for _, c := range objectCases()[len(objectCases())-100:] {
		var v any
		if err := jsonv2.Unmarshal([]byte(c), &v); err != nil {
			t.Fatalf("the first pass refused %s: %v", c, err)
		}
	}
	for _, c := range []string{`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, "{\"a\":\"x\xff\"}", `{"a":"\ud800"}`, `{"n":1e400}`, `{} x`} {
		var v any
		if err := jsonv2.Unmarshal([]byte(c), &v); err == nil {
			t.Errorf("the first pass took %s", c)
		}
	}
	m, err := decodeObject([]byte(`{"tool_input":{"command":"ls","command":"rm -rf /"}}`))
	if err != nil || m["tool_input"].(map[string]any)["command"] != "rm -rf /" {
		t.Errorf("duplicate command: %v, %v: want the last one, as encoding/json and JSON.parse", m, err)
	}
}

// FuzzDecodeObject: any event decodes to what encoding/json decodes it
// to, or fails with its error.
func FuzzDecodeObject(f *testing.F) {
	for _, c := range objectCases() {
		if len(c) < 4096 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkObject(t, data)
	})
}
