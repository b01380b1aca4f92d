package telemetry_test

import (
	"context"
	"slices"
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
	asked := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	answered := asked.Add(250 * time.Millisecond)
	for i, d := range evs {
		ev := &eval.DecisionEvent{Decision: d, Call: eval.Call{Tool: d.Tool}}
		if i == 0 {
			// The judge was asked (its answer not cached), and the
			// decision committed after a conflict.
			ev.JudgeStart, ev.JudgeEnd = asked, answered
			ev.Commits = []eval.StoreCommit{{Outcome: eval.StoreConflict, Entries: 1, Writes: 1}, {Outcome: eval.StoreCommitted, Entries: 1, Writes: 1}}
		}
		if d.Code == eval.CodeStoreUnavailable {
			ev.Commits = []eval.StoreCommit{{Outcome: eval.StoreUnavailable, Entries: 1}}
		}
		if err := tel.WriteDecision(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	tel.Reloaded(true)
	tel.Reloaded(true)
	tel.Reloaded(false)
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
	check("celguard_store_commits_total", map[string]int64{"outcome=committed ": 1, "outcome=conflict ": 1, "outcome=unavailable ": 1})
	check("celguard_policy_reloads_total", map[string]int64{"result=ok ": 2, "result=error ": 1})
	// Every metric is exported under the names telemetry.MetricNames
	// lists (serve's Prometheus endpoint checks the same list).
	var names []string
	for name := range m {
		names = append(names, name)
	}
	if want := slices.Sorted(slices.Values(telemetry.MetricNames)); !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Errorf("exported metrics %v, want telemetry.MetricNames %v", slices.Sorted(slices.Values(names)), want)
	}
	// The judge's span is the time it took to answer, when it was asked.
	js := col.SpansNamed("celguard.judge")
	if len(js) != 3 {
		t.Fatalf("%d judge spans, want 3", len(js))
	}
	for _, sp := range js {
		if e := sp.Attr("celguard.judge.error"); sp.Attr("celguard.judge.verdict") == "ask" && e != "timed out" || sp.Attr("celguard.judge.verdict") != "ask" && e != "" {
			t.Errorf("judge span (%s): celguard.judge.error %q, want the judge's own error", sp.Attr("celguard.judge.verdict"), e)
		}
	}
	if js[0].StartTimeUnixNano != uint64(asked.UnixNano()) || js[0].EndTimeUnixNano != uint64(answered.UnixNano()) {
		t.Errorf("the judge's span runs %d..%d, want %d..%d", js[0].StartTimeUnixNano, js[0].EndTimeUnixNano, asked.UnixNano(), answered.UnixNano())
	}
	if got := len(col.SpansNamed("celguard.store.commit")); got != 3 {
		t.Errorf("%d store-commit spans, want 3", got)
	}
}

// TestSampledOutIsNotDropped: spans the sampler drops (OTEL_TRACES_SAMPLER)
// never reach the queue and are not counted as lost; the records still go.
func TestSampledOutIsNotDropped(t *testing.T) {
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	col := otlptest.Start(t, telemetry.ProtocolHTTP, otlptest.Accept)
	tel, err := telemetry.New(context.Background(), telemetry.Config{Endpoint: col.Endpoint, Protocol: telemetry.ProtocolHTTP, FlushTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ev := &eval.DecisionEvent{Decision: eval.Decision{Phase: policy.PhaseBefore, Tool: "Bash", Verdict: policy.Block, SessionID: "s"},
		Commits: []eval.StoreCommit{{Outcome: eval.StoreCommitted, Entries: 1}}}
	if err := tel.WriteDecision(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if err := tel.Close(); err != nil {
		t.Fatal(err)
	}
	st := tel.Stats()
	if st.Spans != 0 || st.SpansDropped != 0 || st.Logs != 1 || st.LogsExported != 1 {
		t.Errorf("stats %+v, want no span queued or dropped, the record sent", st)
	}
	if n := len(col.Spans()); n != 0 {
		t.Errorf("%d spans exported with the sampler always off", n)
	}
}
