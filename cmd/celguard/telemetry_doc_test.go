package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/celguard/celguard/internal/otlptest"
	"github.com/celguard/celguard/telemetry"
)

// TestTelemetryDocCommands runs every command block of docs/telemetry.md
// as written, a test collector (internal/otlptest, on a free loopback
// port) standing in for the documented one: the block of exports and
// `echo ... | celguard eval` (its endpoint the test collector's), whose
// block the collector receives; `celguard serve --otlp-endpoint ...` (the
// endpoint the test collector's, on a free port), whose decision the
// collector receives once it stops; and the documented collector itself,
// which is checked to listen where the other blocks send (gRPC on 4317,
// HTTP on 4318). The Go block is run by TestTelemetryDocGo in the root
// package; a block of another kind fails the test.
func TestTelemetryDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "telemetry.md"))
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, m := range regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		lang, block := m[1], m[2]
		switch {
		case lang == "go":
			ran["go"]++ // TestTelemetryDocGo
		case lang == "" || lang == "text":
			// Output (the sample trace), not a command.
		case lang == "sh" && strings.Contains(block, "| celguard eval"):
			t.Run("eval", func(t *testing.T) { docEvalBlock(t, block) })
			ran["eval"]++
		case lang == "sh" && strings.HasPrefix(block, "celguard serve "):
			t.Run("serve", func(t *testing.T) { docServeBlock(t, block) })
			ran["serve"]++
		case lang == "sh" && strings.HasPrefix(block, "docker run "):
			// The collector: the test's stands in for it, on the ports
			// the other blocks send to.
			for _, p := range []string{"-p 4317:4317", "-p 4318:4318", "otel/opentelemetry-collector"} {
				if !strings.Contains(block, p) {
					t.Errorf("the collector's block does not say %q: %s", p, block)
				}
			}
			ran["collector"]++
		default:
			t.Errorf("a %q block the test does not know how to run:\n%s", lang, block)
		}
	}
	for _, k := range []string{"eval", "serve", "collector", "go"} {
		if ran[k] != 1 {
			t.Errorf("docs/telemetry.md has %d %s blocks, want 1", ran[k], k)
		}
	}
}

// docEvalBlock runs the block of exports and `echo ... | celguard eval`:
// its exports set the environment (the endpoint pointed at a test
// collector speaking the protocol the block names) and its `echo ... |
// celguard eval` decides, and the collector receives the decision's span
// naming the rule that blocked.
func docEvalBlock(t *testing.T, block string) {
	telemetryEnv(t, "", "") // a clean environment and a temporary home; the block sets the rest
	env := map[string]string{}
	var pipeline string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "export "):
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			if !ok {
				t.Fatalf("export without a value: %q", line)
			}
			env[k] = v
		case strings.HasPrefix(line, "echo '"):
			pipeline = line
		case line != "":
			t.Fatalf("a line the test does not know how to run: %q", line)
		}
	}
	for _, k := range []string{"CELGUARD_TELEMETRY", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if env[k] == "" {
			t.Fatalf("the block does not export %s", k)
		}
	}
	col := otlptest.Start(t, env["OTEL_EXPORTER_OTLP_PROTOCOL"], otlptest.Accept)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = col.Endpoint // the doc's port may be taken here
	for k, v := range env {
		t.Setenv(k, v)
	}
	pm := regexp.MustCompile(`^echo '([^']*)' \| (celguard .*)$`).FindStringSubmatch(pipeline)
	if pm == nil {
		t.Fatalf("not an echo ... | celguard command: %q", pipeline)
	}
	var out, errb bytes.Buffer
	args := strings.Fields(pm[2])
	if code := run(args[1:], strings.NewReader(pm[1]+"\n"), &out, &errb); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", pm[2], code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `"verdict":"block"`) {
		t.Fatalf("%s did not block: %s", pm[2], out.String())
	}
	spans := col.Decisions()
	if len(spans) != 1 || spans[0].Attr("celguard.verdict") != "block" || spans[0].Attr("celguard.rule.id") == "" || spans[0].Attr("celguard.rule.file") == "" {
		t.Fatalf("the collector received %d spans, want the block's naming its rule: %+v", len(spans), spans)
	}
	if len(col.Logs()) != 1 {
		t.Fatalf("the collector received %d log records, want 1", len(col.Logs()))
	}
}

// docServeBlock runs `celguard serve --otlp-endpoint URL --otlp-protocol
// P` as written, the endpoint the test collector's (speaking P) and on a
// free port: a call it blocks reaches the collector as a span when the
// server stops.
func docServeBlock(t *testing.T, block string) {
	args := strings.Fields(strings.TrimSpace(block))
	proto := ""
	for i, a := range args {
		if a == "--otlp-protocol" && i+1 < len(args) {
			proto = args[i+1]
		}
	}
	if proto != telemetry.ProtocolGRPC && proto != telemetry.ProtocolHTTP {
		t.Fatalf("the serve block names no protocol: %q", block)
	}
	col := otlptest.Start(t, proto, otlptest.Accept)
	endpoint := false
	for i, a := range args {
		if a == "--otlp-endpoint" && i+1 < len(args) {
			args[i+1], endpoint = col.Endpoint, true // the doc's port may be taken here
		}
	}
	if !endpoint {
		t.Fatalf("the serve block names no --otlp-endpoint: %q", block)
	}
	srv := startServe(t, append(args[2:], "--listen", "127.0.0.1:0")...)
	res, err := http.Post(srv.url+"/v1/sessions/doc/before", "application/json", strings.NewReader(`{"tool": "Bash", "args": {"command": "rm -rf /"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	srv.stop(t)
	spans := col.Decisions()
	if len(spans) != 1 || spans[0].Attr("celguard.verdict") != "block" || spans[0].Attr("celguard.rule.id") == "" || spans[0].Attr("gen_ai.conversation.id") != "doc" {
		t.Fatalf("the collector received %+v, want the block's span", spans)
	}
}
