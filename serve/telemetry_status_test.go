package serve_test

import (
	"testing"

	"github.com/celguard/celguard/internal/otlptest"
	"github.com/celguard/celguard/serve"
	"github.com/celguard/celguard/telemetry"
)

// TestStatusDetailsTelemetry: with telemetry on, the operator's
// /v1/status/details reports what the export queued, sent and dropped
// (the spans of the decisions made so far among them); with it off, it
// says nothing about telemetry.
func TestStatusDetailsTelemetry(t *testing.T) {
	col := otlptest.Start(t, telemetry.ProtocolHTTP, otlptest.Accept)
	f := newFixture(t, func(c *serve.Config) {
		withOperator(c)
		c.Engine.Telemetry = &telemetry.Config{Endpoint: col.Endpoint, Protocol: telemetry.ProtocolHTTP}
	})
	t.Cleanup(func() { _ = f.srv.Guard().Close() })
	for _, cmd := range []string{"rm -rf /", "ls"} {
		if a := f.do("POST", "/v1/sessions/s1/before", map[string]any{"tool": "Bash", "args": map[string]any{"command": cmd}}); a.status != 200 {
			t.Fatalf("%s: status %d", cmd, a.status)
		}
	}
	st := f.op("GET", "/v1/status/details", nil).json(t)
	tel, ok := st["telemetry"].(map[string]any)
	if !ok {
		t.Fatalf("no telemetry in /v1/status/details: %v", st)
	}
	for _, k := range []string{"spans", "logs"} {
		if tel[k] != 2.0 {
			t.Errorf("telemetry.%s = %v, want 2 (two decisions)", k, tel[k])
		}
	}
	for _, k := range []string{"spans_exported", "logs_exported", "spans_dropped", "logs_dropped"} {
		if _, ok := tel[k].(float64); !ok {
			t.Errorf("telemetry.%s missing: %v", k, tel)
		}
	}

	off := newFixture(t, withOperator)
	if st := off.op("GET", "/v1/status/details", nil).json(t); st["telemetry"] != nil {
		t.Errorf("telemetry off, yet /v1/status/details says %v", st["telemetry"])
	}
}
