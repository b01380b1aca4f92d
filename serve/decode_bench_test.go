package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/internal/benchdata"
)

// decodeBodies are the peers workload's bodies of the session API's
// before (the call) and of Claude Code's hook endpoint (its PreToolUse).
func decodeBodies() (api, hook [][]byte) {
	for _, c := range benchdata.Stream(1000) {
		a, _ := json.Marshal(c)
		h, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": c.Cwd, "tool_name": c.Tool, "tool_input": c.Args})
		api, hook = append(api, a), append(hook, h)
	}
	return api, hook
}

// BenchmarkReadJSON is readJSON's cost per body of the session API's
// before on the peers workload: reading the body and decoding the call.
func BenchmarkReadJSON(b *testing.B) {
	api, _ := decodeBodies()
	u, _ := url.Parse("/v1/sessions/s/before")
	var body bytes.Reader
	w := &nullWriter{h: http.Header{}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		body.Reset(api[i%len(api)])
		r := http.Request{Method: "POST", URL: u, Body: io.NopCloser(&body), ContentLength: int64(body.Len())}
		var c eval.Call
		if !readJSON(w, &r, 1<<20, &c, false) {
			b.Fatal("not read")
		}
		i++
	}
}

// BenchmarkHookDecode is the hook endpoint's decoding of Claude Code's
// PreToolUse on the peers workload.
func BenchmarkHookDecode(b *testing.B) {
	_, hook := decodeBodies()
	host, _ := hooks.New("claude-code", hooks.Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := host.Decode(hook[i%len(hook)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

type nullWriter struct{ h http.Header }

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) WriteHeader(int)             {}
func (w *nullWriter) Write(b []byte) (int, error) { return len(b), nil }
