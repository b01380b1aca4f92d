package main

import "testing"

func TestInsideAgent(t *testing.T) {
	for _, m := range agentMarkers {
		t.Setenv(m.name, "")
	}
	// What users set in their own shells to configure a host is no marker.
	for _, v := range []string{"CLAUDE_CODE_USE_BEDROCK", "CODEX_HOME", "CURSOR_API_KEY", "GEMINI_API_KEY"} {
		t.Setenv(v, "1")
	}
	if name, _, ok := insideAgent(); ok {
		t.Fatalf("insideAgent found %s with no marker set", name)
	}
	for _, m := range agentMarkers {
		t.Run(m.name, func(t *testing.T) {
			t.Setenv(m.name, "1")
			name, host, ok := insideAgent()
			if !ok || name != m.name || host != m.host {
				t.Fatalf("insideAgent() = %q, %q, %v; want %q, %q, true", name, host, ok, m.name, m.host)
			}
		})
	}
}
