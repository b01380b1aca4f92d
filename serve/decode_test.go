package serve

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
)

// decodeTypes are the types readJSON decodes: the decision routes' (the
// first pass's, decodeBody) and others (encoding/json's only).
var decodeTypes = []func() any{
	func() any { return new(eval.Call) },
	func() any { return new(afterRequest) },
	func() any { return new(eval.Input) },
	func() any { return new(outputRequest) },
	func() any { return new(sessionRequest) },
	func() any { return new(haltRequest) },
	func() any { return new(struct{}) },
}

// decodeCases are bodies that tell JSON decoders apart: duplicate and
// case-varied names, escapes, surrogates, invalid UTF-8, numbers past
// float64, depth, trailing data, and non-objects.
func decodeCases() []string {
	cases := []string{
		``, ` `, `null`, ` null `, `{}`, `[]`, `"x"`, `true`, `1`, `{`, `}`, `{"tool":"Bash"`, "\ufeff{}",
		`{"tool":"Bash"}`, `{"tool":"Bash"} `, "{\"tool\":\"Bash\"}\r\n\t", `{"tool":"Bash"} {}`, `{"tool":"Bash"}x`, `{"tool":"Bash"}]`,
		`{"tool":"Bash"}null`, "{\"tool\":\"Bash\"}\u00a0", "{\"tool\":\"Bash\"}\v", "{\"tool\":\"Bash\"}\x00",
		// Duplicates and case variants: the last one wins, an object is merged.
		`{"tool":"a","tool":"b"}`, `{"tool":"a","Tool":"b"}`, `{"TOOL":"a"}`, `{"tOoL":"a","tool":null}`, `{"tool":"a","tool":1}`,
		`{"tool":"a","args":{"x":1},"args":{"y":2}}`, `{"tool":"a","args":{"x":1},"ARGS":{"x":2}}`, `{"tool":"a","args":{"x":1},"args":null}`,
		`{"tool":"a","args":{"x":1,"x":2}}`, `{"tool":"a","args":{"x":{"p":1},"x":{"q":2}}}`, `{"tool":"a","args":{"x":[1],"x":[2,3]}}`,
		`{"tool":"a","agent":{"ids":{"k":"1"}},"agent":{"ids":{"j":"2"}}}`, `{"tool":"a","agent":{"name":"n"},"agent":{"ids":{"j":"2"}}}`,
		`{"tool":"a","agent":{"ids":{"k":"1","k":"2"}}}`, `{"tool":"a","agent":{"ids":{"k":null}}}`, `{"tool":"a","agent":{"ids":{"k":1}}}`,
		`{"tool":"a","agent":null}`, `{"tool":"a","agent":{"IDS":{"K":"v"},"Name":"n"}}`, `{"tool":"a","agent":{"nope":1}}`,
		`{"tool":"a","call_id":"1","CALL_ID":"2","Call_Id":"3"}`, `{"tool":"a","callid":"1"}`, `{"tool":"a","call-id":"1"}`, `{"tool":"a","Call_ID":"x"}`,
		// Unicode folding: U+017F folds to s, U+212A (Kelvin) to k.
		`{"tool":"a","ſession_id":"x"}`, `{"meſſages":[]}`, `{"tool":"a","agent":{"idſ":{"a":"b"}}}`, `{"tool":"a","agent":{"name":"n","ıds":{}}}`,
		"{\"tool\":\"a\",\"agent\":{\"\u212aey\":1}}", `{"tool":"a","ARGſ":{}}`, `{"output":{"text":"t","TEXT":"u","Text":null}}`,
		// Escapes, surrogates, invalid UTF-8, control characters.
		`{"\u0074ool":"a"}`, `{"tool":"\u0041\u00e9\u4e2d"}`, `{"tool":"\ud83d\ude00"}`, `{"tool":"\ud800"}`, `{"tool":"\udc00\ud800"}`, `{"tool":"\ud800x"}`,
		`{"tool":"\ud800\u0041"}`, `{"tool":"\uDBFF\uDFFF"}`, `{"tool":"\u00"}`, `{"tool":"\x"}`, `{"tool":"\/\b\f\n\r\t\"\\"}`,
		"{\"tool\":\"a\xffb\"}", "{\"tool\":\"a\xc3\"}", "{\"tool\":\"\xed\xa0\x80\"}", "{\"tool\":\"a\",\"args\":{\"k\xff\":1}}", "{\"to\xffol\":\"a\"}",
		"{\"tool\":\"a\tb\"}", "{\"tool\":\"a\x00b\"}", `{"tool":"a\u0000b"}`, `{"tool\u0000":"a"}`, `{"tool":"a","args":{"":1}}`,
		// Numbers.
		`{"tool":"a","args":{"n":1e400}}`, `{"tool":"a","args":{"n":-1e400}}`, `{"tool":"a","args":{"n":1e-400}}`, `{"tool":"a","args":{"n":123456789012345678901234567890}}`,
		`{"tool":"a","args":{"n":-0}}`, `{"tool":"a","args":{"n":01}}`, `{"tool":"a","args":{"n":1.}}`, `{"tool":"a","args":{"n":.5}}`, `{"tool":"a","args":{"n":+1}}`,
		`{"tool":"a","args":{"n":NaN}}`, `{"tool":"a","args":{"n":0x10}}`, `{"tool":"a","args":{"n":1E+2}}`, `{"tool":1e400}`, `{"tool":1}`,
		`{"tool":"a","args":{"t":true,"f":false,"z":null,"a":[],"o":{}}}`, `{"tool":"a","args":[]}`, `{"tool":"a","args":"x"}`, `{"tool":"a","args":{"x":tru}}`,
		// Other routes' fields.
		`{"tool":"a","result":{"is_error":true,"content":"c","exit_code":1}}`, `{"tool":"a","result":{"is_error":1}}`, `{"tool":"a","result":null}`,
		`{"tool":"a","result":{"content":{"x":[1]}},"result":{"is_error":false}}`, `{"tool":"a","result":{"content":"x","content":"y"}}`, `{"tool":"a","result":[]}`,
		`{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"x","name":"n"}]}`, `{"messages":null}`, `{"messages":[null]}`,
		`{"messages":[{"role":"user","nope":1}]}`, `{"messages":[{"role":"user","ROLE":"x"}],"messages":[]}`, `{"messages":{}}`,
		`{"output":{"text":"t","content":{"a":1}},"call_id":"c"}`, `{"output":null}`, `{"output":{"text":1}}`, `{"output":{"nope":1}}`,
		`{"session_id":"s","meta":{"a":1},"agent":{"name":"n"}}`, `{"scope":"agent","key":"k","reason":"r"}`,
		// Trailing commas, comments, single quotes, unquoted names.
		`{"tool":"a",}`, `{"tool":"a","args":{"x":1,}}`, `{"tool":"a" /* c */}`, `{'tool':'a'}`, `{tool:"a"}`, `{"tool" "a"}`, `{"tool":"a" "cwd":"b"}`,
	}
	// Depth: encoding/json refuses past 10,000 levels.
	for _, n := range []int{100, 9998, 9999, 10000, 10001, 12000} {
		cases = append(cases, `{"tool":"a","args":{"d":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}}`)
		cases = append(cases, `{"tool":"a","args":`+strings.Repeat(`{"d":`, n)+`1`+strings.Repeat("}", n)+`}`)
	}
	for _, c := range benchdata.Stream(1000)[:100] {
		b, _ := json.Marshal(c)
		cases = append(cases, string(b))
	}
	return cases
}

// checkDecode holds decodeBody to decodeStd, encoding/json's decoding as
// it was, for body into each of decodeTypes: the same error, or the same
// value.
func checkDecode(t *testing.T, body []byte) {
	t.Helper()
	for _, newV := range decodeTypes {
		got, want := newV(), newV()
		gerr, werr := decodeBody(body, got), decodeStd(body, want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%T, body %q: error %v, want %v", got, body, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%T, body %q: decoded %#v, want %#v", got, body, got, want)
		}
	}
}

// TestDecodeDifferential: every body decodes to what encoding/json
// decodes it to, or fails with encoding/json's error.
func TestDecodeDifferential(t *testing.T) {
	for _, c := range decodeCases() {
		checkDecode(t, []byte(c))
	}
}

// TestDecodeFirstPass: the first pass decides the stream's calls itself
// (the duplicates fall back to encoding/json), and what it refuses is
// refused with encoding/json's message.
func TestDecodeFirstPass(t *testing.T) {
	for _, c := range benchdata.Stream(1000)[:100] {
		b, _ := json.Marshal(c)
		var got eval.Call
		if err := unmarshalFast(b, &got); err != nil {
			t.Fatalf("the first pass refused %s: %v", b, err)
		}
	}
	// Outside the first pass's subset: encoding/json decides.
	for _, tc := range []struct{ body, tool string }{
		{`{"tool":"a","tool":"b"}`, "b"},
		{`{"tool":"a","TOOL":"b"}`, "b"},
		{`{"Tool":"b"}`, "b"},
		{`{"tool":"b","args":{"x":1,"x":2}}`, "b"},
		{"{\"tool\":\"b\xff\"}", "b\ufffd"},
		{`{"tool":"b\ud800"}`, "b\ufffd"},
	} {
		var c eval.Call
		if err := unmarshalFast([]byte(tc.body), &c); err == nil {
			t.Errorf("the first pass took %s", tc.body)
		}
		c = eval.Call{}
		if err := decodeBody([]byte(tc.body), &c); err != nil || c.Tool != tc.tool {
			t.Errorf("%s: decoded %+v, %v: want tool %q, as encoding/json", tc.body, c, err, tc.tool)
		}
	}
	var c eval.Call
	err := decodeBody([]byte(`{"tool":"a","args":{"x":1},"nope":2}`), &c)
	if want := `json: unknown field "nope"`; err == nil || err.Error() != want {
		t.Errorf("unknown field: %v, want %s", err, want)
	}
}

// FuzzDecodeDifferential: any body decodes to what encoding/json decodes
// it to, or fails with encoding/json's error.
func FuzzDecodeDifferential(f *testing.F) {
	for _, c := range decodeCases() {
		if len(c) < 4096 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, body)
	})
}
