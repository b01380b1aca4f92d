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
func telemetryEnv(t testing.TB, endpoint, proto string) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CELGUARD_TELEMETRY", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("TRACEPARENT", "")
	t.Setenv("CELGUARD_DAEMON", "off") // in process: TestDaemonExportsTelemetry has the daemon's export
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

// BenchmarkHookTelemetry is what telemetry costs one hook call (in
// process, the daemon off; its package init aside): the export off; on,
// to a collector that reads and discards; to an endpoint where nothing
// listens (dead); and to a collector that never answers (hanging), which
// the flush's bound (telemetry.DefaultFlushTimeout) cuts off. Each call
// opens the export, decides, writes its answer and flushes, as a hook
// process does:
//
//	go test -run '^$' -bench BenchmarkHookTelemetry -benchmem ./cmd/celguard
func BenchmarkHookTelemetry(b *testing.B) {
	event := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`
	dead := "http://127.0.0.1:1"
	for _, v := range []struct {
		name string
		mode otlptest.Mode
	}{{"off", -1}, {"discard", otlptest.Discard}, {"dead", -2}, {"hanging", otlptest.Hang}} {
		b.Run(v.name, func(b *testing.B) {
			switch v.mode {
			case -1:
				telemetryEnv(b, "", "")
				b.Setenv("CELGUARD_TELEMETRY", "")
			case -2:
				telemetryEnv(b, dead, telemetry.ProtocolHTTP)
			default:
				telemetryEnv(b, otlptest.Start(b, telemetry.ProtocolHTTP, v.mode).Endpoint, telemetry.ProtocolHTTP)
			}
			b.Setenv("CELGUARD_DAEMON", "off")
			stateDir := b.TempDir()
			b.ReportAllocs()
			for b.Loop() {
				var out, errb bytes.Buffer
				p := hookParams{hookOptions: hookOptions{stateDir: stateDir, approve: true}, timeout: 10 * time.Second,
					keepDays: 7, maxStateBytes: statedir.DefaultMaxStateBytes,
					stdio: stdio{stdin: strings.NewReader(event), stdout: &out, stderr: &errb}}
				if code := runHook(context.Background(), "claude-code", p); code != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) {
					b.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
				}
			}
		})
	}
}

// TestDaemonExportsTelemetry: with telemetry on, the hook still goes
// through the decision daemon, which exports each decision it makes for
// the hook: in the hook's trace (its TRACEPARENT, sent with the event),
// with the hook's repository, host and agent version on the span and in
// the record's who; never in the trace of the hook that started it. The
// first call, decided in process, exports itself.
func TestDaemonExportsTelemetry(t *testing.T) {
	f := newDaemonFixture(t, 10, false)
	col := otlptest.Start(t, telemetry.ProtocolHTTP, otlptest.Accept)
	t.Setenv("CELGUARD_TELEMETRY", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", telemetry.ProtocolHTTP)
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("CELGUARD_AGENT_VERSION", "2.0.1")
	const first, second = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
	t.Setenv("TRACEPARENT", "00-"+first+"-00f067aa0ba902b7-01")
	ok, out := f.hook("claude-code", f.event("claude-code", "s1", "ls"))
	require.True(t, ok, out)
	require.EqualValues(t, 1, f.inProc.Load(), "no daemon yet: decided in process")
	f.waitDaemon()

	t.Setenv("TRACEPARENT", "00-"+second+"-b7ad6b7169203331-01")
	ok, out = f.hook("claude-code", f.event("claude-code", "s1", "rm -rf /tmp/x"))
	require.False(t, ok, out)
	require.EqualValues(t, 1, f.inProc.Load(), "the daemon decided the second call")

	// The daemon's batch is exported within the SDK's schedule (5 s).
	var theirs []otlptest.Span
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		theirs = nil
		for _, sp := range col.Decisions() {
			if hex.EncodeToString(sp.TraceId) == second {
				theirs = append(theirs, sp)
			}
		}
		if len(theirs) > 0 {
			break
		}
	}
	require.Len(t, theirs, 1, "the daemon's decision, in the second hook's trace")
	sp := theirs[0]
	require.Equal(t, "b7ad6b7169203331", hex.EncodeToString(sp.ParentSpanId))
	require.Equal(t, "no-rm", sp.Attr("celguard.rule.id"))
	require.Equal(t, "claude-code", sp.Attr("celguard.agent.host"))
	require.Equal(t, "2.0.1", sp.Attr("celguard.agent.version"))
	require.Equal(t, f.repo, sp.Attr("celguard.repository.root"))
	require.Empty(t, sp.Resource["celguard.repository.root"], "the daemon's resource is its machine and user")
	require.NotEmpty(t, sp.Resource["host.name"])

	var mine int
	for _, sp := range col.Decisions() {
		if hex.EncodeToString(sp.TraceId) == first {
			mine++
			require.Equal(t, "claude-code", sp.Resource["celguard.agent.host"], "decided in process: the hook's resource")
		}
	}
	require.Equal(t, 1, mine, "the first call's span, exported by the hook itself; none of the daemon's in its trace")
	logs := col.Logs()
	var who bool
	for _, lr := range logs {
		if hex.EncodeToString(lr.TraceId) == second {
			who = strings.Contains(lr.Body.GetStringValue(), `"agent_host":"claude-code","agent_version":"2.0.1"`) &&
				strings.Contains(lr.Body.GetStringValue(), `"repo_root":`)
		}
	}
	require.True(t, who, "the daemon's record says the hook's repository, host and version: %v", logs)
}
