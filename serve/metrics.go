package serve

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/telemetry"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg          *prometheus.Registry
	decisions    *prometheus.CounterVec   // by verdict, policy, host
	latency      *prometheus.HistogramVec // decision latency by host and phase
	hookLatency  *prometheus.HistogramVec // hook request latency by host
	hookFailures *prometheus.CounterVec   // hook answers that are failures, by host
	faults       *prometheus.CounterVec   // server faults by code
	storeErrors  prometheus.Counter
	reloads      *prometheus.CounterVec // by result: ok, error
	commits      *prometheus.CounterVec // store commits by outcome
	judges       *prometheus.CounterVec // judge outcomes by judge, verdict, cached, failed
	sessions     prometheus.Gauge
	requests     *prometheus.CounterVec // by route pattern and status

	// The children of the vectors a request updates, by label values
	// (see children).
	decisionsBy   children[decisionLabels, prometheus.Counter]
	latencyBy     children[[2]string, prometheus.Observer]
	hookLatencyBy children[string, prometheus.Observer]
	requestsBy    children[requestLabels, prometheus.Counter]
	commitsBy     children[string, prometheus.Counter]
	// own are celguard's metrics (the registry has the Go runtime's and
	// the process's too).
	own []prometheus.Collector
}

// decisionLabels are the label values of celguard_decisions_total.
type decisionLabels struct{ verdict, policy, rule, host string }

// requestLabels are the label values of celguard_http_requests_total.
type requestLabels struct {
	route  string
	status int
}

// maxChildren bounds each children cache: label values past it (policies
// of many reloads) are looked up in their vector every time.
const maxChildren = 4096

// children caches the children of a metric vector by their label values,
// so that a request finds a child it saw before with one map read, without
// hashing and checking the label values again as the vector's
// WithLabelValues does. The map is copied on write (a new child is rare:
// the label values are verdicts, policies, hosts, routes and statuses).
type children[K comparable, M any] struct {
	m   atomic.Pointer[map[K]M]
	mu  sync.Mutex
	new func(K) M
}

// of returns the child of label values k.
func (c *children[K, M]) of(k K) M {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
		if len(*old) >= maxChildren {
			return c.new(k)
		}
	}
	v := c.new(k)
	m := make(map[K]M, 1+len(deref(old)))
	maps.Copy(m, deref(old))
	m[k] = v
	c.m.Store(&m)
	return v
}

func deref[K comparable, M any](m *map[K]M) map[K]M {
	if m == nil {
		return nil
	}
	return *m
}

// latencyBuckets are in seconds, from 50µs to 5s: a decision takes tens
// of microseconds in memory and a round trip more with a store.
var latencyBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_decisions_total",
		Help: "Decisions made, by verdict, deciding policy and rule (empty: the default verdict or a fault) and host (api: the session API)."},
		[]string{"verdict", "policy", "rule", "host"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "celguard_decision_duration_seconds",
		Help: "Time to decide one call, by host and phase.", Buckets: latencyBuckets}, []string{"host", "phase"})
	m.hookLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "celguard_hook_request_duration_seconds",
		Help: "Time to answer one hook request, body read to answer, by host.", Buckets: latencyBuckets}, []string{"host"})
	m.hookFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_hook_failures_total",
		Help: "Hook events answered with the host's failure form (a block, or at turn end a non-blocking error), by host."}, []string{"host"})
	m.faults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_faults_total",
		Help: "Decisions and requests the server refused because of a fault, by code."}, []string{"code"})
	m.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "celguard_store_errors_total",
		Help: "Decisions that could not reach the state store (blocked with code store_unavailable)."})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_policy_reloads_total",
		Help: "Policy reloads, by result: ok (a new set in force) or error (the last good set stays)."}, []string{"result"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_store_commits_total",
		Help: "Commits of decisions' state to the state store, by outcome: committed, conflict (another process changed it; the decision ran again), unavailable."},
		[]string{"outcome"})
	m.judges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_judge_outcomes_total",
		Help: "What a rule's judge answered, by judge, verdict (ask also when it could not answer), cached, and failed (it gave no answer)."},
		[]string{"judge", "verdict", "cached", "failed"})
	dropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: telemetry.DroppedMetric,
		Help: "Spans and log records the OpenTelemetry export could not deliver, spans and logs together (0 when telemetry is off; by signal in the export itself)."},
		func() float64 {
			s.mu.Lock()
			g := s.guard
			s.mu.Unlock()
			if g == nil {
				return 0
			}
			st, _ := g.TelemetryStats()
			return float64(st.SpansDropped + st.LogsDropped)
		})
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "celguard_sessions", Help: "Sessions kept in memory."})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "celguard_http_requests_total",
		Help: "HTTP requests, by route and status."}, []string{"route", "status"})
	info := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "celguard_policy_loaded_timestamp_seconds",
		Help: "When the policy set in force was loaded (Unix time)."}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.loadedAt.UnixNano()) / 1e9
	})
	m.own = []prometheus.Collector{m.decisions, m.latency, m.hookLatency, m.hookFailures, m.faults, m.storeErrors, m.reloads, m.commits, m.judges, dropped, m.sessions, m.requests, info}
	m.reg.MustRegister(m.own...)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.decisionsBy.new = func(k decisionLabels) prometheus.Counter {
		return m.decisions.WithLabelValues(k.verdict, k.policy, k.rule, k.host)
	}
	m.latencyBy.new = func(k [2]string) prometheus.Observer { return m.latency.WithLabelValues(k[0], k[1]) }
	m.hookLatencyBy.new = func(host string) prometheus.Observer { return m.hookLatency.WithLabelValues(host) }
	m.requestsBy.new = func(k requestLabels) prometheus.Counter {
		return m.requests.WithLabelValues(k.route, strconv.Itoa(k.status))
	}
	m.commitsBy.new = func(outcome string) prometheus.Counter { return m.commits.WithLabelValues(outcome) }
	// The labels with a known, small set of values exist from the start.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error")
	for _, o := range []string{eval.StoreCommitted, eval.StoreConflict, eval.StoreUnavailable} {
		m.commits.WithLabelValues(o)
	}
	return m
}

// decided counts one decision.
func (m *metrics) decided(host string, d eval.Decision, took time.Duration) {
	m.decisionsBy.of(decisionLabels{d.Verdict.String(), d.Policy, d.RuleID, host}).Inc()
	m.latencyBy.of([2]string{host, d.Phase.String()}).Observe(took.Seconds())
	if d.Code == CodeStoreUnavailable {
		m.storeErrors.Inc()
	}
}

// reloaded counts a policy reload, here and in the guard's OpenTelemetry
// export (when it has one): the same counter under the same name.
func (m *metrics) reloaded(g *celguard.Guard, ok bool) {
	result := "ok"
	if !ok {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
	if g != nil {
		g.Telemetry().Reloaded(ok)
	}
}

// sink counts what a decision's event carries beyond the decision: its
// store commits and its judge's answer (as telemetry counts them). It never
// fails.
func (m *metrics) sink() eval.DecisionSink { return eventMetrics{m} }

// eventMetrics is metrics' decision sink.
type eventMetrics struct{ m *metrics }

// WriteDecision implements eval.DecisionSink.
func (e eventMetrics) WriteDecision(_ context.Context, ev *eval.DecisionEvent) error {
	for _, c := range ev.Commits {
		e.m.commitsBy.of(c.Outcome).Inc()
	}
	if j := ev.Decision.Judge; j != nil {
		e.m.judges.WithLabelValues(j.Name, j.Verdict.String(), strconv.FormatBool(j.Cached), strconv.FormatBool(j.Error != "")).Inc()
	}
	return nil
}

// Transient implements eval.TransientSink: the metrics keep nothing of an
// event but its counts.
func (eventMetrics) Transient() bool { return true }

// statusWriter records the status a handler answers.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		if h := w.ResponseWriter.Header(); h["Date"] == nil {
			h["Date"] = httpDate(time.Now())
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK) // as the writer's Write would
	}
	return w.ResponseWriter.Write(b)
}

// httpDate is the Date header of an answer written at now, as net/http
// writes it when a handler does not (time.Now().UTC() in http.TimeFormat),
// formatted once a second: net/http's own formatting (time's general
// layout code) was about 2,000 instructions of every request. The slice is
// shared by every answer of that second, as jsonContentType is: net/http
// only reads it.
func httpDate(now time.Time) []string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.value
	}
	d := &dateHeader{sec: sec, value: []string{now.UTC().Format(http.TimeFormat)}}
	lastDate.Store(d)
	return d.value
}

// dateHeader is the Date header of one second (httpDate).
type dateHeader struct {
	sec   int64
	value []string
}

// lastDate is the last second's Date header.
var lastDate atomic.Pointer[dateHeader]

// Unwrap lets http.ResponseController reach the connection's writer (the
// console's and the MCP gateway's event streams flush through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusWriters are the statusWriters free for reuse (observe): a handler
// is done with its writer when it returns (a decision past its deadline
// keeps its handler until it returns, ontime).
var statusWriters = sync.Pool{New: func() any { return new(statusWriter) }}

// observe logs and counts every request, and answers a panic outside a
// decision (which recovers its own) with 500.
func (s *Server) observe(rt router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var start time.Time // read only for the debug log
		debug := s.log.Enabled(r.Context(), slog.LevelDebug)
		if debug {
			start = time.Now()
		}
		sw := statusWriters.Get().(*statusWriter)
		sw.ResponseWriter, sw.status = w, 0
		defer func() {
			if p := recover(); p != nil {
				s.metrics.faults.WithLabelValues(CodeInternalError).Inc()
				s.log.Error("panic in a request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if sw.status == 0 {
					writeError(sw, http.StatusInternalServerError, CodeInternalError, "internal error")
				}
			}
			route := r.Pattern
			if route == "" || route == "/" {
				route = "unknown"
			}
			s.metrics.requestsBy.of(requestLabels{route, sw.status}).Inc()
			if debug {
				s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "duration", time.Since(start))
			}
			sw.ResponseWriter = nil
			statusWriters.Put(sw)
		}()
		if strings.HasPrefix(r.URL.Path, "/ui/") {
			securityHeaders(sw) // the console's headers on the mux's own answers too (a redirect to a clean path)
		}
		rt.serve(sw, r)
	})
}
