// Package jsonkind names the type of a JSON value the way celguard's error
// messages say it: "an object", "a string", "null"... ("tool must be a
// string, not a number"), and tells which strings encoding/json writes as
// they are (Plain).
package jsonkind

import (
	"bytes"
	"encoding/json"
)

// Of names the JSON type of a value decoded by encoding/json into an any
// (numbers as float64 or json.Number); a Go value of no JSON type is
// "a JSON value".
func Of(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a JSON value"
}

// OfRaw names the JSON type of an undecoded value by its first byte;
// empty (or all-space) raw is "nothing". raw is assumed to be valid JSON.
func OfRaw(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// Plain reports whether encoding/json writes s as it is between quotes:
// every byte is printable ASCII other than '"' and '\\', which JSON
// escapes, and '<', '>' and '&', which encoding/json escapes for HTML. Any
// other byte (a control character, DEL, the bytes of UTF-8, which
// encoding/json checks and may rewrite) makes it false: such a string is
// left to encoding/json. The hand-written encoders of the hot paths write
// a plain string themselves and every other through encoding/json.
func Plain(s string) bool {
	// Eight bytes at a time, w. Each test is the classic exact one:
	// (v - ones) &^ v has a high bit set in some byte exactly when v has a
	// zero byte (q, b, l, g, a: a byte of w is '"', '\\', '<', '>' or
	// '&'), (w - n*ones) &^ w when w has a byte below n (n <= 0x80), and
	// (w + ones) | w when w has a byte above 0x7e. A borrow or a carry out
	// of a byte that fails may flag a byte above it too, but no test flags
	// a word with no byte that fails (TestPlainWords holds this to the
	// byte test below).
	for len(s) >= 8 {
		t := s[:8]
		w := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		q, b, l, g, a := w^'"'*ones, w^'\\'*ones, w^'<'*ones, w^'>'*ones, w^'&'*ones
		bad := (w-0x20*ones)&^w | (w + ones | w) |
			(q-ones)&^q | (b-ones)&^b | (l-ones)&^l | (g-ones)&^g | (a-ones)&^a
		if bad&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ones and highs are the bytes 0x01 and 0x80 in every byte of a word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)
