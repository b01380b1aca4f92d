package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
)

// The request path reads bodies into reused buffers and encodes answers
// into them (readJSON, readBody, writeJSON). These tests hold the new path
// to the one it replaced, kept here as refReadJSON and refWriteJSON: the
// same bodies give the same status, the same answer bytes and the same
// decoded value.

// refWriteJSON is writeJSON as it was: json.Marshal, then a newline.
func refWriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorAnswer{errorBody{CodeInternalError, "cannot encode the answer: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// refReadJSON is readJSON as it was: io.ReadAll of the capped body, then
// a strict decoder.
func refReadJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, empty bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refWriteJSON(w, http.StatusRequestEntityTooLarge, errorAnswer{errorBody{CodeTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit)}})
		return false
	case err != nil:
		refWriteJSON(w, http.StatusBadRequest, errorAnswer{errorBody{CodeInvalidInput, "cannot read the body: " + err.Error()}})
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if empty {
			return true
		}
		refWriteJSON(w, http.StatusBadRequest, errorAnswer{errorBody{CodeInvalidInput, "the body is empty: it must be a JSON object"}})
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the JSON value")
		}
	}
	if err != nil {
		refWriteJSON(w, http.StatusBadRequest, errorAnswer{errorBody{CodeInvalidInput, "the body is not valid: " + err.Error()}})
		return false
	}
	return true
}

// streamDecisions are the decisions of the peers workload's stream, as the
// server's engine makes them (with the audit record), and a few answers
// of other shapes.
func streamAnswers(t *testing.T) []any {
	t.Helper()
	srv, err := New(Config{Engine: celguard.Config{Sources: func() ([]policy.Source, error) { return []policy.Source{benchdata.Source20()}, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	sess := srv.eng.NewSession("differential", nil)
	var out []any
	for _, c := range benchdata.Stream(1000) {
		d, err := sess.Before(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	content := "<script>&amp;\u2028"
	out = append(out,
		eval.Decision{Verdict: policy.Block, Reason: `<b>"quoted"</b> & more` + "\u2029\x00", Content: &content, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)},
		errorAnswer{errorBody{CodeInvalidInput, "a <message> & \"quotes\""}},
		map[string]string{"status": "ok"},
		AgentStatus{Ready: true, Version: "v", PolicyDigest: "sha256:x"},
		CommandAnswer{Stdout: "{\"a\":1}\n", Stderr: "\xff invalid utf-8", Exit: 2},
		map[string]any{"nan": math.NaN()},      // not encodable: 500
		map[string]any{"ch": make(chan int)},   // not encodable: 500
		[]any{nil, 1.5, "x", map[string]any{}}, // not an object
		strings.Repeat("long ", 20_000),        // a buffer past maxPooledBuffer
		json.RawMessage(`{"raw": [1, 2, 3]}`),  // compacted as Marshal does
		nil,
	)
	return out
}

// TestWriteJSONDifferential: every answer is the bytes json.Marshal gives
// and a newline, with the same status and headers as before.
func TestWriteJSONDifferential(t *testing.T) {
	for i, v := range streamAnswers(t) {
		for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable} {
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			refWriteJSON(want, status, v)
			writeJSON(got, status, v)
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || fmt.Sprint(got.Header()) != fmt.Sprint(want.Header()) {
				t.Fatalf("answer %d (%T): got %d %v %q, want %d %v %q", i, v, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
	}
}

// TestReadJSONDifferential: every body, well formed or not, within the
// bound or past it, with a true, a missing or a false Content-Length,
// decodes to the same value and answers the same as before.
func TestReadJSONDifferential(t *testing.T) {
	var bodies []string
	for _, c := range benchdata.Stream(1000)[:200] {
		b, _ := json.Marshal(c)
		bodies = append(bodies, string(b))
	}
	bodies = append(bodies,
		"", " \n\t", "{}", `{"tool": "Bash"}`, `{"tool": "Bash", "nope": 1}`, `{"tool": "Bash"} {"tool": "Bash"}`,
		`{"tool": "Bash"} x`, `{"tool": "Bash"}  `, `{"tool": 1}`, `{"tool": "Bash", "args": []}`, `{"tool": "Bash",`,
		`[1, 2]`, `null`, `"x"`, `{"tool": "\ud800"}`, "{\"tool\": \"a\xffb\"}", `{"tool": "Bash", "args": {"a": {"b": [1, 2, {"c": null}]}}}`,
		`{"tool": "Bash", "args": {"command": "`+strings.Repeat("x", 900)+`"}}`,  // within the bound
		`{"tool": "Bash", "args": {"command": "`+strings.Repeat("x", 1100)+`"}}`, // past it
	)
	const limit = 1 << 10
	lengths := map[string]func(int) int64{
		"true":    func(n int) int64 { return int64(n) },
		"unknown": func(int) int64 { return -1 },
		"short":   func(n int) int64 { return int64(n / 2) },
		"huge":    func(int) int64 { return 1 << 40 },
	}
	for i, body := range bodies {
		for name, length := range lengths {
			for _, empty := range []bool{false, true} {
				req := func() *http.Request {
					r := httptest.NewRequest("POST", "/v1/sessions/s/before", strings.NewReader(body))
					r.ContentLength = length(len(body))
					if r.ContentLength < 0 || r.ContentLength > int64(len(body)) {
						r.Body = io.NopCloser(strings.NewReader(body)) // the reader ends where the body does
					} else {
						r.Body = io.NopCloser(strings.NewReader(body[:r.ContentLength])) // as net/http cuts it
					}
					return r
				}
				var wantCall, gotCall eval.Call
				want, got := httptest.NewRecorder(), httptest.NewRecorder()
				wantOK := refReadJSON(want, req(), limit, &wantCall, empty)
				gotOK := readJSON(got, req(), limit, &gotCall, empty)
				wj, _ := json.Marshal(wantCall)
				gj, _ := json.Marshal(gotCall)
				if gotOK != wantOK || got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || !bytes.Equal(gj, wj) {
					t.Fatalf("body %d, Content-Length %s, empty %v: got %v %d %q %s, want %v %d %q %s",
						i, name, empty, gotOK, got.Code, got.Body, gj, wantOK, want.Code, want.Body, wj)
				}
			}
		}
	}
}

// TestBuffersNotShared: a decoded call keeps nothing of the buffer its
// body was read into, which the next request reuses.
func TestBuffersNotShared(t *testing.T) {
	var calls []eval.Call
	for i := range 50 {
		body := fmt.Sprintf(`{"tool": "T%03d", "args": {"command": "c%03d", "raw": ["r%03d"]}, "cwd": "/w%03d", "call_id": "id%03d"}`, i, i, i, i, i)
		var c eval.Call
		if !readJSON(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(body)), 1<<20, &c, false) {
			t.Fatal("not read")
		}
		calls = append(calls, c)
	}
	for i, c := range calls {
		n := fmt.Sprintf("%03d", i)
		if c.Tool != "T"+n || c.Args["command"] != "c"+n || c.Args["raw"].([]any)[0] != "r"+n || c.Cwd != "/w"+n || c.ID != "id"+n {
			t.Fatalf("call %d changed after later requests: %+v", i, c)
		}
	}
}
