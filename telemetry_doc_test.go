package celguard_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/otlptest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/telemetry"
)

// docEndpoint is the collector's endpoint in docs/telemetry.md's Go block,
// which docTelemetryGo takes as its parameter instead.
const docEndpoint = `"http://127.0.0.1:4318"`

// docTelemetryGo is docs/telemetry.md's Go block as written, between the
// markers (TestTelemetryDocGo checks it is), its collector's endpoint
// collector.
func docTelemetryGo(ctx context.Context, collector string) (eval.Decision, error) {
	// doc:begin
	guard, err := celguard.Config{
		Telemetry: &telemetry.Config{Endpoint: collector, Protocol: telemetry.ProtocolHTTP,
			Who: telemetry.WhoAmI("", "my-agent", "1.2.0")},
	}.Load(ctx)
	if err != nil {
		return eval.Decision{}, err
	}
	defer guard.Close() // flushes, within Config.FlushTimeout
	return guard.NewSession("session-1", nil).Before(ctx, eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}})
	// doc:end
}

// TestTelemetryDocGo runs docs/telemetry.md's Go block as written
// (docTelemetryGo holds it, compared here line by line, its endpoint
// pointed at a test collector): the built-in policies block the call, and
// the collector receives its span, naming the rule and the agent host.
func TestTelemetryDocGo(t *testing.T) {
	doc, err := os.ReadFile("docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/telemetry.md has %d Go blocks, want the one this test runs", len(blocks))
	}
	src, err := os.ReadFile("telemetry_doc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)// doc:begin\n(.*?)\n\s*// doc:end`).FindStringSubmatch(string(src))
	if m == nil {
		t.Fatal("no doc:begin ... doc:end in telemetry_doc_test.go")
	}
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	want, got := lines(strings.Replace(blocks[0][1], docEndpoint, "collector", 1)), lines(m[1])
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("docTelemetryGo is not the doc's Go block:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	t.Setenv("HOME", t.TempDir()) // no user layer or judges of this machine
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Chdir(t.TempDir()) // no project layer
	col := otlptest.Start(t, telemetry.ProtocolHTTP, otlptest.Accept)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := docTelemetryGo(ctx, col.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != policy.Block {
		t.Fatalf("the doc's call: %s, want block", d.Verdict)
	}
	spans := col.Decisions()
	if len(spans) != 1 || spans[0].Attr("celguard.rule.id") != d.RuleID || spans[0].Attr("celguard.verdict") != "block" ||
		spans[0].Resource["celguard.agent.host"] != "my-agent" || spans[0].Resource["celguard.agent.version"] != "1.2.0" {
		t.Fatalf("the collector received %+v, want the block's span by %s from my-agent 1.2.0", spans, d.RuleID)
	}
}
