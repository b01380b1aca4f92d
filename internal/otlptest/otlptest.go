// Package otlptest is an OpenTelemetry collector for tests: it receives
// OTLP over gRPC or HTTP on a loopback port and decodes what it is sent
// with the official OTLP protobuf types (go.opentelemetry.io/proto/otlp),
// keeping every request and every raw byte received, so that a test can
// assert on spans, log records and metrics and scan what left the process.
// It can also refuse every export or hold each one until the test ends (a
// slow collector).
package otlptest

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Mode is how the collector answers.
type Mode int

const (
	// Accept decodes and keeps every export.
	Accept Mode = iota
	// Refuse answers every export with an error (gRPC Unavailable, HTTP 503).
	Refuse
	// Hang holds every export until the test ends (a slow collector).
	Hang
	// RefuseSpansAndLogs refuses spans and log records but keeps metrics,
	// so that a test can read the exporter's own account of what it lost.
	RefuseSpansAndLogs
	// Discard accepts every export over HTTP without decoding or keeping
	// it (it counts the bytes: Received), so that a benchmark measures the
	// sender, not the collector. Over gRPC it is Accept (the gRPC server
	// decodes every request itself).
	Discard
)

// Collector is a running test collector.
type Collector struct {
	// Endpoint is its URL (http://127.0.0.1:PORT), for either protocol.
	Endpoint string
	// Protocol is "grpc" or "http/protobuf".
	Protocol string

	mode    Mode
	release chan struct{}

	mu       sync.Mutex
	received int64
	traces   []*coltrace.ExportTraceServiceRequest
	logs     []*collogs.ExportLogsServiceRequest
	metrics  []*colmetrics.ExportMetricsServiceRequest
	raw      [][]byte
}

// Start starts a collector speaking protocol ("grpc" or "http/protobuf") on
// a free loopback port; it stops when the test ends.
func Start(t testing.TB, protocol string, mode Mode) *Collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{Endpoint: "http://" + ln.Addr().String(), Protocol: protocol, mode: mode, release: make(chan struct{})}
	switch protocol {
	case "grpc":
		srv := grpc.NewServer()
		coltrace.RegisterTraceServiceServer(srv, traceService{c: c})
		collogs.RegisterLogsServiceServer(srv, logsService{c: c})
		colmetrics.RegisterMetricsServiceServer(srv, metricsService{c: c})
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { close(c.release); srv.Stop() })
	case "http/protobuf":
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/traces", handle(c, func() proto.Message { return &coltrace.ExportTraceServiceRequest{} }))
		mux.HandleFunc("POST /v1/logs", handle(c, func() proto.Message { return &collogs.ExportLogsServiceRequest{} }))
		mux.HandleFunc("POST /v1/metrics", handle(c, func() proto.Message { return &colmetrics.ExportMetricsServiceRequest{} }))
		srv := &http.Server{Handler: mux}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { close(c.release); _ = srv.Close() })
	default:
		t.Fatalf("otlptest: protocol %q", protocol)
	}
	return c
}

// answer applies the collector's mode to an export (of metrics or not):
// nil to accept.
func (c *Collector) answer(ctx context.Context, metrics bool) error {
	switch c.mode {
	case RefuseSpansAndLogs:
		if !metrics {
			return status.Error(codes.Unavailable, "otlptest: refusing spans and logs")
		}
	case Refuse:
		return status.Error(codes.Unavailable, "otlptest: refusing")
	case Hang:
		select {
		case <-c.release:
		case <-ctx.Done():
		}
		return status.Error(codes.Unavailable, "otlptest: too slow")
	}
	return nil
}

// keep records one decoded request and its bytes.
func (c *Collector) keep(m proto.Message, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw == nil {
		raw, _ = proto.Marshal(m)
	}
	c.raw = append(c.raw, raw)
	switch r := m.(type) {
	case *coltrace.ExportTraceServiceRequest:
		c.traces = append(c.traces, r)
	case *collogs.ExportLogsServiceRequest:
		c.logs = append(c.logs, r)
	case *colmetrics.ExportMetricsServiceRequest:
		c.metrics = append(c.metrics, r)
	}
}

func handle(c *Collector, newMsg func() proto.Message) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, metrics := newMsg().(*colmetrics.ExportMetricsServiceRequest)
		if err := c.answer(r.Context(), metrics); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if c.mode == Discard {
			n, _ := io.Copy(io.Discard, r.Body)
			c.mu.Lock()
			c.received += n
			c.mu.Unlock()
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusOK) // an empty body: the empty response message
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m := newMsg()
		if err := proto.Unmarshal(body, m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.keep(m, body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	c *Collector
}

func (s traceService) Export(ctx context.Context, r *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	if err := s.c.answer(ctx, false); err != nil {
		return nil, err
	}
	s.c.keep(r, nil)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type logsService struct {
	collogs.UnimplementedLogsServiceServer
	c *Collector
}

func (s logsService) Export(ctx context.Context, r *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	if err := s.c.answer(ctx, false); err != nil {
		return nil, err
	}
	s.c.keep(r, nil)
	return &collogs.ExportLogsServiceResponse{}, nil
}

type metricsService struct {
	colmetrics.UnimplementedMetricsServiceServer
	c *Collector
}

func (s metricsService) Export(ctx context.Context, r *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	if err := s.c.answer(ctx, true); err != nil {
		return nil, err
	}
	s.c.keep(r, nil)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// Span is a received span with its resource's attributes.
type Span struct {
	*tracepb.Span
	Resource map[string]string
}

// Attr is the span's attribute key as a string ("" when absent).
func (s Span) Attr(key string) string { return attrString(s.Attributes, key) }

// Spans are every span received, in order.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Span
	for _, r := range c.traces {
		for _, rs := range r.ResourceSpans {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					out = append(out, Span{Span: sp, Resource: res})
				}
			}
		}
	}
	return out
}

// Decisions are the decisions' spans received (named "celguard.decision
// ..."), in order, without their child spans (judge, store commits).
func (c *Collector) Decisions() []Span {
	return c.SpansNamed("celguard.decision")
}

// SpansNamed are the spans received whose name begins with prefix, in
// order.
func (c *Collector) SpansNamed(prefix string) []Span {
	var out []Span
	for _, sp := range c.Spans() {
		if strings.HasPrefix(sp.Name, prefix) {
			out = append(out, sp)
		}
	}
	return out
}

// LogRecord is a received log record with its resource's attributes.
type LogRecord struct {
	*logspb.LogRecord
	Resource map[string]string
}

// Attr is the record's attribute key as a string ("" when absent).
func (l LogRecord) Attr(key string) string { return attrString(l.Attributes, key) }

// Logs are every log record received, in order.
func (c *Collector) Logs() []LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []LogRecord
	for _, r := range c.logs {
		for _, rl := range r.ResourceLogs {
			res := attrMap(rl.GetResource().GetAttributes())
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					out = append(out, LogRecord{LogRecord: lr, Resource: res})
				}
			}
		}
	}
	return out
}

// Metrics are every metric received, by name (the last export's).
func (c *Collector) Metrics() map[string]*metricspb.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*metricspb.Metric{}
	for _, r := range c.metrics {
		for _, rm := range r.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out[m.Name] = m
				}
			}
		}
	}
	return out
}

// Received is how many bytes a Discard collector was sent.
func (c *Collector) Received() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.received
}

// Raw is every byte received (each request's encoded body).
func (c *Collector) Raw() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.raw...)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = valueString(kv.Value)
	}
	return m
}

func attrString(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return valueString(kv.Value)
		}
	}
	return ""
}

// valueString is an attribute value as text: a string as is, others in
// protobuf text form.
func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case nil:
		return ""
	default:
		return v.String()
	}
}
