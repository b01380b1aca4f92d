package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/celguard/celguard/internal/otlptest"
	"github.com/celguard/celguard/store/statedir"
	"github.com/celguard/celguard/telemetry"
)

// telemetryEnv turns telemetry on through the environment, as a user
// does, towards endpoint over proto.
func telemetryEnv(t *testing.T, endpoint, proto string) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CELGUARD_TELEMETRY", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("TRACEPARENT", "")
	t.Chdir(t.TempDir())
}

// TestEvalTelemetry: `celguard eval` with CELGUARD_TELEMETRY=otlp sends its
// decision's span and record, over both protocols.
func TestEvalTelemetry(t *testing.T) {
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTP} {
		t.Run(proto, func(t *testing.T) {
			col := otlptest.Start(t, proto, otlptest.Accept)
			telemetryEnv(t, col.Endpoint, proto)
			var out, errb bytes.Buffer
			p := evalParams{stdio: stdio{stdin: strings.NewReader(`{"tool": "Bash", "args": {"command": "rm -rf /"}}`), stdout: &out, stderr: &errb}}
			require.Equal(t, exitOK, runEval(context.Background(), p), errb.String())
			require.Contains(t, out.String(), `"verdict":"block"`)
			spans := col.Spans()
			require.Len(t, spans, 1)
			require.Equal(t, "block", spans[0].Attr("celguard.verdict"))
			require.NotEmpty(t, spans[0].Attr("celguard.rule.id"))
			require.NotEmpty(t, spans[0].Attr("celguard.rule.file"))
			require.Len(t, col.Logs(), 1)
			require.NotEmpty(t, spans[0].Resource["host.name"])
		})
	}
}

// TestHookTelemetry: a hook process joins the host's trace (TRACEPARENT),
// says which host it decides for, and answers the same when the collector
// is down, refusing or hanging.
func TestHookTelemetry(t *testing.T) {
	event := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`
	hook := func(t *testing.T) string {
		var out, errb bytes.Buffer
		p := hookParams{hookOptions: hookOptions{stateDir: t.TempDir(), approve: true}, timeout: 10 * time.Second,
			keepDays: 7, maxStateBytes: statedir.DefaultMaxStateBytes,
			stdio: stdio{stdin: strings.NewReader(event), stdout: &out, stderr: &errb}}
		require.Equal(t, 0, runHook(context.Background(), "claude-code", p), errb.String())
		require.Empty(t, errb.String(), "an export failure is not the host's to show")
		return out.String()
	}
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTP} {
		t.Run(proto, func(t *testing.T) {
			col := otlptest.Start(t, proto, otlptest.Accept)
			telemetryEnv(t, col.Endpoint, proto)
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			t.Setenv("TRACEPARENT", "00-"+traceID+"-00f067aa0ba902b7-01")
			want := hook(t)
			require.Contains(t, want, `"permissionDecision":"deny"`)
			spans := col.Decisions()
			require.Len(t, spans, 1)
			// The hook's state files are its state store: the decision's
			// commit to them is a child span of the decision's.
			commits := col.SpansNamed("celguard.store.commit")
			require.Len(t, commits, 1)
			require.Equal(t, "committed", commits[0].Attr("celguard.store.outcome"))
			require.Equal(t, spans[0].SpanId, commits[0].ParentSpanId)
			require.Equal(t, traceID, hex.EncodeToString(spans[0].TraceId))
			require.Equal(t, "00f067aa0ba902b7", hex.EncodeToString(spans[0].ParentSpanId))
			require.Equal(t, "claude-code", spans[0].Resource["celguard.agent.host"])
			require.Equal(t, "s", spans[0].Attr("gen_ai.conversation.id"))

			for name, mode := range map[string]otlptest.Mode{"refusing": otlptest.Refuse, "hanging": otlptest.Hang} {
				t.Run(name, func(t *testing.T) {
					bad := otlptest.Start(t, proto, mode)
					t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", bad.Endpoint)
					require.Equal(t, want, hook(t))
				})
			}
			t.Run("down", func(t *testing.T) {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
				require.Equal(t, want, hook(t))
			})
		})
	}
}

// TestServeTelemetry: `celguard serve --otlp-endpoint` sends the decisions
// it makes over HTTP, and flushes them when it stops.
func TestServeTelemetry(t *testing.T) {
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTP} {
		t.Run(proto, func(t *testing.T) {
			col := otlptest.Start(t, proto, otlptest.Accept)
			dir := t.TempDir()
			pol := filepath.Join(dir, "p.yaml")
			require.NoError(t, os.WriteFile(pol, []byte("apiVersion: celguard.dev/v1\nkind: Policy\nname: p\nrules:\n  - id: no-deploy\n    match: {tools: [Deploy]}\n    verdict: block\n"), 0o644))
			srv := startServe(t, "--listen", "127.0.0.1:0", "--policy", pol, "--reload-interval", "0",
				"--otlp-endpoint", col.Endpoint, "--otlp-protocol", proto)
			res, err := http.Post(srv.url+"/v1/sessions/s/before", "application/json", strings.NewReader(`{"tool":"Deploy"}`))
			require.NoError(t, err)
			res.Body.Close()
			srv.stop(t)
			spans := col.Decisions()
			require.Len(t, spans, 1)
			require.Equal(t, "no-deploy", spans[0].Attr("celguard.rule.id"))
			require.Equal(t, "block", spans[0].Attr("celguard.verdict"))
			require.Equal(t, "s", spans[0].Attr("gen_ai.conversation.id"))
			require.Len(t, col.Logs(), 1)
			require.NotNil(t, col.Metrics()["celguard_decisions_total"])
		})
	}
}
