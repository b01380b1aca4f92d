package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/otlptest"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/telemetry"
)

// TestMetricsBeyondDecisions: judge outcomes, failed decisions by code and
// store errors reach a collector under serve's Prometheus names (and the
// judge's outcome under celguard_judge_outcomes_total), from the decisions
// that carry them.
func TestMetricsBeyondDecisions(t *testing.T) {
	col := otlptest.Start(t, telemetry.ProtocolHTTP, otlptest.Accept)
	tel, err := telemetry.New(context.Background(), telemetry.Config{Endpoint: col.Endpoint, Protocol: telemetry.ProtocolHTTP, FlushTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	evs := []eval.Decision{
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Allow, Judge: &eval.JudgeRecord{Name: "risk", Verdict: policy.Allow}},
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Allow, Judge: &eval.JudgeRecord{Name: "risk", Verdict: policy.Allow, Cached: true}},
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Ask, Judge: &eval.JudgeRecord{Name: "risk", Verdict: policy.Ask, Error: "timed out"}},
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Block, Code: eval.CodeStoreUnavailable, Error: "redis: connection refused"},
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Block, Code: "policy_error", Error: "no such key: x"},
		{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Block, Code: "destructive"},
	}
	for _, d := range evs {
		if err := tel.WriteDecision(context.Background(), &eval.DecisionEvent{Decision: d, Call: eval.Call{Tool: d.Tool}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tel.Close(); err != nil {
		t.Fatal(err)
	}
	m := col.Metrics()
	sums := func(name string) map[string]int64 {
		t.Helper()
		got := map[string]int64{}
		if m[name] == nil || m[name].GetSum() == nil {
			t.Fatalf("%s not exported as a sum", name)
		}
		for _, dp := range m[name].GetSum().DataPoints {
			key := ""
			for _, kv := range dp.Attributes {
				v := kv.Value.GetStringValue()
				if kv.Value.GetValue() != nil && v == "" {
					if kv.Value.GetBoolValue() {
						v = "true"
					} else {
						v = "false"
					}
				}
				key += kv.Key + "=" + v + " "
			}
			got[key] += dp.GetAsInt()
		}
		return got
	}
	check := func(name string, want map[string]int64) {
		t.Helper()
		got := sums(name)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s{%s} = %d, want %d (all: %v)", name, k, got[k], w, got)
			}
		}
	}
	check("celguard_judge_outcomes_total", map[string]int64{
		"cached=false failed=false judge=risk verdict=allow ": 1,
		"cached=true failed=false judge=risk verdict=allow ":  1,
		"cached=false failed=true judge=risk verdict=ask ":    1,
	})
	check("celguard_faults_total", map[string]int64{"code=store_unavailable ": 1, "code=policy_error ": 1})
	check("celguard_store_errors_total", map[string]int64{"": 1})
}
