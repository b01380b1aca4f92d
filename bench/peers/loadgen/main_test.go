package main

import (
	"encoding/json"
	"testing"
)

// TestVerdictReaders holds the in-place readers of the answers' verdicts
// to encoding/json's reading of the same answers: the answers the servers
// write, and answers of another layout (spaces, escapes, members in
// another order, other element counts), which must fall back to the
// decoder and read the same.
func TestVerdictReaders(t *testing.T) {
	api := []string{
		`{"verdict":"allow","phase":"before","tool":"Bash","decision_id":"4c97","session_id":"w0"}`,
		`{"verdict":"block","rule_id":"deny-rm-root","approval":{"rule_id":"x","outcome":"approved"}}` + "\n",
		`{"phase":"before","verdict":"ask"}`,
		`{ "verdict": "warn" }`,
		`{"verdict":"al\u006cow"}`,
		`{"verdict":"","tool":"x"}`,
		`{"verdict":"Allow"}`,
		`{"verdict":"allow"`,
		`not json`,
	}
	for _, a := range api {
		var d struct{ Verdict string }
		werr := json.Unmarshal([]byte(a), &d)
		got, err := apiVerdict([]byte(a))
		if (err == nil) != (werr == nil) || err == nil && got != d.Verdict {
			t.Errorf("apiVerdict(%s) = %q, %v; encoding/json reads %q, %v", a, got, err, d.Verdict, werr)
		}
	}
	opa := []string{
		`{"result":[0,0,"","allow"]}`,
		`{"result":[-50,8,"ask-force-push","ask"]}` + "\n",
		`{"result":[100,1,"deny, \"quoted\"","block"]}`,
		`{"result":[1.5,2,"r","block"]}`,
		`{"result": [0, 0, "", "allow"]}`,
		`{"result":[0,0,"","al\u006cow"]}`,
		`{"result":[0,0,"x","y","allow"]}`,
		`{"result":[0,"allow"]}`,
		`{"result":[0,0,"",7]}`,
		`{"other":1,"result":[0,0,"","halt"]}`,
		`{"result":[0,0,"","allow"]}x`,
		`{}`,
	}
	for _, a := range opa {
		var r struct{ Result []any }
		werr := json.Unmarshal([]byte(a), &r)
		want := ""
		if werr == nil && len(r.Result) == 4 {
			want, _ = r.Result[3].(string)
		} else {
			werr = errOPA
		}
		got, err := opaVerdict([]byte(a))
		if (err == nil) != (werr == nil) || err == nil && got != want {
			t.Errorf("opaVerdict(%s) = %q, %v; encoding/json reads %q, %v", a, got, err, want, werr)
		}
	}
}

var errOPA = json.Unmarshal([]byte("x"), new(any))
