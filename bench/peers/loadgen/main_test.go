package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
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

// responses are answers as the servers write them and answers of other
// layouts, for readResponse's differential test and fuzz seeds.
var responses = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\nContent-Length: 20\r\n\r\n{\"verdict\":\"allow\"}\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\nConnection: close\r\n\r\nerror",
	"HTTP/1.1 200\r\ncontent-length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Length:  3 \r\n\r\nabcdef",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
	"HTTP/1.1 2x0 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200\rX\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n Content-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nX-A: b\r\n\tfolded\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 1",
	"",
}

// TestReadResponseAgreesWithNetHTTP holds the lean client's reader to
// net/http's: an answer it reads has net/http's status, body and
// connection close, and every answer of the servers' layout is read.
func TestReadResponseAgreesWithNetHTTP(t *testing.T) {
	for i, r := range responses {
		ok := checkReadResponse(t, []byte(r))
		if i < 5 && !ok {
			t.Errorf("readResponse refused %q", r)
		}
	}
	// Back to back on one connection, in a reused buffer.
	br := bufio.NewReader(strings.NewReader(responses[0] + responses[3] + responses[0]))
	var buf []byte
	for _, want := range []string{"{\"verdict\":\"allow\"}\n", "{}", "{\"verdict\":\"allow\"}\n"} {
		status, b, keep, err := readResponse(br, buf)
		if err != nil || status != 200 || !keep || string(b) != want {
			t.Fatalf("readResponse = %d, %q, %v, %v; want 200, %q, true", status, b, keep, err, want)
		}
		buf = b
	}
	sr := strings.NewReader("")
	if n := testing.AllocsPerRun(100, func() {
		sr.Reset(responses[0])
		br.Reset(sr)
		_, buf, _, _ = readResponse(br, buf)
	}); n != 0 {
		t.Errorf("readResponse allocates %v times per answer, want 0", n)
	}
}

// checkReadResponse reports whether readResponse reads b, and fails t
// when it reads another answer than net/http's parser does.
func checkReadResponse(t *testing.T, b []byte) bool {
	status, body, keep, err := readResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil {
		return false
	}
	res, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if herr != nil {
		t.Fatalf("readResponse read %q, which net/http refuses: %v", b, herr)
	}
	hb, herr := io.ReadAll(res.Body)
	if herr != nil || res.StatusCode != status || !bytes.Equal(hb, body) || res.Close && keep {
		t.Fatalf("readResponse(%q) = %d, %q, keep %v; net/http: %d, %q, close %v, %v", b, status, body, keep, res.StatusCode, hb, res.Close, herr)
	}
	return true
}

func FuzzReadResponse(f *testing.F) {
	for _, r := range responses {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkReadResponse(t, b) })
}
