// Package telemetry sends celguard's decisions to OpenTelemetry: a span per
// decision (before, after, input, output, turn end) with the deciding
// rule's id, policy, file:line:col and code, the decision record as an
// OpenTelemetry log (the decision log's record, masked as it masks), and
// decision metrics under the names serve's Prometheus endpoint uses. It
// exports over OTLP (gRPC or HTTP) with the OpenTelemetry Go SDK,
// configured by the standard OTEL_* environment variables (FromEnv) or by
// a Config. docs/telemetry.md documents every attribute.
//
// Telemetry is a DecisionSink (eval.DecisionSink) that never fails: a
// collector that is down, slow or refusing never changes a decision. Spans
// and logs go through bounded queues and are exported in the background;
// Close flushes them within Config.FlushTimeout and then gives up,
// counting what it could not send (Stats), so a short-lived hook process
// is delayed by at most that bound.
//
// It is a package of its own, beside decisionlog and above eval, because
// what leaves the machine and how it is masked is the audit trail's
// concern (it reuses decisionlog's masking), and because the SDK and its
// exporters are a dependency only this package and the composition root
// (celguard.Config.Telemetry) link.
package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/celguard/celguard/decisionlog"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/internal/mask"
	"github.com/celguard/celguard/policy"
)

// Protocols of Config.Protocol, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// DefaultFlushTimeout bounds Close's flush when Config.FlushTimeout is
// zero: what a hook process spends at most, after its decision is written,
// sending what it has not yet sent.
const DefaultFlushTimeout = 100 * time.Millisecond

// DefaultQueueSize bounds the spans and the log records waiting to be
// exported when Config.QueueSize is zero; past it they are dropped (and
// counted).
const DefaultQueueSize = 2048

// Config configures the export. Its zero value exports over OTLP as the
// OTEL_* environment variables say (the SDK reads the endpoint, headers,
// timeouts and certificates itself), with protocol http/protobuf when
// OTEL_EXPORTER_OTLP_PROTOCOL is unset, as the specification says.
type Config struct {
	// Protocol is grpc or http/protobuf; empty reads
	// OTEL_EXPORTER_OTLP_PROTOCOL.
	Protocol string
	// Endpoint is the collector's URL (http://host:port sends in clear
	// text, https:// over TLS); empty reads OTEL_EXPORTER_OTLP_ENDPOINT
	// (and the per-signal variables), else the protocol's default on
	// localhost.
	Endpoint string
	// Headers are added to every export request (OTEL_EXPORTER_OTLP_HEADERS
	// is read as well).
	Headers map[string]string
	// ServiceName names the service; empty: OTEL_SERVICE_NAME, else
	// "celguard".
	ServiceName string
	// TraceParent is the W3C traceparent of the host's trace (the
	// TRACEPARENT environment variable for FromEnv); a decision whose
	// context carries no span joins it. Empty: one trace per session.
	TraceParent string
	TraceState  string
	// Who says who decides where: resource attributes of every span, log
	// and metric.
	Who Who
	// FlushTimeout bounds Close (DefaultFlushTimeout when zero).
	FlushTimeout time.Duration
	// QueueSize bounds each signal's export queue (DefaultQueueSize when
	// zero).
	QueueSize int
	// MetricInterval is how often metrics are exported (besides at Close);
	// zero: 60s, or OTEL_METRIC_EXPORT_INTERVAL.
	MetricInterval time.Duration
}

// Enabled reports whether the environment env (os.Getenv when nil) turns
// telemetry on: CELGUARD_TELEMETRY is "otlp" (or 1, true) and
// OTEL_SDK_DISABLED is not true. Telemetry is off by default: an
// OTEL_EXPORTER_OTLP_ENDPOINT set for another program does not make
// celguard send anything.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if b, _ := strconv.ParseBool(getenv("OTEL_SDK_DISABLED")); b {
		return false
	}
	switch strings.ToLower(getenv("CELGUARD_TELEMETRY")) {
	case "otlp", "1", "true":
		return true
	}
	return false
}

// FromEnv is the Config the environment says (nil when Enabled is false):
// the trace context of TRACEPARENT and TRACESTATE, the who and where of
// this process (WhoAmI). The exporters read the other OTEL_* variables.
func FromEnv(getenv func(string) string) *Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	if !Enabled(getenv) {
		return nil
	}
	return &Config{TraceParent: getenv("TRACEPARENT"), TraceState: getenv("TRACESTATE")}
}

// Stats counts what the export did, for a dropped-span alarm.
type Stats struct {
	// Spans and Logs are the spans and records handed to the queues.
	Spans int64 `json:"spans"`
	Logs  int64 `json:"logs"`
	// SpansExported and LogsExported are those a collector accepted.
	SpansExported int64 `json:"spans_exported"`
	LogsExported  int64 `json:"logs_exported"`
	// SpansDropped and LogsDropped are those that failed to export or
	// were still queued when Close gave up (the queue's overflow among
	// them).
	SpansDropped int64 `json:"spans_dropped"`
	LogsDropped  int64 `json:"logs_dropped"`
}

// Telemetry is an open export: an eval.DecisionSink that never fails.
type Telemetry struct {
	cfg    Config
	tp     *sdktrace.TracerProvider
	lp     *sdklog.LoggerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
	logger otellog.Logger
	parent trace.SpanContext // the host's, if it gave one

	decisions   metric.Int64Counter
	latency     metric.Float64Histogram
	faults      metric.Int64Counter
	storeErrors metric.Int64Counter
	judges      metric.Int64Counter
	commits     metric.Int64Counter
	reloads     metric.Int64Counter

	spans, logs                 atomic.Int64
	spansExported, logsExported atomic.Int64
	spansFailed, logsFailed     atomic.Int64
	closed                      atomic.Bool
}

// New opens the export cfg configures. It connects lazily: a collector
// that is not there is not an error here (nor ever a decision's).
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = DefaultFlushTimeout
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	proto := cfg.Protocol
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "":
		proto = ProtocolHTTP
	case ProtocolGRPC, ProtocolHTTP:
	default:
		return nil, fmt.Errorf("telemetry: protocol %q: want grpc or http/protobuf", proto)
	}
	cfg.Protocol = proto
	var host string
	var insecure bool
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("telemetry: endpoint %q: want http://host:port or https://host:port", cfg.Endpoint)
		}
		host, insecure = u.Host, u.Scheme == "http"
	}
	// The SDK reports export failures to a global handler that prints
	// them; a hook's stderr is its host's to show. They are counted
	// (Stats) instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	t := &Telemetry{cfg: cfg}
	res, err := t.resource(ctx)
	if err != nil {
		return nil, err
	}
	ex, err := newExporters(ctx, proto, host, insecure, cfg.Headers)
	if err != nil {
		return nil, err
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(&countingSpans{SpanExporter: ex.spans, t: t},
			sdktrace.WithMaxQueueSize(cfg.QueueSize), sdktrace.WithMaxExportBatchSize(min(512, cfg.QueueSize))))
	t.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(&countingLogs{Exporter: ex.logs, t: t},
			sdklog.WithMaxQueueSize(cfg.QueueSize), sdklog.WithExportMaxBatchSize(min(512, cfg.QueueSize)))))
	var ropts []sdkmetric.PeriodicReaderOption
	if cfg.MetricInterval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(cfg.MetricInterval))
	}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(ex.metrics, ropts...)),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "celguard_decision_duration_seconds"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: LatencyBuckets}})))
	t.tracer = t.tp.Tracer(ScopeName)
	t.logger = t.lp.Logger(ScopeName)
	meter := t.mp.Meter(ScopeName)
	if t.decisions, err = meter.Int64Counter("celguard_decisions_total",
		metric.WithDescription("Decisions made, by verdict, deciding policy (empty: the default verdict or a fault) and host.")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.latency, err = meter.Float64Histogram("celguard_decision_duration_seconds", metric.WithUnit("s"),
		metric.WithDescription("Time to decide one call, by host and phase.")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.faults, err = meter.Int64Counter("celguard_faults_total",
		metric.WithDescription("Decisions that failed (a run-time error, the state store, the decision log), by code.")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.storeErrors, err = meter.Int64Counter("celguard_store_errors_total",
		metric.WithDescription("Decisions that could not reach the state store (blocked with code store_unavailable).")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.judges, err = meter.Int64Counter("celguard_judge_outcomes_total",
		metric.WithDescription("What a rule's judge answered, by judge, verdict (ask also when it could not answer), cached, and failed (it gave no answer).")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.commits, err = meter.Int64Counter("celguard_store_commits_total",
		metric.WithDescription("Commits of decisions' state to the state store, by outcome: committed, conflict (another process changed it; the decision ran again), unavailable.")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if t.reloads, err = meter.Int64Counter("celguard_policy_reloads_total",
		metric.WithDescription("Policy reloads, by result: ok (a new set in force) or error (the last good set stays).")); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if _, err = meter.Int64ObservableCounter(DroppedMetric,
		metric.WithDescription("Spans and log records the export could not deliver (refused, failed, or still queued when the flush bound ran out), by signal."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			s := t.Stats()
			o.Observe(s.SpansDropped, metric.WithAttributes(attribute.String("signal", "spans")))
			o.Observe(s.LogsDropped, metric.WithAttributes(attribute.String("signal", "logs")))
			return nil
		})); err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), t.Close())
	}
	if cfg.TraceParent != "" {
		carrier := propagation.MapCarrier{"traceparent": cfg.TraceParent, "tracestate": cfg.TraceState}
		t.parent = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	}
	return t, nil
}

// MetricNames are the names of the metrics Telemetry exports, which are
// also the names of the same metrics on `celguard serve`'s Prometheus
// endpoint (a test asserts both sets agree).
var MetricNames = []string{
	"celguard_decisions_total", "celguard_decision_duration_seconds", "celguard_faults_total",
	"celguard_store_errors_total", "celguard_judge_outcomes_total", "celguard_store_commits_total",
	"celguard_policy_reloads_total", DroppedMetric,
}

// Reloaded counts a policy reload in celguard_policy_reloads_total: ok (a
// new set in force) or not (the set did not compile or could not be read;
// the last good one stays). The host that reloads calls it (celguard
// serve, beside its Prometheus count).
func (t *Telemetry) Reloaded(ok bool) {
	if t == nil || t.closed.Load() {
		return
	}
	result := "ok"
	if !ok {
		result = "error"
	}
	t.reloads.Add(context.Background(), 1, metric.WithAttributes(attribute.String("result", result)))
}

// DroppedMetric is the counter of spans and log records the export lost
// (Stats' SpansDropped and LogsDropped, by signal="spans" or "logs"),
// named as a Prometheus counter is: a collector that receives a non-zero
// value knows it does not have every decision.
const DroppedMetric = "celguard_telemetry_dropped_total"

// ScopeName is the instrumentation scope of everything celguard exports.
const ScopeName = "github.com/celguard/celguard"

// LatencyBuckets are the decision latency histogram's bounds, in seconds,
// the same as serve's Prometheus histogram.
var LatencyBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Stats reports what was queued, exported and dropped so far.
func (t *Telemetry) Stats() Stats {
	s := Stats{Spans: t.spans.Load(), Logs: t.logs.Load(), SpansExported: t.spansExported.Load(), LogsExported: t.logsExported.Load()}
	s.SpansDropped, s.LogsDropped = t.spansFailed.Load(), t.logsFailed.Load()
	if t.closed.Load() {
		s.SpansDropped = s.Spans - s.SpansExported
		s.LogsDropped = s.Logs - s.LogsExported
	}
	return s
}

// Close flushes what is queued, within Config.FlushTimeout, and stops the
// export; what could not be sent by then is dropped (Stats). It never
// takes longer than twice the bound (flush, then shut down).
func (t *Telemetry) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.FlushTimeout)
	defer cancel()
	// Spans and logs are flushed first (at once), so that what they could
	// not send is counted in the metrics' last export
	// (celguard_telemetry_dropped_total); then the three providers shut
	// down at once. Both share the one deadline.
	flushed := make(chan struct{}, 2)
	go func() {
		if t.tp != nil {
			_ = t.tp.ForceFlush(ctx)
		}
		flushed <- struct{}{}
	}()
	go func() {
		if t.lp != nil {
			_ = t.lp.ForceFlush(ctx)
		}
		flushed <- struct{}{}
	}()
	for range 2 {
		select {
		case <-flushed:
		case <-ctx.Done():
			return nil
		}
	}
	errs := make(chan error, 3)
	for _, shut := range []func(context.Context) error{t.shutTraces, t.shutLogs, t.shutMetrics} {
		go func() { errs <- shut(ctx) }()
	}
	var all []error
	for range 3 {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-ctx.Done():
			// A provider that ignores its context is left behind: the
			// process ends anyway.
			return nil
		}
	}
	_ = all // export failures are counted, not reported: they are not the caller's
	return nil
}

func (t *Telemetry) shutTraces(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

func (t *Telemetry) shutLogs(ctx context.Context) error {
	if t.lp == nil {
		return nil
	}
	return t.lp.Shutdown(ctx)
}

func (t *Telemetry) shutMetrics(ctx context.Context) error {
	if t.mp == nil {
		return nil
	}
	return t.mp.Shutdown(ctx)
}

// WriteDecision implements eval.DecisionSink: the decision's span, its
// record as a log, and its metrics. It never fails.
func (t *Telemetry) WriteDecision(ctx context.Context, ev *eval.DecisionEvent) error {
	if t.closed.Load() {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rec := decisionlog.NewRecord(ev)
	who, perCall := t.whoOf(ctx)
	if who != (Who{}) {
		rec.Who = &who
	}
	end := time.Now()
	start := ev.Start
	if start.IsZero() || start.After(end) {
		start = end
	}
	ctx = t.parentContext(ctx, rec.SessionID)
	attrs := Attributes(rec)
	if ev.Layer != "" && !rec.Untrusted {
		// The deciding rule's layer (an untrusted project's is said by
		// Attributes, from the record).
		attrs = append(attrs, attribute.String("celguard.layer", ev.Layer))
	}
	if perCall {
		attrs = append(attrs, whoAttributes(who)...)
	}
	ctx, span := t.tracer.Start(ctx, SpanName(rec), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	t.countSpan(span)
	if ev.Decision.Judge != nil {
		t.judgeSpan(ctx, ev, rec, start, end)
	}
	for i, c := range ev.Commits {
		_, cs := t.tracer.Start(ctx, "celguard.store.commit", trace.WithTimestamp(c.Start), trace.WithAttributes(
			attribute.String("celguard.store.outcome", c.Outcome), attribute.Int("celguard.store.try", i+1),
			attribute.Int("celguard.store.entries", c.Entries), attribute.Int("celguard.store.writes", c.Writes)))
		if c.Outcome == eval.StoreUnavailable {
			cs.SetStatus(codes.Error, c.Outcome)
		}
		cs.End(trace.WithTimestamp(c.End))
		t.countSpan(cs)
	}
	if rec.Verdict == policy.Block || rec.Verdict == policy.Halt || rec.Error != "" {
		span.SetStatus(codes.Error, rec.Code) // the call was refused, or the decision failed
	}
	span.End(trace.WithTimestamp(end))

	body, err := json.Marshal(rec)
	if err == nil {
		var lr otellog.Record
		lr.SetTimestamp(rec.Time)
		lr.SetObservedTimestamp(end)
		lr.SetEventName("celguard.decision")
		lr.SetSeverity(severity(rec))
		lr.SetSeverityText(rec.Verdict.String())
		lr.SetBody(attribute.StringValue(string(body)))
		lr.AddAttributes(attrs...)
		t.logger.Emit(ctx, lr)
		t.logs.Add(1)
	}
	t.decisions.Add(ctx, 1, metric.WithAttributes(attribute.String("verdict", rec.Verdict.String()),
		attribute.String("policy", rec.Policy), attribute.String("rule", rec.RuleID), attribute.String("host", who.AgentHost)))
	t.latency.Record(ctx, end.Sub(start).Seconds(), metric.WithAttributes(attribute.String("host", who.AgentHost),
		attribute.String("phase", rec.Phase.String())))
	if rec.Error != "" {
		t.faults.Add(ctx, 1, metric.WithAttributes(attribute.String("code", rec.Code)))
	}
	if rec.Code == eval.CodeStoreUnavailable {
		t.storeErrors.Add(ctx, 1)
	}
	for _, c := range ev.Commits {
		t.commits.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", c.Outcome)))
	}
	if j := ev.Decision.Judge; j != nil {
		t.judges.Add(ctx, 1, metric.WithAttributes(attribute.String("judge", j.Name), attribute.String("verdict", j.Verdict.String()),
			attribute.Bool("cached", j.Cached), attribute.Bool("failed", j.Error != "")))
	}
	return nil
}

// judgeError is why a judge gave no answer, with its credentials redacted
// and bounded as the decision log's strings are (a judge's error may quote
// what it was sent).
func judgeError(e string) string {
	m := &mask.Masker{MaxString: decisionlog.MaxString}
	return m.Free(e)
}

// countSpan counts a span handed to the export queue: a sampled one (the
// sampler, OTEL_TRACES_SAMPLER, drops the others before the queue, and
// they are not lost).
func (t *Telemetry) countSpan(sp trace.Span) {
	if sp.SpanContext().IsSampled() {
		t.spans.Add(1)
	}
}

// judgeSpan is the child span of the deciding rule's judge: from when it
// was asked to its answer, or (its answer cached in the session, or no
// time noted) the decision's span.
func (t *Telemetry) judgeSpan(ctx context.Context, ev *eval.DecisionEvent, rec *decisionlog.Record, start, end time.Time) {
	j := ev.Decision.Judge
	if !ev.JudgeStart.IsZero() && !ev.JudgeEnd.Before(ev.JudgeStart) {
		start, end = ev.JudgeStart, ev.JudgeEnd
	}
	_, js := t.tracer.Start(ctx, "celguard.judge "+j.Name, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("celguard.judge.name", j.Name), attribute.String("celguard.judge.verdict", j.Verdict.String()),
		attribute.Bool("celguard.judge.cached", j.Cached), attribute.String("celguard.judge.error", judgeError(j.Error))))
	js.End(trace.WithTimestamp(end))
	t.countSpan(js)
}

// parentContext is ctx with the span a decision's span is a child of:
// ctx's own, else the host's (TraceParent), else the session's trace.
func (t *Telemetry) parentContext(ctx context.Context, session string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if t.parent.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, t.parent)
	}
	return trace.ContextWithRemoteSpanContext(ctx, SessionSpanContext(session))
}

// SessionSpanContext is the span context every decision of a session
// without a host trace is a child of: its trace id and span id are a
// SHA-256 of the session id, so that every process deciding for the
// session (each hook process, each replica) puts its decisions in one
// trace. The span itself is never exported.
func SessionSpanContext(session string) trace.SpanContext {
	sum := sha256.Sum256([]byte("celguard-session\x00" + session))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// SpanName is a decision's span's name: "celguard.decision PHASE TOOL"
// (no tool at a turn's end and for the model's input and output).
func SpanName(rec *decisionlog.Record) string {
	if rec.Tool == "" {
		return "celguard.decision " + rec.Phase.String()
	}
	return "celguard.decision " + rec.Phase.String() + " " + rec.Tool
}

// severity maps a verdict to a log severity: refusals are warnings, a
// decision that failed (policy_error, decision_log_failed) an error.
func severity(rec *decisionlog.Record) otellog.Severity {
	switch {
	case rec.Error != "":
		return otellog.SeverityError
	case rec.Verdict == policy.Block || rec.Verdict == policy.Halt:
		return otellog.SeverityWarn
	}
	return otellog.SeverityInfo
}
