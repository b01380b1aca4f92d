package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/internal/benchdata"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/serve"
)

// BenchmarkHandler is the handler's cost per decision on the peers
// workload (the 20-rule policy, its 1,000-call stream), without a network:
// the session API's before and Claude Code's hook endpoint.
func BenchmarkHandler(b *testing.B) {
	srv, err := serve.New(serve.Config{Engine: celguard.Config{Sources: func() ([]policy.Source, error) { return []policy.Source{benchdata.Source20()}, nil }}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	calls := benchdata.Stream(1000)
	api := make([][]byte, len(calls))
	hook := make([][]byte, len(calls))
	for i, c := range calls {
		api[i], _ = json.Marshal(c)
		hook[i], _ = json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "cwd": c.Cwd, "tool_name": c.Tool, "tool_input": c.Args})
	}
	for _, bc := range []struct {
		name string
		path string
		body [][]byte
	}{{"api-before", "/v1/sessions/s/before", api}, {"hook-claude-code", "/v1/hooks/claude-code", hook}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				req := httptest.NewRequest("POST", bc.path, bytes.NewReader(bc.body[i%len(bc.body)]))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
				i++
			}
			// CPU time is steadier than wall time on a loaded machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(i), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
