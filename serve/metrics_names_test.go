package serve

import (
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/celguard/celguard/telemetry"
)

// serverOnlyMetrics are the Prometheus metrics of celguard serve that
// OpenTelemetry does not export: they are about the server (its HTTP
// requests, its hook endpoint, its sessions in memory, when it loaded its
// policies), not about decisions (docs/telemetry.md, Metrics).
var serverOnlyMetrics = []string{
	"celguard_hook_request_duration_seconds", "celguard_hook_failures_total", "celguard_sessions",
	"celguard_http_requests_total", "celguard_policy_loaded_timestamp_seconds",
}

// TestMetricNamesAgree: every metric the OpenTelemetry export has
// (telemetry.MetricNames) is on the Prometheus endpoint under the same
// name, and every other Prometheus metric of celguard's is one of the
// server's own, listed.
func TestMetricNamesAgree(t *testing.T) {
	m := newMetrics(&Server{})
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	var prom []string
	for _, c := range m.own {
		ch := make(chan *prometheus.Desc, 8)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			mm := fq.FindStringSubmatch(d.String())
			if mm == nil {
				t.Fatalf("a descriptor without a name: %s", d)
			}
			prom = append(prom, mm[1])
		}
	}
	want := slices.Concat(telemetry.MetricNames, serverOnlyMetrics)
	slices.Sort(prom)
	slices.Sort(want)
	if !slices.Equal(prom, want) {
		t.Errorf("Prometheus metrics %v\nwant OpenTelemetry's %v and the server's own %v", prom, telemetry.MetricNames, serverOnlyMetrics)
	}
}
