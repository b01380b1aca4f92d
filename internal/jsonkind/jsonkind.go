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
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
