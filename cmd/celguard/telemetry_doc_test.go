package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/celguard/celguard/internal/otlptest"
)

// TestTelemetryDocCommands runs the first command block of docs/telemetry.md
// ("Turning it on") as written: its exports set the environment (the
// endpoint pointed at a test collector speaking the protocol the block
// names) and its `echo ... | celguard eval` decides, and the collector
// receives the decision's span naming the rule that blocked.
func TestTelemetryDocCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "telemetry.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	at := strings.Index(sec, "\n## Turning it on")
	if at < 0 {
		t.Fatal("docs/telemetry.md has no \"Turning it on\" section")
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(sec[at:])
	if m == nil {
		t.Fatal("no sh block in \"Turning it on\"")
	}
	telemetryEnv(t, "", "") // a clean environment and a temporary home; the block sets the rest
	env := map[string]string{}
	var pipeline string
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
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
