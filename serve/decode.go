package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/celguard/celguard/eval"
)

// The bodies of the decision routes (a call, an after-event, a model
// input or output) are decoded about twice as fast by a first pass with
// github.com/go-json-experiment/json, the staging module of Go's
// encoding/json/v2, under its strict default semantics. That pass only
// ever accepts: whatever it refuses, for whatever reason, is decoded again
// by encoding/json exactly as before (decodeStd), whose answer (the value,
// or the error the client sees) is the one kept. So a body is refused only
// when encoding/json refuses it, with encoding/json's message.
//
// The first pass accepts a subset of what encoding/json accepts, the
// subset where the two decode to the same value: field names spelled
// exactly as the tags (encoding/json also takes case variants and the
// last one wins), no duplicate name anywhere (encoding/json keeps the last
// one, and merges a repeated object field), valid UTF-8 and escapes
// (encoding/json replaces what is not with U+FFFD), numbers within
// float64, no unknown field, one value and nothing after it. Everything
// outside it falls back: the host's own parser (JSON.parse keeps the last
// duplicate, as encoding/json) and serve's therefore still read a body
// alike. TestDecodeDifferential and FuzzDecodeDifferential hold decodeBody
// to decodeStd; TestDecodeFirstPass holds the first pass to the stream's
// bodies, and to its refusals.

// fastOptions are the first pass's options: v2's defaults (exact names,
// duplicate names and invalid UTF-8 refused) and unknown fields refused
// (as Decoder.DisallowUnknownFields). Its errors are never shown.
var fastOptions = jsonv2.RejectUnknownMembers(true)

// decodeBody decodes body, one JSON value and no unknown field, into v,
// which points to a zero value; the error says what is wrong and where.
// The decision routes' bodies go through the first pass; every other body,
// and every body it refuses, through encoding/json.
func decodeBody(body []byte, v any) error {
	switch p := v.(type) {
	case *eval.Call:
		return decodeFast(body, p)
	case *afterRequest:
		return decodeFast(body, p)
	case *eval.Input:
		return decodeFast(body, p)
	case *outputRequest:
		return decodeFast(body, p)
	}
	return decodeStd(body, v)
}

// decodeFast decodes body into *p by the first pass, or, when it refuses
// the body, by decodeStd into a zero value: what the first pass set before
// it refused is dropped, as if it had never run.
func decodeFast[T any](body []byte, p *T) error {
	if unmarshalFast(body, p) == nil {
		return nil
	}
	var zero T
	*p = zero
	return decodeStd(body, p)
}

// unmarshalFast is the first pass.
func unmarshalFast(body []byte, v any) error {
	return jsonv2.Unmarshal(body, v, fastOptions)
}

// decodeStd is the decoding of every body before the first pass, and the
// one whose answer counts: encoding/json's strict decoder, then nothing
// but white space after the value.
func decodeStd(body []byte, v any) error {
	// The decoder copies what it keeps (strings, numbers, raw messages):
	// nothing decoded points into body, which is reused.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the JSON value")
		}
	}
	return err
}
